// pdeagent deal.II calibration program: Poisson.
//
//   -div(kappa grad u) = f          in the domain
//   u = g                           on Dirichlet parts
//   kappa du/dn = g                 on Neumann parts
//   kappa du/dn + alpha u = g       on Robin parts
//
// Q_p elements (PDEAGENT_DEGREE) on a quadrilateral / hexahedral mesh of size
// longest-bbox-side / PDEAGENT_RESOLUTION (meshing.h), MappingQ_p so curved
// boundaries are curved, CG + SSOR. The solution is sampled on the evaluation grid
// (NaN outside the domain) into solution_grid.bin; meta.json reports the settings.
// Periodic conditions are not supported yet: the program says so and exits 3.
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
#include <deal.II/numerics/fe_field_function.h>
#include <deal.II/numerics/vector_tools.h>

#include <nlohmann/json.hpp>

#include "meshing.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace dealii;
using json = nlohmann::json;

namespace
{
  template <int dim>
  std::string variables()
  {
    return dim == 2 ? "x,y" : "x,y,z";
  }

  // A JSON number as muparser text, exactly (std::to_string keeps 6 decimals only).
  std::string number(const json &value)
  {
    std::ostringstream text;
    text << std::setprecision(17) << value.get<double>();
    return text.str();
  }

  template <int dim>
  void parse(FunctionParser<dim> &function, const json &expression)
  {
    function.initialize(variables<dim>(), expression.get<std::string>(), {});
  }

  // Values at the evaluation-grid points, row-major [k][j][i]; NaN outside the mesh.
  template <int dim>
  std::vector<double> sample(const Mapping<dim> &mapping, const DoFHandler<dim> &dofs,
                             const Vector<double> &u, const json &grid)
  {
    const std::vector<double> box = grid["bbox"].get<std::vector<double>>();
    const unsigned int nx = grid["nx"], ny = grid["ny"];
    const unsigned int nz = dim == 3 ? grid["nz"].get<unsigned int>() : 1;
    Functions::FEFieldFunction<dim> field(dofs, u, mapping);
    std::vector<double> values(std::size_t(nx) * ny * nz,
                               std::numeric_limits<double>::quiet_NaN());
    std::size_t n = 0;
    for (unsigned int k = 0; k < nz; ++k)
      for (unsigned int j = 0; j < ny; ++j)
        for (unsigned int i = 0; i < nx; ++i, ++n)
          {
            Point<dim> p;
            p[0] = box[0] + (box[1] - box[0]) * i / (nx - 1);
            p[1] = box[2] + (box[3] - box[2]) * j / (ny - 1);
            if (dim == 3)
              p[2] = box[4] + (box[5] - box[4]) * k / (nz - 1);
            try
              {
                values[n] = field.value(p);
              }
            catch (const std::exception &)
              {
                // outside the mesh: NaN
              }
          }
    return values;
  }

  template <int dim>
  int run(const json &spec, const std::string &outdir)
  {
    const auto start = std::chrono::steady_clock::now();
    const json &bc = spec["bc"];
    const json &mp = spec["muparser"];
    if (!bc["periodic"].empty())
      {
        std::cerr << "pdeagent poisson: periodic conditions are not supported yet\n";
        return 3;
      }
    // kappa: a number, or an expression of the coordinates (muparser copy).
    const json &kappa_value = spec["pde"]["params"]["kappa"];
    FunctionParser<dim> kappa_field(1);
    kappa_field.initialize(variables<dim>(),
                           kappa_value.is_number() ?
                             number(kappa_value) :
                             mp["pde"]["params"]["kappa"].get<std::string>(),
                           {});

    Triangulation<dim> tria;
    std::vector<std::string> tags;
    const double h = pdeagent::mesh_size(spec["domain"], PDEAGENT_RESOLUTION);
    pdeagent::build_mesh(spec["domain"], h, tria, tags);

    const unsigned int degree = PDEAGENT_DEGREE;
    FE_Q<dim> fe(degree);
    MappingQ<dim> mapping(degree);
    DoFHandler<dim> dofs(tria);
    dofs.distribute_dofs(fe);

    FunctionParser<dim> f(1);
    parse(f, mp["pde"]["forcing"]["f"]);

    AffineConstraints<double> constraints;
    for (std::size_t c = 0; c < bc["dirichlet"].size(); ++c)
      {
        FunctionParser<dim> g(1);
        parse(g, mp["bc"]["dirichlet"][c]["value"]);
        for (const auto id : pdeagent::boundary_ids(tags, bc["dirichlet"][c]["boundary"]))
          VectorTools::interpolate_boundary_values(mapping, dofs, id, g, constraints);
      }
    constraints.close();

    // Neumann and Robin data per boundary id (a later condition wins on a shared id).
    std::map<types::boundary_id, std::unique_ptr<FunctionParser<dim>>> flux, robin_g;
    std::map<types::boundary_id, std::unique_ptr<FunctionParser<dim>>> robin_alpha;
    for (std::size_t c = 0; c < bc["neumann"].size(); ++c)
      for (const auto id : pdeagent::boundary_ids(tags, bc["neumann"][c]["boundary"]))
        {
          flux[id] = std::make_unique<FunctionParser<dim>>(1);
          parse(*flux[id], mp["bc"]["neumann"][c]["value"]);
        }
    for (std::size_t c = 0; c < bc["robin"].size(); ++c)
      for (const auto id : pdeagent::boundary_ids(tags, bc["robin"][c]["boundary"]))
        {
          robin_g[id] = std::make_unique<FunctionParser<dim>>(1);
          parse(*robin_g[id], mp["bc"]["robin"][c]["value"]);
          robin_alpha[id] = std::make_unique<FunctionParser<dim>>(1);
          const json &alpha = mp["bc"]["robin"][c]["alpha"];
          robin_alpha[id]->initialize(variables<dim>(),
                                      alpha.is_string() ? alpha.get<std::string>() :
                                                          number(alpha),
                                      {});
        }

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
            const bool is_flux = flux.count(id) > 0, is_robin = robin_g.count(id) > 0;
            if (!is_flux && !is_robin)
              continue;
            ffv.reinit(cell, face);
            for (unsigned int q = 0; q < face_quad.size(); ++q)
              {
                const Point<dim> &x = ffv.quadrature_point(q);
                const double g = is_robin ? robin_g[id]->value(x) : flux[id]->value(x);
                const double alpha = is_robin ? robin_alpha[id]->value(x) : 0.0;
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

    const std::vector<double> values = sample(mapping, dofs, u, spec["eval_grid"]);
    std::ofstream out(outdir + "/solution_grid.bin", std::ios::binary);
    out.write(reinterpret_cast<const char *>(values.data()), values.size() * sizeof(double));
    out.close();

    const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const json meta = {{"wall_time_sec", seconds},
                       {"status", "ok"},
                       {"solver_info",
                        {{"mesh_resolution", PDEAGENT_RESOLUTION},
                         {"mesh_cells", tria.n_active_cells()},
                         {"element_degree", degree},
                         {"num_dofs", dofs.n_dofs()},
                         {"linear_iterations", control.last_step()},
                         {"ksp_type", "cg"},
                         {"pc_type", "ssor"}}}};
    std::ofstream(outdir + "/meta.json") << meta.dump();
    return 0;
  }
} // namespace

int main(int argc, char **argv)
{
  if (argc < 3)
    {
      std::cerr << "usage: solver case_spec.json OUTDIR\n";
      return 2;
    }
  std::ifstream in(argv[1]);
  const json spec = json::parse(in);
  try
    {
      if (spec["domain"]["bounds"].size() == 3)
        return run<3>(spec, argv[2]);
      return run<2>(spec, argv[2]);
    }
  catch (const std::exception &error)
    {
      std::cerr << "pdeagent poisson: " << error.what() << "\n";
      return 1;
    }
}
