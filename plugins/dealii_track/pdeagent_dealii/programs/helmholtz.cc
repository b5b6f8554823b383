// pdeagent deal.II calibration program: Helmholtz (real-valued).
//
//   -laplace(u) - k^2 u = f          in the domain
//   u = g                            on Dirichlet parts
//   du/dn = g                        on Neumann parts
//   du/dn + alpha u = g              on Robin parts
//   u periodic                       across periodic pairs
//   du/dn = 0                        on boundary parts no condition names
//
// k is a number or an expression of the coordinates (pde.params.k).  Same problem and
// resolution rule as the DOLFINx track's solvers/helmholtz.py: with k_max the largest
// |k| over the domain's bounds (sampled on 101 (2-D) / 31 (3-D) points per axis), L the
// longest side of the bounds and p the degree, n_waves = k_max L / (2 pi) and the mesh
// has at least ceil(ppw * max(1, n_waves)^(1/(2p)) * n_waves / p) cells across L
// (ppw = PDEAGENT_POINTS_PER_WAVELENGTH), and never fewer than PDEAGENT_RESOLUTION.
// Neumann and Robin entries add up like the DOLFINx forms (several entries on one part
// are summed).  Q_p elements on a quadrilateral / hexahedral mesh (meshing.h),
// MappingQ_p so curved boundaries are curved; the symmetric indefinite system is solved
// with SparseDirectUMFPACK.  The solution is sampled on the evaluation grid (NaN
// outside the domain) into solution_grid.bin; meta.json reports the settings.
//
// Unsupported input fails loudly (exit 1): pde.time given, forcing entries other than
// f, a Dirichlet / Neumann / Robin quantity other than u, an output other than u.
//
// pdeagent-calibration: {"resolution": 32, "degree": 2, "points_per_wavelength": 30}
// pdeagent-reference: {"resolution": 96, "degree": 3, "points_per_wavelength": 60}
#ifndef PDEAGENT_RESOLUTION
#  define PDEAGENT_RESOLUTION 32
#endif
#ifndef PDEAGENT_DEGREE
#  define PDEAGENT_DEGREE 2
#endif
#ifndef PDEAGENT_POINTS_PER_WAVELENGTH
#  define PDEAGENT_POINTS_PER_WAVELENGTH 30
#endif

#include <deal.II/base/function_parser.h>
#include <deal.II/base/quadrature_lib.h>
#include <deal.II/dofs/dof_handler.h>
#include <deal.II/dofs/dof_tools.h>
#include <deal.II/fe/fe_q.h>
#include <deal.II/fe/fe_values.h>
#include <deal.II/fe/mapping_q.h>
#include <deal.II/grid/manifold.h>
#include <deal.II/grid/tria.h>
#include <deal.II/lac/affine_constraints.h>
#include <deal.II/lac/dynamic_sparsity_pattern.h>
#include <deal.II/lac/sparse_direct.h>
#include <deal.II/lac/sparse_matrix.h>
#include <deal.II/lac/vector.h>
#include <deal.II/numerics/vector_tools.h>

#include <nlohmann/json.hpp>

#include "common.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace dealii;
using json = nlohmann::json;

namespace
{
  using namespace pdeagent;

  // The quantity of a boundary condition must be absent (null) or "u".
  void check_quantity(const json &bc, const char *kind)
  {
    if (!bc.contains(kind) || bc[kind].is_null())
      return;
    for (const auto &entry : bc[kind])
      if (entry.contains("quantity") && !entry["quantity"].is_null() &&
          entry["quantity"] != "u")
        throw std::runtime_error(std::string(kind) + " quantity " +
                                 entry["quantity"].dump() +
                                 " is not defined (only u is)");
  }

  // The output must be the scalar u (as the DOLFINx solver: any other name is an error).
  void check_output(const json &output)
  {
    if (output.contains("components") && output["components"].is_array() &&
        !output["components"].empty())
      throw std::runtime_error("the solution is the scalar u; output.components " +
                               output["components"].dump() + " cannot be produced");
    if (output["field"] != "u")
      throw std::runtime_error("cannot produce output field " +
                               output["field"].dump() + " (only u)");
  }

  // Cells across the longest side of the bounds needed by the wavelength rule.
  int wavelength_resolution(const double k_max, const double length, const unsigned int p,
                            const double ppw)
  {
    const double n_waves = k_max * length / (2.0 * M_PI);
    if (!(n_waves > 0.0))
      return 1;
    const double points = ppw * std::pow(std::max(1.0, n_waves), 1.0 / (2.0 * p));
    return std::max(1, int(std::ceil(points * n_waves / p)));
  }

  double seconds_since(const std::chrono::steady_clock::time_point &t)
  {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }

  template <int dim>
  int run(const json &spec, const std::string &outdir)
  {
    const auto start = std::chrono::steady_clock::now();
    json timings;
    const json &mp = spec["muparser"];
    const json &pde = spec["pde"];
    if (is_transient(spec))
      throw std::runtime_error("the Helmholtz problem is steady: pde.time must not be given");
    if (!pde.contains("params") || !pde["params"].contains("k"))
      throw std::runtime_error("case_spec.pde.params has no 'k' (wave number)");
    const json &bc = spec["bc"];
    for (const char *kind : {"dirichlet", "neumann", "robin"})
      check_quantity(bc, kind);
    check_output(spec["output"]);

    // Source f: the forcing entry "f" (0 without forcing); other entries are undefined.
    json f_value = 0.0;
    for (const auto &item : mp["pde"]["forcing"].items())
      {
        if (item.key() != "f")
          throw std::runtime_error("forcing term '" + item.key() +
                                   "' is not defined (the equation has one source f)");
        f_value = item.value();
      }
    FunctionParser<dim> f(1);
    parse(f, f_value);

    // Wave number k (number or expression) and its maximum over the bounds.
    const json &k_plain = pde["params"]["k"];
    if (k_plain.is_boolean() || !(k_plain.is_number() || k_plain.is_string()))
      throw std::runtime_error("pde.params.k must be a number or an expression, got " +
                               k_plain.dump());
    FunctionParser<dim> k_field(1);
    parse(k_field, k_plain.is_number() ? k_plain : mp["pde"]["params"]["k"]);
    const json &bounds = spec["domain"]["bounds"];
    if (bounds.size() != dim)
      throw std::runtime_error("domain.bounds does not match the dimension");
    double length = 0;
    for (const auto &side : bounds)
      length = std::max(length, side[1].get<double>() - side[0].get<double>());
    double k_max = 0;
    if (k_plain.is_number())
      k_max = std::abs(k_plain.get<double>());
    else
      {
        const unsigned int n = dim == 2 ? 101 : 31;
        const unsigned int total = dim == 2 ? n * n : n * n * n;
        for (unsigned int m = 0; m < total; ++m)
          {
            Point<dim> x;
            unsigned int rest = m;
            for (unsigned int d = 0; d < dim; ++d)
              {
                const double lo = bounds[d][0], hi = bounds[d][1];
                x[d] = lo + (hi - lo) * (rest % n) / (n - 1);
                rest /= n;
              }
            const double value = k_field.value(x);
            if (!std::isfinite(value))
              throw std::runtime_error(
                "pde.params.k is not finite everywhere on the domain's bounding box");
            k_max = std::max(k_max, std::abs(value));
          }
      }
    if (!std::isfinite(k_max))
      throw std::runtime_error("pde.params.k is not finite");

    const unsigned int degree = PDEAGENT_DEGREE;
    const double ppw = PDEAGENT_POINTS_PER_WAVELENGTH;
    const int needed = wavelength_resolution(k_max, length, degree, ppw);
    const int resolution = std::max(int(PDEAGENT_RESOLUTION), needed);

    auto phase = std::chrono::steady_clock::now();
    Triangulation<dim> tria;
    std::vector<std::string> tags;
    build_mesh(spec["domain"], mesh_size(spec["domain"], resolution), tria, tags);
    timings["mesh"] = seconds_since(phase);
    phase = std::chrono::steady_clock::now();

    FE_Q<dim> fe(degree);
    MappingQ<dim> mapping(degree);
    DoFHandler<dim> dofs(tria);
    dofs.distribute_dofs(fe);

    AffineConstraints<double> constraints;
    add_periodic(dofs, tags, spec, constraints);
    add_dirichlet(mapping, dofs, tags, spec, constraints);
    constraints.close();

    // Neumann and Robin entries, summed like the DOLFINx forms.
    const BoundaryData<dim> natural(tags, spec);

    DynamicSparsityPattern dsp(dofs.n_dofs());
    DoFTools::make_sparsity_pattern(dofs, dsp, constraints, false);
    SparsityPattern pattern;
    pattern.copy_from(dsp);
    SparseMatrix<double> A(pattern);
    Vector<double> u(dofs.n_dofs()), b(dofs.n_dofs());

    const QGauss<dim> quad(degree + 2);
    const QGauss<dim - 1> face_quad(degree + 2);
    FEValues<dim> fv(mapping, fe, quad,
                     update_values | update_gradients | update_quadrature_points |
                       update_JxW_values);
    FEFaceValues<dim> ffv(mapping, fe, face_quad,
                          update_values | update_quadrature_points | update_JxW_values);
    const unsigned int n = fe.n_dofs_per_cell();
    FullMatrix<double> Ac(n, n);
    Vector<double> bc_local(n);
    std::vector<types::global_dof_index> ids(n);
    for (const auto &cell : dofs.active_cell_iterators())
      {
        fv.reinit(cell);
        Ac = 0;
        bc_local = 0;
        for (unsigned int q = 0; q < quad.size(); ++q)
          {
            const Point<dim> &x = fv.quadrature_point(q);
            const double fq = f.value(x);
            const double k = k_field.value(x);
            const double dx = fv.JxW(q);
            for (unsigned int i = 0; i < n; ++i)
              {
                for (unsigned int j = 0; j < n; ++j)
                  Ac(i, j) += (fv.shape_grad(i, q) * fv.shape_grad(j, q) -
                               k * k * fv.shape_value(i, q) * fv.shape_value(j, q)) *
                              dx;
                bc_local(i) += fq * fv.shape_value(i, q) * dx;
              }
          }
        for (const auto &face : cell->face_iterators())
          {
            if (!face->at_boundary())
              continue;
            const auto id = face->boundary_id();
            const bool flux = natural.has_flux(id), robin = natural.has_robin(id);
            if (!flux && !robin)
              continue;
            ffv.reinit(cell, face);
            for (unsigned int q = 0; q < face_quad.size(); ++q)
              {
                const Point<dim> &x = ffv.quadrature_point(q);
                const double g = natural.flux(id, x) + natural.robin_value(id, x);
                const double alpha = robin ? natural.robin_alpha(id, x) : 0.0;
                const double ds = ffv.JxW(q);
                for (unsigned int i = 0; i < n; ++i)
                  {
                    bc_local(i) += g * ffv.shape_value(i, q) * ds;
                    if (robin)
                      for (unsigned int j = 0; j < n; ++j)
                        Ac(i, j) += alpha * ffv.shape_value(i, q) * ffv.shape_value(j, q) * ds;
                  }
              }
          }
        cell->get_dof_indices(ids);
        constraints.distribute_local_to_global(Ac, bc_local, ids, A, b);
      }

    timings["assemble"] = seconds_since(phase);
    phase = std::chrono::steady_clock::now();
    SparseDirectUMFPACK direct;
    direct.initialize(A);
    direct.vmult(u, b);
    constraints.distribute(u);
    for (const double value : u)
      if (!std::isfinite(value))
        throw std::runtime_error("the discrete solution is not finite");

    timings["solve"] = seconds_since(phase);
    phase = std::chrono::steady_clock::now();
    write_solution(outdir, spec, mapping, dofs, u);
    timings["sample"] = seconds_since(phase);
    write_meta(outdir, start,
               {{"family", "helmholtz"},
                {"mesh_resolution", resolution},
                {"requested_resolution", PDEAGENT_RESOLUTION},
                {"mesh_cells", tria.n_active_cells()},
                {"element_degree", degree},
                {"k_max", k_max},
                {"points_per_wavelength", ppw},
                {"num_dofs", dofs.n_dofs()},
                {"linear_iterations", 1},
                {"ksp_type", "preonly"},
                {"pc_type", "lu"},
                {"solver", "SparseDirectUMFPACK"},
                {"phase_seconds", timings}});
    return 0;
  }
} // namespace

int main(int argc, char **argv)
{
  return pdeagent::main_program("helmholtz", argc, argv, run<2>, run<3>);
}
