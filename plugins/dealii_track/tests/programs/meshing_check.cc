// Test driver of pdeagent_dealii/programs/meshing.h (used by test_dealii_meshing.py).
//
//   meshing_check check   domains.json h   -> one JSON line per domain: type, dim, cells,
//       non_quad (cells that are not quadrilaterals/hexahedra), volume (MappingQ1), tags,
//       boundary_ids (sorted set of ids on boundary faces), bad_faces (boundary faces
//       whose id is not a tag index), length (boundary measure per tag, straight faces),
//       min_cell_measure, min_corner_jacobian (smallest corner Jacobian / cell area; > 0 for
//       convex quadrilaterals), volume_refined (2-D: volume after one refine_global())
//   meshing_check poisson domains.json h -> one JSON line per domain: -Laplace(u) = -6,
//       u = 1 + x^2 + 2 y^2 on every tag (boundary_ids(tags, {"all"})), Q2 + MappingQ1,
//       direct solve; max_error = max nodal |u_h - u| (Q2 contains u: ~1e-12 expected)
#include <deal.II/base/function.h>
#include <deal.II/base/quadrature_lib.h>
#include <deal.II/dofs/dof_handler.h>
#include <deal.II/dofs/dof_tools.h>
#include <deal.II/fe/fe_q.h>
#include <deal.II/fe/fe_values.h>
#include <deal.II/fe/mapping_q1.h>
#include <deal.II/grid/grid_tools.h>
#include <deal.II/grid/tria.h>
#include <deal.II/lac/affine_constraints.h>
#include <deal.II/lac/dynamic_sparsity_pattern.h>
#include <deal.II/lac/sparse_direct.h>
#include <deal.II/lac/sparse_matrix.h>
#include <deal.II/lac/vector.h>
#include <deal.II/numerics/vector_tools.h>

#include "meshing.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace dealii;
using json = nlohmann::json;

template <int dim>
json check(const json &domain, double h)
{
  Triangulation<dim> tria;
  std::vector<std::string> tags;
  pdeagent::build_mesh(domain, h, tria, tags);
  std::set<unsigned int> ids;
  std::map<std::string, double> length;
  unsigned int bad = 0, non_quad = 0;
  double min_measure = 1e300, min_corner = 1e300;
  for (const auto &cell : tria.active_cell_iterators())
    {
      if (cell->reference_cell() != ReferenceCells::get_hypercube<dim>())
        ++non_quad;
      min_measure = std::min(min_measure, cell->measure());
      if (dim == 2)
        {
          // Jacobian determinant at the four corners (v0 v1 v3 v2 is the counter-clockwise
          // outline): all positive <=> the quadrilateral is convex and not inverted.
          const unsigned int ccw[4] = {0, 1, 3, 2};
          for (unsigned int k = 0; k < 4; ++k)
            {
              const auto p = cell->vertex(ccw[k]), a = cell->vertex(ccw[(k + 1) % 4]),
                         b = cell->vertex(ccw[(k + 3) % 4]);
              const double det = (a[0] - p[0]) * (b[1] - p[1]) - (a[1] - p[1]) * (b[0] - p[0]);
              min_corner = std::min(min_corner, det / cell->measure());
            }
        }
      for (const auto f : cell->face_indices())
        if (cell->face(f)->at_boundary())
          {
            const auto face = cell->face(f);
            const unsigned int id = face->boundary_id();
            ids.insert(id);
            if (id >= tags.size())
              {
                ++bad;
                continue;
              }
            double m;
            if (dim == 2)
              m = face->vertex(0).distance(face->vertex(1));
            else
              m = face->measure();
            length[tags[id]] += m;
          }
    }
  const MappingQ1<dim> mapping;
  const double volume = GridTools::volume(tria, mapping);
  const unsigned int n_cells = tria.n_active_cells();
  double volume_refined = volume;
  if (dim == 2)
    {
      tria.refine_global(1); // new boundary vertices follow the attached manifolds
      volume_refined = GridTools::volume(tria, mapping);
    }
  return {{"type", domain["type"]},
          {"dim", dim},
          {"cells", n_cells},
          {"non_quad", non_quad},
          {"volume", volume},
          {"volume_refined", volume_refined},
          {"tags", tags},
          {"boundary_ids", ids},
          {"bad_faces", bad},
          {"length", length},
          {"min_cell_measure", min_measure},
          {"min_corner_jacobian", min_corner}};
}

class Exact : public Function<2>
{
public:
  double value(const Point<2> &p, const unsigned int = 0) const override
  {
    return 1.0 + p[0] * p[0] + 2.0 * p[1] * p[1];
  }
};

json poisson(const json &domain, double h)
{
  Triangulation<2> tria;
  std::vector<std::string> tags;
  pdeagent::build_mesh(domain, h, tria, tags);
  const MappingQ1<2> mapping;
  FE_Q<2> fe(2);
  DoFHandler<2> dofs(tria);
  dofs.distribute_dofs(fe);
  const Exact exact;
  AffineConstraints<double> constraints;
  const json all = json::array({"all"}); // as bc[i]["boundary"] in a case_spec
  if (pdeagent::boundary_ids(tags, all) != pdeagent::boundary_ids(tags, {"all"}))
    throw std::runtime_error("boundary_ids: json and list forms differ");
  for (const auto id : pdeagent::boundary_ids(tags, {"all"}))
    VectorTools::interpolate_boundary_values(mapping, dofs, id, exact, constraints);
  constraints.close();
  DynamicSparsityPattern dsp(dofs.n_dofs());
  DoFTools::make_sparsity_pattern(dofs, dsp, constraints, false);
  SparsityPattern pattern;
  pattern.copy_from(dsp);
  SparseMatrix<double> A(pattern);
  Vector<double> u(dofs.n_dofs()), b(dofs.n_dofs());
  QGauss<2> quad(3);
  FEValues<2> fv(mapping, fe, quad, update_values | update_gradients | update_JxW_values);
  const unsigned int n = fe.n_dofs_per_cell();
  FullMatrix<double> Ac(n, n);
  Vector<double> bc(n);
  std::vector<types::global_dof_index> idx(n);
  const double f = -6.0;
  for (const auto &cell : dofs.active_cell_iterators())
    {
      fv.reinit(cell);
      Ac = 0;
      bc = 0;
      for (unsigned int q = 0; q < quad.size(); ++q)
        for (unsigned int i = 0; i < n; ++i)
          {
            for (unsigned int j = 0; j < n; ++j)
              Ac(i, j) += fv.shape_grad(i, q) * fv.shape_grad(j, q) * fv.JxW(q);
            bc(i) += f * fv.shape_value(i, q) * fv.JxW(q);
          }
      cell->get_dof_indices(idx);
      constraints.distribute_local_to_global(Ac, bc, idx, A, b);
    }
  SparseDirectUMFPACK solver;
  solver.initialize(A);
  solver.vmult(u, b);
  constraints.distribute(u);
  std::vector<Point<2>> points(dofs.n_dofs());
  DoFTools::map_dofs_to_support_points(mapping, dofs, points);
  double err = 0.0;
  for (std::size_t i = 0; i < points.size(); ++i)
    err = std::max(err, std::abs(u[i] - exact.value(points[i])));
  return {{"type", domain["type"]},
          {"cells", tria.n_active_cells()},
          {"dofs", dofs.n_dofs()},
          {"max_error", err}};
}

int main(int argc, char **argv)
{
  if (argc < 4)
    {
      std::cerr << "usage: meshing_check check|poisson domains.json h\n";
      return 2;
    }
  const std::string mode = argv[1];
  std::ifstream in(argv[2]);
  const json domains = json::parse(in);
  const double h = std::stod(argv[3]);
  for (const auto &domain : domains)
    {
      json out;
      try
        {
          if (mode == "poisson")
            out = poisson(domain, h);
          else if (domain["bounds"].size() == 3)
            out = check<3>(domain, h);
          else
            out = check<2>(domain, h);
        }
      catch (const std::exception &exc)
        {
          out = {{"type", domain["type"]}, {"error", exc.what()}};
        }
      std::cout << out.dump() << std::endl;
    }
  return 0;
}
