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
// (zero mean when the pressure is fixed only up to a constant), and with
// `output.pressure` also the pressure as array `output.pressure.array` (zero mean, i.e.
// the case's normalization "zero_mean", exactly when the velocity is prescribed on the
// whole boundary; as the boundary conditions fix it otherwise), NaN outside the mesh.
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
    json velocity_spec = spec; // bc.dirichlet reduced to the velocity entries
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
    for (std::size_t c = 0; c < dirichlet.size(); ++c)
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
    write_solution(outdir, spec, mapping, dofs, w, dim);
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
