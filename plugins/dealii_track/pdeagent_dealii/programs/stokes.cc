// pdeagent deal.II calibration program: Stokes (Laplacian form).
//
//   -nu laplace(u) + grad(p) = f,   div(u) = 0        in the domain
//   u = g                           on `velocity` Dirichlet parts
//   nu du/dn - p n = g              on `traction` Neumann parts (vector g)
//   nu du/dn - p n = -g n           on `pressure` parts (Dirichlet or Neumann entry, scalar g)
//   nu du/dn - p n = 0              on boundary parts not named
//
// The same boundary-value problem as the DOLFINx track's solvers/stokes.py: weak form
//   (grad u, grad(nu v)) - (p, div v) - (q, div u) = (f, v) + natural terms
// (exact for a variable viscosity nu(x) too: grad(nu v) = nu grad v + v (x) grad nu).
// Taylor-Hood elements FESystem(FE_Q(k)^dim, FE_Q(k-1)) with k = PDEAGENT_DEGREE (the
// velocity degree; the DOLFINx setting `degree` is the pressure degree k-1), MappingQ(k)
// so that curved boundaries are curved, mesh size longest-bbox-side / PDEAGENT_RESOLUTION
// (meshing.h), sparse direct solve (UMFPACK).
//
// Pressure null space (velocity prescribed on the whole boundary), as in DOLFINx:
// (1) the pressure rows of the load vector are shifted to sum to zero (projection onto
// the range of the singular operator; removes the small incompatibility of the
// interpolated boundary flux), (2) one pressure DoF is pinned to zero, (3) the pressure
// is shifted to zero mean after the solve.  The velocity then does not depend on the
// pinned DoF.
//
// Where two velocity conditions share DoFs (corners), the later entry of bc.dirichlet
// wins, as with DOLFINx's set_bc (deal.II's constraints keep the first one, so the
// entries are applied in reverse order).
//
// Output: velocity components u_x, u_y (, u_z), `*_magnitude` = |u|, `p` / `pressure`
// (zero mean when the pressure is fixed only up to a constant), NaN outside the mesh.
//
// pdeagent-calibration: {"resolution": 24, "degree": 2}
// pdeagent-reference: {"resolution": 64, "degree": 3}
#ifndef PDEAGENT_RESOLUTION
#  define PDEAGENT_RESOLUTION 24
#endif
#ifndef PDEAGENT_DEGREE
#  define PDEAGENT_DEGREE 2
#endif

#include <deal.II/base/auto_derivative_function.h>
#include <deal.II/base/bounding_box.h>
#include <deal.II/base/geometry_info.h>
#include <deal.II/base/function_parser.h>
#include <deal.II/base/quadrature_lib.h>
#include <deal.II/dofs/dof_handler.h>
#include <deal.II/dofs/dof_tools.h>
#include <deal.II/fe/fe_q.h>
#include <deal.II/fe/fe_system.h>
#include <deal.II/fe/fe_values.h>
#include <deal.II/fe/fe_values_extractors.h>
#include <deal.II/fe/mapping_q.h>
#include <deal.II/grid/manifold.h>
#include <deal.II/grid/tria.h>
#include <deal.II/lac/affine_constraints.h>
#include <deal.II/lac/dynamic_sparsity_pattern.h>
#include <deal.II/lac/sparse_direct.h>
#include <deal.II/lac/sparse_matrix.h>
#include <deal.II/lac/vector.h>
#include <deal.II/numerics/matrix_tools.h>
#include <deal.II/numerics/vector_tools.h>

#include <nlohmann/json.hpp>

#include "common.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

using namespace dealii;
using json = nlohmann::json;

namespace
{
  using namespace pdeagent;

  // Wall-clock seconds of the program's phases (solver_info.seconds).
  struct Clock
  {
    std::chrono::steady_clock::time_point last;
    json laps = json::object();
    explicit Clock(const std::chrono::steady_clock::time_point &start)
      : last(start)
    {}
    void lap(const std::string &name)
    {
      const auto now = std::chrono::steady_clock::now();
      laps[name] = std::chrono::duration<double>(now - last).count();
      last = now;
    }
  };

  // The star's exact outline r(theta) = r0 (1 + amplitude cos(n theta)) around its
  // centre as a chart (theta, s) -> centre + s r(theta) (cos theta, sin theta): boundary
  // vertices have s = 1, so new points on boundary faces (MappingQ support points) lie
  // on the outline.  meshing.h attaches no manifold to the star (its faces stay
  // straight); DOLFINx meshes it with second-order geometry.
  class StarManifold : public ChartManifold<2, 2, 2>
  {
  public:
    StarManifold(const Point<2> &centre, const double r0, const double amplitude, const int n)
      : ChartManifold<2, 2, 2>(Tensor<1, 2>({2.0 * numbers::PI, 0.0}))
      , centre(centre)
      , r0(r0)
      , amplitude(amplitude)
      , n(n)
    {}

    std::unique_ptr<Manifold<2, 2>> clone() const override
    {
      return std::make_unique<StarManifold>(centre, r0, amplitude, n);
    }

    Point<2> pull_back(const Point<2> &x) const override
    {
      const Tensor<1, 2> d = x - centre;
      const double theta = std::atan2(d[1], d[0]);
      return Point<2>(theta, d.norm() / radius(theta));
    }

    Point<2> push_forward(const Point<2> &chart) const override
    {
      const double r = chart[1] * radius(chart[0]);
      return centre + Point<2>(r * std::cos(chart[0]), r * std::sin(chart[0]));
    }

  private:
    double radius(const double theta) const
    {
      return r0 * (1.0 + amplitude * std::cos(n * theta));
    }

    Point<2> centre;
    double r0, amplitude;
    int n;
  };

  template <int dim>
  void attach_star_manifold(const json &domain, Triangulation<dim> &tria)
  {
    if constexpr (dim == 2)
      {
        if (domain["type"] != "star")
          return;
        const json p = meshing_detail::merged_params("star", domain);
        const auto c = p["center"].get<std::vector<double>>();
        const types::manifold_id id = 100;
        for (const auto &cell : tria.active_cell_iterators())
          for (const auto &face : cell->face_iterators())
            if (face->at_boundary())
              face->set_manifold_id(id);
        tria.set_manifold(id, StarManifold(Point<2>(c[0], c[1]), p["r0"].get<double>(),
                                           p["amplitude"].get<double>(),
                                           p["n_points"].get<int>()));
      }
  }

  std::string quantity_of(const json &entry, const std::string &fallback)
  {
    if (entry.contains("quantity") && entry["quantity"].is_string())
      return entry["quantity"].get<std::string>();
    return fallback;
  }

  template <int dim>
  void check_vector(const json &value, const std::string &what)
  {
    if (!value.is_array() || value.size() != dim)
      throw std::runtime_error(what + " must be a list of " + std::to_string(dim) +
                               " component expressions, got " + value.dump());
  }

  // Natural boundary data by boundary id: sum of the traction vectors and of the
  // pressure values (-g n) named on that id.
  template <int dim>
  struct NaturalData
  {
    std::map<types::boundary_id, std::vector<std::unique_ptr<FunctionParser<dim>>>> traction,
      pressure;

    bool on(const types::boundary_id id) const
    {
      return traction.count(id) > 0 || pressure.count(id) > 0;
    }
  };

  // All FE components at every evaluation-grid point (result[c][n], n as in
  // pdeagent::grid_points; NaN outside the mesh), like pdeagent::sample but by a sweep
  // over the cells: the grid points inside a cell's mapped bounding box are pulled back
  // with the mapping and kept when inside the reference cell.  pdeagent::sample (one
  // FEFieldFunction search per point) costs seconds on domains with many grid points
  // outside the mesh (annulus: ~9 s of an otherwise 1 s run).
  template <int dim>
  std::vector<std::vector<double>> sample_cells(const Mapping<dim> &mapping,
                                                const DoFHandler<dim> &dofs,
                                                const Vector<double> &w, const json &grid)
  {
    const std::vector<double> box = grid["bbox"].get<std::vector<double>>();
    unsigned int count[3] = {grid["nx"].get<unsigned int>(), grid["ny"].get<unsigned int>(), 1};
    if (dim == 3)
      count[2] = grid["nz"].get<unsigned int>();
    const auto points = grid_points<dim>(grid);
    const unsigned int n_components = dofs.get_fe().n_components();
    std::vector<std::vector<double>> values(
      n_components, std::vector<double>(points.size(), std::numeric_limits<double>::quiet_NaN()));
    std::vector<bool> done(points.size(), false);
    for (const auto &cell : dofs.active_cell_iterators())
      {
        const BoundingBox<dim> bb = mapping.get_bounding_box(cell);
        int lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
        bool empty = false;
        for (unsigned int d = 0; d < dim; ++d)
          {
            const double a = box[2 * d], b = box[2 * d + 1];
            const double step = count[d] > 1 ? (b - a) / (count[d] - 1) : 1.0;
            const double pad = 1e-8 * (bb.get_boundary_points().second[d] -
                                       bb.get_boundary_points().first[d]) + 1e-12;
            lo[d] = std::max(0, int(std::ceil((bb.get_boundary_points().first[d] - pad - a) / step)));
            hi[d] = std::min(int(count[d]) - 1,
                             int(std::floor((bb.get_boundary_points().second[d] + pad - a) / step)));
            empty = empty || lo[d] > hi[d];
          }
        if (empty)
          continue;
        std::vector<Point<dim>> unit;
        std::vector<std::size_t> index;
        for (int k = lo[2]; k <= hi[2]; ++k)
          for (int j = lo[1]; j <= hi[1]; ++j)
            for (int i = lo[0]; i <= hi[0]; ++i)
              {
                const std::size_t n = (std::size_t(k) * count[1] + j) * count[0] + i;
                if (done[n])
                  continue;
                try
                  {
                    const Point<dim> xi = mapping.transform_real_to_unit_cell(cell, points[n]);
                    if (GeometryInfo<dim>::is_inside_unit_cell(xi, 1e-10))
                      {
                        unit.push_back(GeometryInfo<dim>::project_to_unit_cell(xi));
                        index.push_back(n);
                        done[n] = true;
                      }
                  }
                catch (const typename Mapping<dim>::ExcTransformationFailed &)
                  {
                    // far outside this cell
                  }
              }
        if (unit.empty())
          continue;
        FEValues<dim> fe_values(mapping, dofs.get_fe(), Quadrature<dim>(unit), update_values);
        fe_values.reinit(cell);
        std::vector<Vector<double>> at(unit.size(), Vector<double>(n_components));
        fe_values.get_function_values(w, at);
        for (std::size_t m = 0; m < unit.size(); ++m)
          for (unsigned int c = 0; c < n_components; ++c)
            values[c][index[m]] = at[m][c];
      }
    return values;
  }

  // The output arrays the case names (SPEC §output), from the FE solution (velocity
  // components 0..dim-1, pressure component dim).
  template <int dim>
  void write_output(const std::string &outdir, const json &spec, const Mapping<dim> &mapping,
                    const DoFHandler<dim> &dofs, const Vector<double> &w)
  {
    const json &output = spec["output"];
    std::vector<std::string> names;
    if (output.contains("components") && output["components"].is_array() &&
        !output["components"].empty())
      for (const auto &name : output["components"])
        names.push_back(name.get<std::string>());
    else
      names.push_back(output["field"].get<std::string>());
    const auto values = sample_cells(mapping, dofs, w, spec["eval_grid"]);
    const std::vector<std::string> velocity_names = {"u_x", "u_y", "u_z"};
    for (const auto &name : names)
      {
        std::vector<double> array;
        const std::string suffix = "_magnitude";
        bool found = false;
        for (unsigned int c = 0; c < dim; ++c)
          if (name == velocity_names[c])
            array = values[c], found = true;
        if (name == "p" || name == "pressure")
          array = values[dim], found = true;
        else if (name.size() > suffix.size() &&
                 name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
          {
            array.assign(values[0].size(), 0.0);
            for (std::size_t n = 0; n < array.size(); ++n)
              {
                double sum = 0;
                for (unsigned int c = 0; c < dim; ++c)
                  sum += values[c][n] * values[c][n];
                array[n] = std::sqrt(sum); // NaN stays NaN
              }
            found = true;
          }
        if (!found)
          throw std::runtime_error("stokes cannot produce the output array '" + name +
                                   "' (u_x, u_y[, u_z], p, pressure, *_magnitude)");
        write_grid(names.size() == 1 ? outdir + "/solution_grid.bin" :
                                       outdir + "/solution_grid_" + name + ".bin",
                   array);
      }
  }

  template <int dim>
  int run(const json &spec, const std::string &outdir)
  {
    const auto start = std::chrono::steady_clock::now();
    const json &mp = spec["muparser"];
    const json &pde = spec["pde"];
    const json &bc = spec["bc"];
    if (is_transient(spec))
      throw std::runtime_error("stokes is steady: pde.time must not be given");
    if (bc.contains("periodic") && !bc["periodic"].is_null() && !bc["periodic"].empty())
      throw std::runtime_error("periodic boundary conditions are not supported for stokes");
    if (bc.contains("robin") && !bc["robin"].is_null() && !bc["robin"].empty())
      throw std::runtime_error("Robin conditions are not defined for incompressible flow");

    // nu: a number, or an expression of the coordinates (muparser copy); its gradient
    // (for grad(nu v)) by fourth-order differences.
    if (!pde.contains("params") || !pde["params"].contains("nu"))
      throw std::runtime_error("case_spec.pde.params has no 'nu'");
    const json &nu_value = pde["params"]["nu"];
    const bool nu_constant = nu_value.is_number();
    if (!nu_constant && !mp["pde"]["params"].contains("nu"))
      throw std::runtime_error("pde.params.nu must be a number or an expression of the "
                               "coordinates, got " + nu_value.dump());
    FunctionParser<dim> nu_field(1, 0.0, 1e-5);
    parse(nu_field, nu_constant ? nu_value : mp["pde"]["params"]["nu"]);
    nu_field.set_formula(AutoDerivativeFunction<dim>::FourthOrder);

    // f: a list of dim expressions; no forcing = 0; any other entry is an error.
    const json &forcing = pde.contains("forcing") && !pde["forcing"].is_null() ? pde["forcing"] :
                                                                                 json::object();
    for (const auto &item : forcing.items())
      if (item.key() != "f")
        throw std::runtime_error("unsupported forcing entry '" + item.key() +
                                 "': only 'f' is defined for stokes");
    const bool has_f = forcing.contains("f") && !forcing["f"].is_null();
    FunctionParser<dim> f(dim);
    if (has_f)
      {
        check_vector<dim>(mp["pde"]["forcing"]["f"], "forcing f");
        parse_vector(f, mp["pde"]["forcing"]["f"]);
      }

    Clock clock(start);
    Triangulation<dim> tria;
    std::vector<std::string> tags;
    const double h = mesh_size(spec["domain"], PDEAGENT_RESOLUTION);
    build_mesh(spec["domain"], h, tria, tags);
    attach_star_manifold(spec["domain"], tria);

    const unsigned int degree = PDEAGENT_DEGREE;
    if (degree < 2)
      throw std::runtime_error("Taylor-Hood needs velocity degree >= 2");
    FESystem<dim> fe(FE_Q<dim>(degree), dim, FE_Q<dim>(degree - 1), 1);
    MappingQ<dim> mapping(degree);
    DoFHandler<dim> dofs(tria);
    dofs.distribute_dofs(fe);
    clock.lap("mesh");
    const FEValuesExtractors::Vector velocities(0);
    const FEValuesExtractors::Scalar pressure(dim);

    // Boundary conditions: velocity Dirichlet entries (constraints), natural terms.
    json velocity_spec = spec; // bc.dirichlet reduced to the velocity entries, reversed
    velocity_spec["bc"]["dirichlet"] = json::array();
    velocity_spec["muparser"]["bc"]["dirichlet"] = json::array();
    std::set<types::boundary_id> velocity_ids;
    NaturalData<dim> natural;
    auto add_pressure = [&](const json &entry, const json &value) {
      if (value.is_array())
        throw std::runtime_error("pressure data must be a scalar expression");
      for (const auto id : boundary_ids(tags, entry["boundary"]))
        {
          auto g = std::make_unique<FunctionParser<dim>>(1);
          parse(*g, value);
          natural.pressure[id].push_back(std::move(g));
        }
    };
    const json dirichlet = bc.contains("dirichlet") && !bc["dirichlet"].is_null() ?
                             bc["dirichlet"] :
                             json::array();
    const json neumann =
      bc.contains("neumann") && !bc["neumann"].is_null() ? bc["neumann"] : json::array();
    for (std::size_t c = dirichlet.size(); c-- > 0;)
      {
        const json &entry = dirichlet[c];
        const json &value = mp["bc"]["dirichlet"][c]["value"];
        const std::string q = quantity_of(entry, "velocity");
        if (q == "velocity")
          {
            check_vector<dim>(value, "velocity data");
            velocity_spec["bc"]["dirichlet"].push_back(entry);
            json mirrored = json::object();
            mirrored["value"] = value;
            velocity_spec["muparser"]["bc"]["dirichlet"].push_back(mirrored);
            for (const auto id : boundary_ids(tags, entry["boundary"]))
              velocity_ids.insert(id);
          }
        else if (q == "pressure")
          add_pressure(entry, value);
        else
          throw std::runtime_error("Dirichlet quantity '" + q +
                                   "' is not defined for stokes (velocity, pressure)");
      }
    for (std::size_t c = 0; c < neumann.size(); ++c)
      {
        const json &entry = neumann[c];
        const json &value = mp["bc"]["neumann"][c]["value"];
        const std::string q = quantity_of(entry, "");
        if (q == "traction")
          {
            check_vector<dim>(value, "traction data");
            for (const auto id : boundary_ids(tags, entry["boundary"]))
              {
                auto g = std::make_unique<FunctionParser<dim>>(dim);
                parse_vector(*g, value);
                natural.traction[id].push_back(std::move(g));
              }
          }
        else if (q == "pressure")
          add_pressure(entry, value);
        else
          throw std::runtime_error("Neumann quantity '" + q +
                                   "' is not defined for stokes (traction, pressure)");
      }
    bool enclosed = true; // velocity prescribed on every boundary face
    for (const auto &cell : tria.active_cell_iterators())
      for (const auto &face : cell->face_iterators())
        if (face->at_boundary() && velocity_ids.count(face->boundary_id()) == 0)
          enclosed = false;

    AffineConstraints<double> constraints;
    add_dirichlet(mapping, dofs, tags, velocity_spec, constraints, 0.0,
                  fe.component_mask(velocities));
    constraints.close();

    DynamicSparsityPattern dsp(dofs.n_dofs());
    DoFTools::make_sparsity_pattern(dofs, dsp, constraints, false);
    SparsityPattern pattern;
    pattern.copy_from(dsp);
    SparseMatrix<double> A(pattern);
    Vector<double> w(dofs.n_dofs()), b(dofs.n_dofs());

    const QGauss<dim> quad(degree + 2);
    const QGauss<dim - 1> face_quad(degree + 2);
    FEValues<dim> fv(mapping, fe, quad,
                     update_values | update_gradients | update_quadrature_points |
                       update_JxW_values);
    FEFaceValues<dim> ffv(mapping, fe, face_quad,
                          update_values | update_quadrature_points | update_normal_vectors |
                            update_JxW_values);
    const unsigned int n = fe.n_dofs_per_cell();
    FullMatrix<double> Ac(n, n);
    Vector<double> bc_local(n);
    std::vector<types::global_dof_index> ids(n);
    std::vector<Tensor<1, dim>> phi_u(n);
    std::vector<Tensor<2, dim>> grad_phi_u(n);
    std::vector<double> div_phi_u(n), phi_p(n);
    Vector<double> fq(dim);
    const double nu_number = nu_constant ? nu_value.get<double>() : 0.0;
    for (const auto &cell : dofs.active_cell_iterators())
      {
        fv.reinit(cell);
        Ac = 0;
        bc_local = 0;
        for (unsigned int q = 0; q < quad.size(); ++q)
          {
            const Point<dim> &x = fv.quadrature_point(q);
            const double nu = nu_constant ? nu_number : nu_field.value(x);
            const Tensor<1, dim> grad_nu =
              nu_constant ? Tensor<1, dim>() : nu_field.gradient(x);
            Tensor<1, dim> fx;
            if (has_f)
              {
                f.vector_value(x, fq);
                for (unsigned int d = 0; d < dim; ++d)
                  fx[d] = fq[d];
              }
            for (unsigned int k = 0; k < n; ++k)
              {
                phi_u[k] = fv[velocities].value(k, q);
                grad_phi_u[k] = fv[velocities].gradient(k, q);
                div_phi_u[k] = fv[velocities].divergence(k, q);
                phi_p[k] = fv[pressure].value(k, q);
              }
            const double JxW = fv.JxW(q);
            for (unsigned int i = 0; i < n; ++i)
              {
                for (unsigned int j = 0; j < n; ++j)
                  Ac(i, j) += (nu * scalar_product(grad_phi_u[j], grad_phi_u[i]) +
                               (grad_phi_u[j] * grad_nu) * phi_u[i] -
                               div_phi_u[i] * phi_p[j] - phi_p[i] * div_phi_u[j]) *
                              JxW;
                bc_local(i) += fx * phi_u[i] * JxW;
              }
          }
        for (const auto &face : cell->face_iterators())
          {
            if (!face->at_boundary() || !natural.on(face->boundary_id()))
              continue;
            const auto id = face->boundary_id();
            ffv.reinit(cell, face);
            Vector<double> gq(dim);
            for (unsigned int q = 0; q < face_quad.size(); ++q)
              {
                const Point<dim> &x = ffv.quadrature_point(q);
                Tensor<1, dim> g;
                if (natural.traction.count(id))
                  for (const auto &t : natural.traction.at(id))
                    {
                      t->vector_value(x, gq);
                      for (unsigned int d = 0; d < dim; ++d)
                        g[d] += gq[d];
                    }
                if (natural.pressure.count(id))
                  for (const auto &p : natural.pressure.at(id))
                    g -= p->value(x) * ffv.normal_vector(q);
                for (unsigned int i = 0; i < n; ++i)
                  bc_local(i) += g * ffv[velocities].value(i, q) * ffv.JxW(q);
              }
          }
        cell->get_dof_indices(ids);
        constraints.distribute_local_to_global(Ac, bc_local, ids, A, b);
      }

    clock.lap("assemble");
    const IndexSet pressure_dofs = DoFTools::extract_dofs(dofs, fe.component_mask(pressure));
    double shift = 0.0;
    if (enclosed)
      {
        // (1) range projection: the pressure rows of b sum to zero.
        double sum = 0;
        for (const auto i : pressure_dofs)
          sum += b[i];
        const double mean = sum / pressure_dofs.n_elements();
        for (const auto i : pressure_dofs)
          b[i] -= mean;
        // (2) pin the first pressure DoF to zero (row and column eliminated).
        std::map<types::global_dof_index, double> pin = {{*pressure_dofs.begin(), 0.0}};
        MatrixTools::apply_boundary_values(pin, A, w, b, true);
      }

    SparseDirectUMFPACK solver;
    solver.initialize(A);
    solver.vmult(w, b);
    constraints.distribute(w);
    for (const auto value : w)
      if (!std::isfinite(value))
        throw std::runtime_error("Stokes solve produced non-finite values");

    if (enclosed)
      {
        // (3) zero-mean pressure (Q(k-1) is a partition of unity: a uniform DoF shift).
        double integral = 0, area = 0;
        FEValues<dim> fm(mapping, fe, quad, update_values | update_JxW_values);
        std::vector<double> pq(quad.size());
        for (const auto &cell : dofs.active_cell_iterators())
          {
            fm.reinit(cell);
            fm[pressure].get_function_values(w, pq);
            for (unsigned int q = 0; q < quad.size(); ++q)
              integral += pq[q] * fm.JxW(q), area += fm.JxW(q);
          }
        shift = integral / area;
        for (const auto i : pressure_dofs)
          w[i] -= shift;
      }

    clock.lap("solve");
    write_output(outdir, spec, mapping, dofs, w);
    clock.lap("output");
    write_meta(outdir, start,
               {{"mesh_resolution", PDEAGENT_RESOLUTION},
                {"mesh_cells", tria.n_active_cells()},
                {"element_degree", degree},
                {"velocity_degree", degree},
                {"pressure_degree", degree - 1},
                {"element", "Taylor-Hood Q" + std::to_string(degree) + "-Q" +
                              std::to_string(degree - 1)},
                {"mapping_degree", degree},
                {"num_dofs", dofs.n_dofs()},
                {"num_pressure_dofs", pressure_dofs.n_elements()},
                {"ksp_type", "preonly"},
                {"pc_type", "lu"},
                {"linear_solver", "SparseDirectUMFPACK"},
                {"pressure_null_space",
                 enclosed ? "range projection + pinned dof + zero-mean shift" : "none"},
                {"pressure_shift", shift},
                {"seconds", clock.laps}});
    return 0;
  }
} // namespace

int main(int argc, char **argv)
{
  return pdeagent::main_program("stokes", argc, argv, run<2>, run<3>);
}
