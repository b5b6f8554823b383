// pdeagent deal.II calibration program: Poisson.
//
//   -div(kappa grad u) = f          in the domain
//   u = g                           on Dirichlet parts
//   kappa du/dn = g                 on Neumann parts
//   kappa du/dn + alpha u = g       on Robin parts
//   u periodic                      across periodic pairs
//
// Q_p elements (PDEAGENT_DEGREE) on a quadrilateral / hexahedral mesh of size
// longest-bbox-side / PDEAGENT_RESOLUTION (meshing.h), MappingQ_p so curved
// boundaries are curved, CG + SSOR. The solution is sampled on the evaluation grid
// (NaN outside the domain) into solution_grid.bin; meta.json reports the settings.
//
// pdeagent-calibration: {"resolution": 32, "degree": 2}
// pdeagent-reference: {"resolution": 96, "degree": 3, "tolerance": 1e-14}
#ifndef PDEAGENT_RESOLUTION
#  define PDEAGENT_RESOLUTION 32
#endif
#ifndef PDEAGENT_DEGREE
#  define PDEAGENT_DEGREE 2
#endif
#ifndef PDEAGENT_TOLERANCE
#  define PDEAGENT_TOLERANCE 1e-12
#endif

#include <deal.II/base/function_parser.h>
#include <deal.II/base/quadrature_lib.h>
#include <deal.II/dofs/dof_handler.h>
#include <deal.II/dofs/dof_tools.h>
#include <deal.II/fe/fe_q.h>
#include <deal.II/fe/fe_values.h>
#include <deal.II/fe/mapping_q.h>
#include <deal.II/grid/tria.h>
#include <deal.II/lac/affine_constraints.h>
#include <deal.II/lac/dynamic_sparsity_pattern.h>
#include <deal.II/lac/precondition.h>
#include <deal.II/lac/solver_cg.h>
#include <deal.II/lac/sparse_matrix.h>
#include <deal.II/lac/vector.h>
#include <deal.II/numerics/vector_tools.h>

#include <nlohmann/json.hpp>

#include "common.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace dealii;
using json = nlohmann::json;

namespace
{
  using namespace pdeagent;

  template <int dim>
  int run(const json &spec, const std::string &outdir)
  {
    const auto start = std::chrono::steady_clock::now();
    const json &mp = spec["muparser"];
    // kappa: a number, or an expression of the coordinates (muparser copy).
    const json &kappa_value = spec["pde"]["params"]["kappa"];
    FunctionParser<dim> kappa_field(1);
    parse(kappa_field, kappa_value.is_number() ? kappa_value : mp["pde"]["params"]["kappa"]);

    Triangulation<dim> tria;
    std::vector<std::string> tags;
    const double h = mesh_size(spec["domain"], PDEAGENT_RESOLUTION);
    build_mesh(spec["domain"], h, tria, tags);

    const unsigned int degree = PDEAGENT_DEGREE;
    FE_Q<dim> fe(degree);
    MappingQ<dim> mapping(degree);
    DoFHandler<dim> dofs(tria);
    dofs.distribute_dofs(fe);

    FunctionParser<dim> f(1);
    parse(f, mp["pde"]["forcing"]["f"]);

    AffineConstraints<double> constraints;
    add_periodic(dofs, tags, spec, constraints);
    add_dirichlet(mapping, dofs, tags, spec, constraints);
    constraints.close();
    BoundaryData<dim> data(tags, spec);

    DynamicSparsityPattern dsp(dofs.n_dofs());
    DoFTools::make_sparsity_pattern(dofs, dsp, constraints, false);
    SparsityPattern pattern;
    pattern.copy_from(dsp);
    SparseMatrix<double> A(pattern);
    Vector<double> u(dofs.n_dofs()), b(dofs.n_dofs());

    const QGauss<dim> quad(degree + 1);
    const QGauss<dim - 1> face_quad(degree + 1);
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
            const double fq = f.value(fv.quadrature_point(q));
            const double kappa = kappa_field.value(fv.quadrature_point(q));
            for (unsigned int i = 0; i < n; ++i)
              {
                for (unsigned int j = 0; j < n; ++j)
                  Ac(i, j) += kappa * fv.shape_grad(i, q) * fv.shape_grad(j, q) * fv.JxW(q);
                bc_local(i) += fq * fv.shape_value(i, q) * fv.JxW(q);
              }
          }
        for (const auto &face : cell->face_iterators())
          {
            if (!face->at_boundary())
              continue;
            const auto id = face->boundary_id();
            const bool is_flux = data.has_flux(id), is_robin = data.has_robin(id);
            if (!is_flux && !is_robin)
              continue;
            ffv.reinit(cell, face);
            for (unsigned int q = 0; q < face_quad.size(); ++q)
              {
                const Point<dim> &x = ffv.quadrature_point(q);
                const double g = (is_flux ? data.flux(id, x) : 0.0) +
                                 (is_robin ? data.robin_value(id, x) : 0.0);
                const double alpha = is_robin ? data.robin_alpha(id, x) : 0.0;
                for (unsigned int i = 0; i < n; ++i)
                  {
                    bc_local(i) += g * ffv.shape_value(i, q) * ffv.JxW(q);
                    if (is_robin)
                      for (unsigned int j = 0; j < n; ++j)
                        Ac(i, j) +=
                          alpha * ffv.shape_value(i, q) * ffv.shape_value(j, q) * ffv.JxW(q);
                  }
              }
          }
        cell->get_dof_indices(ids);
        constraints.distribute_local_to_global(Ac, bc_local, ids, A, b);
      }

    SolverControl control(20000, PDEAGENT_TOLERANCE * b.l2_norm());
    SolverCG<Vector<double>> cg(control);
    PreconditionSSOR<SparseMatrix<double>> ssor;
    ssor.initialize(A, 1.2);
    cg.solve(A, u, b, ssor);
    constraints.distribute(u);

    write_solution(outdir, spec, mapping, dofs, u);
    write_meta(outdir, start,
               {{"mesh_resolution", PDEAGENT_RESOLUTION},
                {"mesh_cells", tria.n_active_cells()},
                {"element_degree", degree},
                {"num_dofs", dofs.n_dofs()},
                {"linear_iterations", control.last_step()},
                {"ksp_type", "cg"},
                {"pc_type", "ssor"}});
    return 0;
  }
} // namespace

int main(int argc, char **argv)
{
  return pdeagent::main_program("poisson", argc, argv, run<2>, run<3>);
}
