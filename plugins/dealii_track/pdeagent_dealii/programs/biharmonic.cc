// pdeagent deal.II calibration program: biharmonic.
//
//   laplace(laplace(u)) = f                 in the domain
//   u = g                                   (quantity "u", bc.dirichlet)
//   laplace(u) = g                          (quantity "laplacian_u": Navier / simply supported)
//   du/dn = g                               (quantity "normal_derivative": clamped)
//
// Every boundary part carries exactly one condition on u and exactly one on laplacian_u
// or normal_derivative (the latter two may stand in bc.dirichlet or bc.neumann, same
// meaning); anything else (a missing or doubled condition, Robin data, a neumann
// condition on u, an unknown quantity, periodic pairs, a transient case, forcing entries
// other than f) throws, as in the DOLFINx calibration solver (solvers/biharmonic.py).
//
// Two discretisations (PDEAGENT_METHOD: 0 = auto, 1 = mixed, 2 = cip):
// - mixed (auto without normal_derivative conditions): w = -laplace(u), two Poisson
//   solves with Q_p (PDEAGENT_DEGREE) on a mesh of PDEAGENT_RESOLUTION,
//   -laplace(w) = f, w = -g_lap, then -laplace(u) = w, u = g_u, both with strong
//   Dirichlet data, each solved with UMFPACK.  L2 order p + 1.
// - cip (auto with normal_derivative conditions): C0 interior penalty (deal.II step-47)
//   with Q_p (PDEAGENT_DEGREE_CIP >= 2) on a mesh of PDEAGENT_RESOLUTION_CIP: u = g_u
//   strongly, sum_K (lap u, lap v)_K - ({lap u}, [dv/dn]) - ({lap v}, [du/dn]) +
//   sigma [du/dn][dv/dn] on interior faces, sigma = PDEAGENT_PENALTY * p^2 / h_avg
//   (h = largest vertex distance of a cell, averaged over the two cells); clamped data
//   by the same symmetric terms and penalty sigma = penalty * p^2 / h on its parts
//   (Nitsche), Navier data as (g, dv/dn) on its parts.  UMFPACK.
// The unit cube (3-D) uses PDEAGENT_RESOLUTION_CUBE for both methods.  MappingQ_p with
// the element degree so that curved boundaries are curved.  The solution u is sampled
// on the evaluation grid (NaN outside; common.h's write_solution) into solution_grid.bin;
// meta.json has the settings.
//
// pdeagent-calibration: {"method": 0, "resolution": 24, "degree": 2, "resolution_cip": 24, "degree_cip": 3, "resolution_cube": 6, "penalty": 4.0}
// pdeagent-reference: {"method": 0, "resolution": 96, "degree": 4, "resolution_cip": 48, "degree_cip": 4, "resolution_cube": 8, "penalty": 4.0}
#ifndef PDEAGENT_METHOD
#  define PDEAGENT_METHOD 0
#endif
#ifndef PDEAGENT_RESOLUTION
#  define PDEAGENT_RESOLUTION 24
#endif
#ifndef PDEAGENT_DEGREE
#  define PDEAGENT_DEGREE 2
#endif
#ifndef PDEAGENT_RESOLUTION_CIP
#  define PDEAGENT_RESOLUTION_CIP 24
#endif
#ifndef PDEAGENT_DEGREE_CIP
#  define PDEAGENT_DEGREE_CIP 3
#endif
#ifndef PDEAGENT_RESOLUTION_CUBE
#  define PDEAGENT_RESOLUTION_CUBE 6
#endif
#ifndef PDEAGENT_PENALTY
#  define PDEAGENT_PENALTY 4.0
#endif

#include <deal.II/base/bounding_box.h>
#include <deal.II/base/function_parser.h>
#include <deal.II/base/geometry_info.h>
#include <deal.II/base/quadrature_lib.h>
#include <deal.II/dofs/dof_handler.h>
#include <deal.II/dofs/dof_tools.h>
#include <deal.II/fe/fe_interface_values.h>
#include <deal.II/fe/fe_q.h>
#include <deal.II/fe/fe_values.h>
#include <deal.II/fe/mapping_q.h>
#include <deal.II/grid/tria.h>
#include <deal.II/lac/affine_constraints.h>
#include <deal.II/lac/dynamic_sparsity_pattern.h>
#include <deal.II/lac/sparse_direct.h>
#include <deal.II/lac/sparse_matrix.h>
#include <deal.II/lac/vector.h>
#include <deal.II/numerics/rtree.h>
#include <deal.II/numerics/vector_tools.h>

#include <nlohmann/json.hpp>

#include "common.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
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

  // One stated boundary condition: its quantity, boundary ids and muparser value.
  struct Condition
  {
    std::string quantity;
    std::vector<types::boundary_id> ids;
    json value;
  };

  std::string describe(const std::string &kind, const std::size_t index)
  {
    return "bc." + kind + "[" + std::to_string(index) + "]";
  }

  // The stated conditions (with their boundary ids when `tags` is given); throws on
  // kinds the family does not define.
  std::vector<Condition> conditions_of(const json &spec, const std::vector<std::string> *tags)
  {
    const json &bc = spec["bc"];
    if (bc.contains("periodic") && !bc["periodic"].is_null() && !bc["periodic"].empty())
      throw std::runtime_error("periodic boundary conditions are not supported");
    if (bc.contains("robin") && !bc["robin"].is_null() && !bc["robin"].empty())
      throw std::runtime_error("Robin conditions are not defined for this family");
    std::vector<Condition> conditions;
    for (const std::string kind : {"dirichlet", "neumann"})
      {
        if (!bc.contains(kind) || bc[kind].is_null())
          continue;
        for (std::size_t c = 0; c < bc[kind].size(); ++c)
          {
            const json &entry = bc[kind][c];
            std::string q = "u";
            if (entry.contains("quantity") && !entry["quantity"].is_null())
              q = entry["quantity"].get<std::string>();
            if (q != "u" && q != "laplacian_u" && q != "normal_derivative")
              throw std::runtime_error("unknown boundary quantity '" + q + "' in " +
                                       describe(kind, c));
            if (kind == "neumann" && q == "u")
              throw std::runtime_error(describe(kind, c) +
                                       " is a neumann condition on u; it must state quantity "
                                       "laplacian_u or normal_derivative");
            conditions.push_back({q,
                                  tags != nullptr ? boundary_ids(*tags, entry["boundary"])
                                                  : std::vector<types::boundary_id>{},
                                  spec["muparser"]["bc"][kind][c]["value"]});
          }
      }
    return conditions;
  }

  // Every boundary id present in the mesh: exactly one u condition and exactly one
  // laplacian_u / normal_derivative condition.
  template <int dim>
  void check_coverage(const Triangulation<dim> &tria, const std::vector<std::string> &tags,
                      const std::vector<Condition> &conditions)
  {
    std::set<types::boundary_id> present;
    for (const auto &face : tria.active_face_iterators())
      if (face->at_boundary())
        present.insert(face->boundary_id());
    std::string problems;
    for (const auto id : present)
      {
        unsigned int n_u = 0, n_second = 0;
        for (const auto &c : conditions)
          if (std::find(c.ids.begin(), c.ids.end(), id) != c.ids.end())
            (c.quantity == "u" ? n_u : n_second) += 1;
        const std::string name = id < tags.size() ? tags[id] : std::to_string(id);
        if (n_u != 1)
          problems += " '" + name + "' has " + std::to_string(n_u) + " conditions on u;";
        if (n_second != 1)
          problems += " '" + name + "' has " + std::to_string(n_second) +
                      " laplacian_u/normal_derivative conditions;";
      }
    if (!problems.empty())
      throw std::runtime_error("every boundary part needs exactly one condition "
                               "on u and exactly one on laplacian_u or normal_derivative:" +
                               problems);
  }

  // The forcing: one entry (any name) or none (zero); several entries only as f alone.
  json forcing_of(const json &spec)
  {
    const json &forcing = spec["pde"]["forcing"];
    if (forcing.is_null() || forcing.empty())
      return 0.0;
    if (forcing.size() == 1)
      return spec["muparser"]["pde"]["forcing"][forcing.begin().key()];
    if (!forcing.contains("f"))
      throw std::runtime_error("several forcing entries but none named f");
    throw std::runtime_error("forcing entries other than f have no place in "
                             "laplace(laplace(u)) = f");
  }

  // Strong Dirichlet data `sign * value` on the ids of the conditions of `quantity`.
  template <int dim>
  void add_strong(const Mapping<dim> &mapping, const DoFHandler<dim> &dofs,
                  const std::vector<Condition> &conditions, const std::string &quantity,
                  const double sign, AffineConstraints<double> &constraints)
  {
    for (const auto &c : conditions)
      {
        if (c.quantity != quantity)
          continue;
        FunctionParser<dim> g(1);
        g.initialize(variables<dim>(), (sign < 0 ? "-(" : "(") + expression(c.value) + ")", {});
        for (const auto id : c.ids)
          VectorTools::interpolate_boundary_values(mapping, dofs, id, g, constraints);
      }
  }

  // Mixed splitting: two Poisson solves with the same stiffness matrix.
  template <int dim>
  json solve_mixed(const Mapping<dim> &mapping, const DoFHandler<dim> &dofs,
                   const std::vector<Condition> &conditions, FunctionParser<dim> &f,
                   Vector<double> &u)
  {
    const auto &fe = dofs.get_fe();
    AffineConstraints<double> w_constraints, u_constraints;
    add_strong(mapping, dofs, conditions, "laplacian_u", -1.0, w_constraints);
    add_strong(mapping, dofs, conditions, "u", 1.0, u_constraints);
    w_constraints.close();
    u_constraints.close();

    DynamicSparsityPattern dsp(dofs.n_dofs());
    DoFTools::make_sparsity_pattern(dofs, dsp);
    SparsityPattern pattern;
    pattern.copy_from(dsp);

    const QGauss<dim> quad(fe.degree + 1);
    FEValues<dim> fv(mapping, fe, quad,
                     update_values | update_gradients | update_quadrature_points |
                       update_JxW_values);
    const unsigned int n = fe.n_dofs_per_cell();
    FullMatrix<double> Ac(n, n);
    Vector<double> bc_local(n);
    std::vector<types::global_dof_index> ids(n);
    std::vector<double> w_at(quad.size());

    // -laplace(z) = source (the forcing f, or the FE function w), constraints applied.
    auto poisson = [&](const AffineConstraints<double> &constraints, const Vector<double> *w,
                       Vector<double> &z) {
      SparseMatrix<double> A(pattern);
      Vector<double> b(dofs.n_dofs());
      for (const auto &cell : dofs.active_cell_iterators())
        {
          fv.reinit(cell);
          Ac = 0;
          bc_local = 0;
          if (w != nullptr)
            fv.get_function_values(*w, w_at);
          for (unsigned int q = 0; q < quad.size(); ++q)
            {
              const double s = w != nullptr ? w_at[q] : f.value(fv.quadrature_point(q));
              for (unsigned int i = 0; i < n; ++i)
                {
                  for (unsigned int j = 0; j < n; ++j)
                    Ac(i, j) += fv.shape_grad(i, q) * fv.shape_grad(j, q) * fv.JxW(q);
                  bc_local(i) += s * fv.shape_value(i, q) * fv.JxW(q);
                }
            }
          cell->get_dof_indices(ids);
          constraints.distribute_local_to_global(Ac, bc_local, ids, A, b);
        }
      SparseDirectUMFPACK direct;
      direct.initialize(A);
      z.reinit(dofs.n_dofs());
      direct.vmult(z, b);
      constraints.distribute(z);
    };

    Vector<double> w;
    poisson(w_constraints, nullptr, w);
    poisson(u_constraints, &w, u);
    return {{"num_dofs", 2 * dofs.n_dofs()}, // u and w, one Poisson solve each
            {"dofs_per_field", dofs.n_dofs()},
            {"linear_solves", 2},
            {"ksp_type", "preonly"},
            {"pc_type", "lu (umfpack)"}};
  }

  // C0 interior penalty (step-47) with Nitsche clamped data and Navier data in the rhs.
  template <int dim>
  json solve_cip(const Mapping<dim> &mapping, const DoFHandler<dim> &dofs,
                 const std::vector<Condition> &conditions, FunctionParser<dim> &f,
                 Vector<double> &u)
  {
    const auto &fe = dofs.get_fe();
    const unsigned int p = fe.degree;
    if (p < 2)
      throw std::runtime_error("the C0 interior penalty method needs degree >= 2");
    const double penalty = PDEAGENT_PENALTY;
    if (!(penalty > 0))
      throw std::runtime_error("cip penalty must be positive");
    const double eta = penalty * p * p;

    AffineConstraints<double> constraints;
    add_strong(mapping, dofs, conditions, "u", 1.0, constraints);
    constraints.close();

    // Navier (laplacian_u) and clamped (normal_derivative) data by boundary id.
    std::map<types::boundary_id, std::unique_ptr<FunctionParser<dim>>> navier, clamped;
    for (const auto &c : conditions)
      {
        if (c.quantity == "u")
          continue;
        auto &target = c.quantity == "laplacian_u" ? navier : clamped;
        for (const auto id : c.ids)
          {
            target[id] = std::make_unique<FunctionParser<dim>>(1);
            parse(*target[id], c.value);
          }
      }

    DynamicSparsityPattern dsp(dofs.n_dofs());
    DoFTools::make_flux_sparsity_pattern(dofs, dsp, constraints, true);
    SparsityPattern pattern;
    pattern.copy_from(dsp);
    SparseMatrix<double> A(pattern);
    Vector<double> b(dofs.n_dofs());

    const QGauss<dim> quad(p + 1);
    const QGauss<dim - 1> face_quad(p + 1);
    FEValues<dim> fv(mapping, fe, quad,
                     update_values | update_hessians | update_quadrature_points |
                       update_JxW_values);
    FEFaceValues<dim> ffv(mapping, fe, face_quad,
                          update_values | update_gradients | update_hessians |
                            update_quadrature_points | update_normal_vectors |
                            update_JxW_values);
    FEInterfaceValues<dim> fiv(mapping, fe, face_quad,
                               update_gradients | update_hessians | update_normal_vectors |
                                 update_JxW_values);
    const unsigned int n = fe.n_dofs_per_cell();
    FullMatrix<double> Ac(n, n);
    Vector<double> bc_local(n);
    std::vector<types::global_dof_index> ids(n);
    std::vector<double> lap(n), dn(n);

    for (const auto &cell : dofs.active_cell_iterators())
      {
        fv.reinit(cell);
        Ac = 0;
        bc_local = 0;
        for (unsigned int q = 0; q < quad.size(); ++q)
          {
            const double fq = f.value(fv.quadrature_point(q));
            for (unsigned int i = 0; i < n; ++i)
              lap[i] = trace(fv.shape_hessian(i, q));
            for (unsigned int i = 0; i < n; ++i)
              {
                for (unsigned int j = 0; j < n; ++j)
                  Ac(i, j) += lap[i] * lap[j] * fv.JxW(q);
                bc_local(i) += fq * fv.shape_value(i, q) * fv.JxW(q);
              }
          }
        const double h_cell = cell->diameter();
        for (const unsigned int face_no : cell->face_indices())
          {
            const auto face = cell->face(face_no);
            if (!face->at_boundary())
              {
                // Each interior face once, from the cell with the smaller index.
                const auto neighbor = cell->neighbor(face_no);
                if (neighbor->active_cell_index() < cell->active_cell_index())
                  continue;
                const unsigned int neighbor_face = cell->neighbor_of_neighbor(face_no);
                fiv.reinit(cell, face_no, numbers::invalid_unsigned_int, neighbor,
                           neighbor_face, numbers::invalid_unsigned_int);
                const unsigned int m = fiv.n_current_interface_dofs();
                FullMatrix<double> Af(m, m);
                Vector<double> zero(m);
                std::vector<double> jump(m), avg(m);
                const double sigma = eta / (0.5 * (h_cell + neighbor->diameter()));
                for (unsigned int q = 0; q < face_quad.size(); ++q)
                  {
                    const Tensor<1, dim> &normal = fiv.normal(q);
                    for (unsigned int i = 0; i < m; ++i)
                      {
                        jump[i] = fiv.jump_in_shape_gradients(i, q) * normal;
                        avg[i] = trace(fiv.average_of_shape_hessians(i, q));
                      }
                    for (unsigned int i = 0; i < m; ++i)
                      for (unsigned int j = 0; j < m; ++j)
                        Af(i, j) += (-avg[j] * jump[i] - avg[i] * jump[j] +
                                     sigma * jump[i] * jump[j]) *
                                    fiv.JxW(q);
                  }
                const auto face_ids = fiv.get_interface_dof_indices();
                constraints.distribute_local_to_global(Af, zero, face_ids, A, b);
                continue;
              }
            const auto id = face->boundary_id();
            const bool is_navier = navier.count(id) > 0, is_clamped = clamped.count(id) > 0;
            if (!is_navier && !is_clamped)
              continue;
            ffv.reinit(cell, face_no);
            const double sigma = eta / h_cell;
            for (unsigned int q = 0; q < face_quad.size(); ++q)
              {
                const Point<dim> &x = ffv.quadrature_point(q);
                const Tensor<1, dim> &normal = ffv.normal_vector(q);
                for (unsigned int i = 0; i < n; ++i)
                  {
                    dn[i] = ffv.shape_grad(i, q) * normal;
                    lap[i] = trace(ffv.shape_hessian(i, q));
                  }
                if (is_navier)
                  {
                    const double g = navier[id]->value(x);
                    for (unsigned int i = 0; i < n; ++i)
                      bc_local(i) += g * dn[i] * ffv.JxW(q);
                  }
                else
                  {
                    const double g = clamped[id]->value(x);
                    for (unsigned int i = 0; i < n; ++i)
                      {
                        for (unsigned int j = 0; j < n; ++j)
                          Ac(i, j) += (-lap[j] * dn[i] - lap[i] * dn[j] + sigma * dn[i] * dn[j]) *
                                      ffv.JxW(q);
                        bc_local(i) += (-lap[i] * g + sigma * g * dn[i]) * ffv.JxW(q);
                      }
                  }
              }
          }
        cell->get_dof_indices(ids);
        constraints.distribute_local_to_global(Ac, bc_local, ids, A, b);
      }

    SparseDirectUMFPACK direct;
    direct.initialize(A);
    u.reinit(dofs.n_dofs());
    direct.vmult(u, b);
    constraints.distribute(u);
    return {{"num_dofs", dofs.n_dofs()},
            {"linear_solves", 1},
            {"penalty", penalty},
            {"ksp_type", "preonly"},
            {"pc_type", "lu (umfpack)"}};
  }

  template <int dim>
  int run(const json &spec, const std::string &outdir)
  {
    const auto start = std::chrono::steady_clock::now();
    if (is_transient(spec))
      throw std::runtime_error("the biharmonic family is steady: pde.time must not be given");

    Triangulation<dim> tria;
    std::vector<std::string> tags;
    // The quantities first (without boundary ids), so that bad input fails before
    // the mesh is built and the method can pick its mesh.
    std::vector<Condition> conditions = conditions_of(spec, nullptr);
    int method = PDEAGENT_METHOD;
    const json f_value = forcing_of(spec);
    const bool has_clamped =
      std::any_of(conditions.begin(), conditions.end(),
                  [](const Condition &c) { return c.quantity == "normal_derivative"; });
    if (method == 0)
      method = has_clamped ? 2 : 1;
    if (method != 1 && method != 2)
      throw std::runtime_error("unknown method " + std::to_string(method) +
                               " (0 auto, 1 mixed, 2 cip)");
    if (method == 1 && has_clamped)
      throw std::runtime_error("the mixed method (w = -laplace(u)) needs "
                               "laplacian_u on the whole boundary; use cip for "
                               "normal_derivative (clamped) conditions");
    const bool cip = method == 2;
    const unsigned int degree = cip ? PDEAGENT_DEGREE_CIP : PDEAGENT_DEGREE;
    int resolution = cip ? PDEAGENT_RESOLUTION_CIP : PDEAGENT_RESOLUTION;
    if (spec["domain"]["type"] == "unit_cube")
      resolution = PDEAGENT_RESOLUTION_CUBE;
    if (degree < 1)
      throw std::runtime_error("degree must be >= 1");

    const double h = mesh_size(spec["domain"], resolution);
    build_mesh(spec["domain"], h, tria, tags);
    const auto meshed = std::chrono::steady_clock::now();
    conditions = conditions_of(spec, &tags);
    check_coverage(tria, tags, conditions);

    FE_Q<dim> fe(degree);
    MappingQ<dim> mapping(degree);
    DoFHandler<dim> dofs(tria);
    dofs.distribute_dofs(fe);
    FunctionParser<dim> f(1);
    parse(f, f_value);

    Vector<double> u;
    json info = cip ? solve_cip(mapping, dofs, conditions, f, u)
                    : solve_mixed(mapping, dofs, conditions, f, u);

    const auto solved = std::chrono::steady_clock::now();
    write_solution(outdir, spec, mapping, dofs, u);
    const auto sampled = std::chrono::steady_clock::now();
    const auto seconds = [](const auto from, const auto to) {
      return std::chrono::duration<double>(to - from).count();
    };
    info["time_mesh_sec"] = seconds(start, meshed);
    info["time_solve_sec"] = seconds(meshed, solved);
    info["time_sample_sec"] = seconds(solved, sampled);
    info["method"] = cip ? "cip" : "mixed";
    info["mesh_resolution"] = resolution;
    info["mesh_cells"] = tria.n_active_cells();
    info["element_degree"] = degree;
    info["mapping_degree"] = degree;
    write_meta(outdir, start, info);
    return 0;
  }
} // namespace

int main(int argc, char **argv)
{
  return pdeagent::main_program("biharmonic", argc, argv, run<2>, run<3>);
}
