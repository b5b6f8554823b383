// A minimal deal.II program following the pdeagent C++ contract: Poisson
// -div(kappa grad u) = f on the unit square or cube with Dirichlet data on the
// whole boundary, Q2 elements, CG + SSOR; samples the solution on the evaluation
// grid into solution_grid.bin and writes meta.json. Used by the track's tests
// (compile stage, adapters, convergence); argv[3] (optional) sets the refinement.
#include <deal.II/base/function_parser.h>
#include <deal.II/base/quadrature_lib.h>
#include <deal.II/dofs/dof_handler.h>
#include <deal.II/dofs/dof_tools.h>
#include <deal.II/fe/fe_q.h>
#include <deal.II/fe/fe_values.h>
#include <deal.II/grid/grid_generator.h>
#include <deal.II/grid/tria.h>
#include <deal.II/lac/affine_constraints.h>
#include <deal.II/lac/dynamic_sparsity_pattern.h>
#include <deal.II/lac/precondition.h>
#include <deal.II/lac/solver_cg.h>
#include <deal.II/lac/sparse_matrix.h>
#include <deal.II/lac/vector.h>
#include <deal.II/numerics/fe_field_function.h>
#include <deal.II/numerics/vector_tools.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace dealii;
using json = nlohmann::json;

template <int dim>
int run(const json &spec, const std::string &outdir, unsigned int refinement)
{
  const auto start = std::chrono::steady_clock::now();
  const std::string vars = dim == 2 ? "x,y" : "x,y,z";
  const json &mp = spec["muparser"];
  const double kappa = spec["pde"]["params"].value("kappa", 1.0);

  FunctionParser<dim> f(1), g(1);
  f.initialize(vars, mp["pde"]["forcing"]["f"].get<std::string>(), {});
  g.initialize(vars, mp["bc"]["dirichlet"][0]["value"].get<std::string>(), {});

  Triangulation<dim> tria;
  GridGenerator::hyper_cube(tria, 0.0, 1.0);
  tria.refine_global(refinement);
  FE_Q<dim> fe(2);
  DoFHandler<dim> dofs(tria);
  dofs.distribute_dofs(fe);

  AffineConstraints<double> constraints;
  VectorTools::interpolate_boundary_values(dofs, 0, g, constraints);
  constraints.close();
  DynamicSparsityPattern dsp(dofs.n_dofs());
  DoFTools::make_sparsity_pattern(dofs, dsp, constraints, false);
  SparsityPattern pattern;
  pattern.copy_from(dsp);
  SparseMatrix<double> A(pattern);
  Vector<double> u(dofs.n_dofs()), b(dofs.n_dofs());

  QGauss<dim> quad(3);
  FEValues<dim> fv(fe, quad, update_values | update_gradients | update_quadrature_points |
                                 update_JxW_values);
  const unsigned int n = fe.n_dofs_per_cell();
  FullMatrix<double> Ac(n, n);
  Vector<double> bc(n);
  std::vector<types::global_dof_index> ids(n);
  for (const auto &cell : dofs.active_cell_iterators())
    {
      fv.reinit(cell);
      Ac = 0;
      bc = 0;
      for (unsigned int q = 0; q < quad.size(); ++q)
        for (unsigned int i = 0; i < n; ++i)
          {
            for (unsigned int j = 0; j < n; ++j)
              Ac(i, j) += kappa * fv.shape_grad(i, q) * fv.shape_grad(j, q) * fv.JxW(q);
            bc(i) += f.value(fv.quadrature_point(q)) * fv.shape_value(i, q) * fv.JxW(q);
          }
      cell->get_dof_indices(ids);
      constraints.distribute_local_to_global(Ac, bc, ids, A, b);
    }
  SolverControl control(10000, 1e-12 * b.l2_norm());
  SolverCG<Vector<double>> cg(control);
  PreconditionSSOR<SparseMatrix<double>> ssor;
  ssor.initialize(A, 1.2);
  cg.solve(A, u, b, ssor);
  constraints.distribute(u);

  const json &grid = spec["eval_grid"];
  const std::vector<double> box = grid["bbox"].get<std::vector<double>>();
  const unsigned int nx = grid["nx"], ny = grid["ny"];
  const unsigned int nz = dim == 3 ? grid["nz"].get<unsigned int>() : 1;
  Functions::FEFieldFunction<dim> field(dofs, u);
  std::vector<Point<dim>> points;
  for (unsigned int k = 0; k < nz; ++k)
    for (unsigned int j = 0; j < ny; ++j)
      for (unsigned int i = 0; i < nx; ++i)
        {
          Point<dim> p;
          p[0] = box[0] + (box[1] - box[0]) * i / (nx - 1);
          p[1] = box[2] + (box[3] - box[2]) * j / (ny - 1);
          if (dim == 3)
            p[2] = box[4] + (box[5] - box[4]) * k / (nz - 1);
          points.push_back(p);
        }
  std::vector<double> values(points.size());
  field.value_list(points, values);
  std::ofstream out(outdir + "/solution_grid.bin", std::ios::binary);
  out.write(reinterpret_cast<const char *>(values.data()), values.size() * sizeof(double));
  out.close();

  const double seconds =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  json meta = {{"wall_time_sec", seconds},
               {"status", "ok"},
               {"solver_info",
                {{"mesh_resolution", 1u << refinement},
                 {"element_degree", 2},
                 {"num_dofs", dofs.n_dofs()},
                 {"linear_iterations", control.last_step()},
                 {"ksp_type", "cg"},
                 {"pc_type", "ssor"}}}};
  std::ofstream(outdir + "/meta.json") << meta.dump();
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 3)
    {
      std::cerr << "usage: solver case_spec.json OUTDIR [refinement]\n";
      return 2;
    }
  std::ifstream in(argv[1]);
  const json spec = json::parse(in);
  const unsigned int refinement = argc > 3 ? std::stoi(argv[3]) : 4;
  if (spec["domain"]["bounds"].size() == 3)
    return run<3>(spec, argv[2], refinement);
  return run<2>(spec, argv[2], refinement);
}
