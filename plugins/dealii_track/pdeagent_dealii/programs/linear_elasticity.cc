// pdeagent deal.II calibration program: linear elasticity.
//
//   -div sigma(u) = f,   sigma = 2 mu eps(u) + lam tr(eps(u)) I     in the domain
//   u = g                                                           on Dirichlet parts
//   sigma(u) n = g                                                  on traction parts
//   sigma(u) n = 0                                                  on unnamed parts
//
// The same boundary-value problem as the DOLFINx track's calibration solver
// (pdeagent_dolfinx/solvers/linear_elasticity.py):
// - parameters {E, nu}, {young_modulus, poisson_ratio} or {lambda, mu} (numbers or
//   expressions); pde.params.model is plane_strain (lam = lambda), plane_stress
//   (lam = 2 lambda mu / (lambda + 2 mu)) or 3d (only on the unit cube);
// - vector data only: the body force (the single entry of pde.forcing), Dirichlet
//   displacements (quantity absent / "u" / "displacement") and tractions (quantity absent /
//   "u" / "traction") are lists of dim expressions; several traction conditions on one
//   boundary add up; where Dirichlet conditions share dofs the later condition wins;
// - steady only; Robin and periodic conditions, a missing Dirichlet condition, a model
//   that does not fit the domain and invalid material data are errors.
//
// Discretisation: FESystem(FE_Q(p), dim) for the displacement (the pure displacement
// form), or near the incompressible limit (plane strain / 3d with max nu >=
// PDEAGENT_MIXED_NU_THRESHOLD, as the DOLFINx solver's "auto" formulation) Taylor-Hood
// Q_p / Q_(p-1) for (u, p) with p = lam div u:
//
//   2 mu (eps(u), eps(v)) + (p, div v) = (f, v) + <g, v>
//   (div u, q) - (p / lam, q)          = 0,
//
// which does not lock. Quadrilateral / hexahedral mesh of size longest-bbox-side /
// PDEAGENT_RESOLUTION (2-D) or PDEAGENT_RESOLUTION_CUBE cells per side (unit cube),
// MappingQ_p so curved boundaries are curved. Linear systems: SparseDirectUMFPACK; in
// 3-D with PDEAGENT_ITERATIVE_CUBE = 1 the displacement form is solved by CG + SSOR
// instead (Q2 at 8^3 cells, 14739 dofs: 87 iterations, 3.9 s and 0.2 GB against
// UMFPACK's 12 s and 0.44 GB on a loaded machine; the reference's Q3 system would not fit
// a direct solver comfortably). The displacement is sampled on the evaluation grid (NaN
// outside the domain); meta.json reports the settings.
//
// pdeagent-calibration: {"resolution": 24, "resolution_cube": 8, "degree": 2, "mixed_nu_threshold": 0.49, "iterative_cube": 1, "tolerance": 1e-12}
// pdeagent-reference: {"resolution": 96, "resolution_cube": 8, "degree": 3, "mixed_nu_threshold": 0.49, "iterative_cube": 1, "tolerance": 1e-13}
#ifndef PDEAGENT_RESOLUTION
#  define PDEAGENT_RESOLUTION 24
#endif
#ifndef PDEAGENT_RESOLUTION_CUBE
#  define PDEAGENT_RESOLUTION_CUBE 8
#endif
#ifndef PDEAGENT_DEGREE
#  define PDEAGENT_DEGREE 2
#endif
#ifndef PDEAGENT_MIXED_NU_THRESHOLD
#  define PDEAGENT_MIXED_NU_THRESHOLD 0.49
#endif
#ifndef PDEAGENT_ITERATIVE_CUBE
#  define PDEAGENT_ITERATIVE_CUBE 1
#endif
#ifndef PDEAGENT_TOLERANCE
#  define PDEAGENT_TOLERANCE 1e-12
#endif

#include <deal.II/base/bounding_box.h>
#include <deal.II/base/function_parser.h>
#include <deal.II/base/geometry_info.h>
#include <deal.II/base/quadrature_lib.h>
#include <deal.II/dofs/dof_handler.h>
#include <deal.II/dofs/dof_renumbering.h>
#include <deal.II/dofs/dof_tools.h>
#include <deal.II/fe/fe_q.h>
#include <deal.II/fe/fe_system.h>
#include <deal.II/fe/fe_values.h>
#include <deal.II/fe/fe_values_extractors.h>
#include <deal.II/fe/mapping.h>
#include <deal.II/fe/mapping_q.h>
#include <deal.II/grid/manifold.h>
#include <deal.II/grid/tria.h>
#include <deal.II/lac/affine_constraints.h>
#include <deal.II/lac/dynamic_sparsity_pattern.h>
#include <deal.II/lac/precondition.h>
#include <deal.II/lac/solver_cg.h>
#include <deal.II/lac/sparse_direct.h>
#include <deal.II/lac/sparse_matrix.h>
#include <deal.II/lac/vector.h>
#include <deal.II/numerics/vector_tools.h>

#include <nlohmann/json.hpp>

#include "common.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
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

  // A boundary entry's names (a list, or a single name).
  std::vector<std::string> boundary_names(const json &boundary)
  {
    if (boundary.is_string())
      return {boundary.get<std::string>()};
    return boundary.get<std::vector<std::string>>();
  }

  // The quantity of a condition: absent / null / one of `allowed`, else an error.
  void check_quantity(const json &entry, const std::vector<std::string> &allowed,
                      const std::string &what)
  {
    if (!entry.contains("quantity") || entry["quantity"].is_null())
      return;
    const json &q = entry["quantity"];
    if (q.is_string() &&
        std::find(allowed.begin(), allowed.end(), q.get<std::string>()) != allowed.end())
      return;
    throw std::runtime_error("linear_elasticity: " + what + " quantity " + q.dump() +
                             " is not defined (expected " + allowed.back() + ")");
  }

  // Vector data: a list of exactly dim expressions / numbers (the DOLFINx solver rejects
  // scalar values too).
  void check_vector(const json &value, const unsigned int dim, const std::string &what)
  {
    if (!value.is_array() || value.size() != dim)
      throw std::runtime_error("linear_elasticity: " + what + " must be a list of " +
                               std::to_string(dim) + " expressions, got " + value.dump());
    for (const auto &item : value)
      if (!(item.is_string() || (item.is_number() && !item.is_boolean())))
        throw std::runtime_error("linear_elasticity: " + what + " has an invalid component " +
                                 item.dump());
  }

  // The Lame parameters (mu, lam of the model) from one of the three parameter sets.
  template <int dim>
  struct Material
  {
    std::string first, second;
    FunctionParser<dim> a{1}, b{1};
    bool plane_stress = false;

    Material(const json &spec, const std::string &model)
    {
      const json &params = spec["pde"]["params"];
      const json &mp = spec["muparser"]["pde"]["params"];
      const std::vector<std::pair<std::string, std::string>> sets = {
        {"E", "nu"}, {"young_modulus", "poisson_ratio"}, {"lambda", "mu"}};
      for (const auto &pair : sets)
        if (params.contains(pair.first) && params.contains(pair.second))
          {
            first = pair.first, second = pair.second;
            break;
          }
      if (first.empty())
        throw std::runtime_error("linear_elasticity: pde.params must state E and nu, "
                                 "young_modulus and poisson_ratio, or lambda and mu");
      load(a, params, mp, first);
      load(b, params, mp, second);
      plane_stress = model == "plane_stress";
    }

    static void load(FunctionParser<dim> &fp, const json &params, const json &mp,
                     const std::string &name)
    {
      const json &value = params[name];
      if (value.is_boolean() || !(value.is_number() || value.is_string()))
        throw std::runtime_error("pde.params." + name + " must be a number or an expression");
      if (value.is_number())
        parse(fp, value);
      else if (mp.contains(name))
        parse(fp, mp[name]);
      else
        throw std::runtime_error("pde.params." + name + " is not a valid expression");
    }

    // Poisson's ratio of the 3-D law at x (used to choose the formulation / validate).
    double nu(const Point<dim> &x) const
    {
      const double va = a.value(x), vb = b.value(x);
      if (first == "lambda")
        return va / (2.0 * (va + vb));
      return vb;
    }

    void validate(const Point<dim> &x) const
    {
      const double va = a.value(x), vb = b.value(x);
      if (first == "lambda")
        {
          if (!(vb > 0))
            throw std::runtime_error("linear_elasticity: mu must be positive");
          if (!(va + 2.0 * vb / 3.0 > 0))
            throw std::runtime_error(
              "linear_elasticity: the bulk modulus lambda + 2 mu / 3 must be > 0");
        }
      else
        {
          if (!(va > 0))
            throw std::runtime_error("linear_elasticity: " + first + " must be positive");
          if (!(vb > -1.0 && vb < 0.5))
            throw std::runtime_error("linear_elasticity: " + second +
                                     " must lie in (-1, 0.5)");
        }
    }

    // (mu, lam) at x, lam already the plane-stress value where the model says so.
    std::pair<double, double> lame(const Point<dim> &x) const
    {
      const double va = a.value(x), vb = b.value(x);
      double mu, lam;
      if (first == "lambda")
        lam = va, mu = vb;
      else
        {
          mu = va / (2.0 * (1.0 + vb));
          lam = va * vb / ((1.0 + vb) * (1.0 - 2.0 * vb));
        }
      if (plane_stress)
        lam = 2.0 * lam * mu / (lam + 2.0 * mu);
      return {mu, lam};
    }
  };

  // One traction condition: its boundary ids and the vector function g.
  template <int dim>
  struct Traction
  {
    std::set<types::boundary_id> ids;
    std::unique_ptr<FunctionParser<dim>> g;
  };

  template <int dim>
  int run(const json &spec, const std::string &outdir)
  {
    const auto start = std::chrono::steady_clock::now();
    const json &pde = spec["pde"];
    const json &bc = spec["bc"];
    const json &mp = spec["muparser"];
    if (is_transient(spec))
      throw std::runtime_error("linear_elasticity is steady: pde.time must be absent");
    if (bc.contains("periodic") && !bc["periodic"].is_null() && !bc["periodic"].empty())
      throw std::runtime_error(
        "linear_elasticity: periodic boundary conditions are not supported");
    if (bc.contains("robin") && !bc["robin"].is_null() && !bc["robin"].empty())
      throw std::runtime_error("linear_elasticity: Robin conditions are not defined for "
                               "this family");
    const json &params = pde["params"];
    const std::string model = params.contains("model") && params["model"].is_string() ?
                                params["model"].get<std::string>() :
                                std::string();
    if (model != "plane_strain" && model != "plane_stress" && model != "3d")
      throw std::runtime_error("linear_elasticity: pde.params.model must be one of "
                               "plane_strain, plane_stress, 3d, got " +
                               (params.contains("model") ? params["model"].dump() : "none"));
    const std::string domain_type = spec["domain"]["type"];
    const bool is_cube = domain_type == "unit_cube";
    if ((model == "3d") != is_cube || (dim == 3) != is_cube)
      throw std::runtime_error("linear_elasticity: model '" + model +
                               "' does not fit the " + domain_type + " domain");

    // Data checks (vector lists of dim entries, quantities).
    const json &forcing = pde["forcing"];
    if (!forcing.is_null() && forcing.size() > 1)
      throw std::runtime_error("linear_elasticity: unsupported forcing entries " +
                               forcing.dump().substr(0, 200) + "; expected one body force f");
    const bool has_force = !forcing.is_null() && forcing.size() == 1;
    std::string force_key;
    if (has_force)
      {
        force_key = forcing.begin().key();
        check_vector(forcing.begin().value(), dim, "the body force f");
      }
    const json &dirichlet = bc["dirichlet"];
    const json &neumann = bc["neumann"];
    if (dirichlet.is_null() || dirichlet.empty())
      throw std::runtime_error(
        "linear_elasticity: no displacement (Dirichlet) condition: rigid motions are not "
        "fixed and the problem has no unique solution");
    for (std::size_t k = 0; k < dirichlet.size(); ++k)
      {
        check_quantity(dirichlet[k], {"u", "displacement"}, "Dirichlet");
        check_vector(dirichlet[k]["value"], dim,
                     "bc.dirichlet[" + std::to_string(k) + "].value");
      }
    if (!neumann.is_null())
      for (std::size_t k = 0; k < neumann.size(); ++k)
        {
          check_quantity(neumann[k], {"u", "traction"}, "Neumann");
          check_vector(neumann[k]["value"], dim, "bc.neumann[" + std::to_string(k) + "].value");
        }

    Triangulation<dim> tria;
    std::vector<std::string> tags;
    const unsigned int resolution = dim == 3 ? PDEAGENT_RESOLUTION_CUBE : PDEAGENT_RESOLUTION;
    const double h = mesh_size(spec["domain"], resolution);
    build_mesh(spec["domain"], h, tria, tags);

    // Material and formulation (as the DOLFINx solver: nu sampled at the mesh nodes).
    const Material<dim> material(spec, model);
    double nu_min = std::numeric_limits<double>::infinity(), nu_max = -nu_min;
    for (const auto &x : tria.get_vertices())
      {
        material.validate(x);
        nu_min = std::min(nu_min, material.nu(x));
        nu_max = std::max(nu_max, material.nu(x));
      }
    const unsigned int degree = PDEAGENT_DEGREE;
    const bool mixed = model != "plane_stress" && nu_max >= PDEAGENT_MIXED_NU_THRESHOLD;
    if (mixed && degree < 2)
      throw std::runtime_error("the mixed (Taylor-Hood) formulation needs degree >= 2");
    if (mixed && !(nu_min > 0.0))
      throw std::runtime_error("the mixed formulation needs lambda > 0 (nu > 0)");

    std::unique_ptr<FESystem<dim>> fe_ptr;
    if (mixed)
      fe_ptr = std::make_unique<FESystem<dim>>(FE_Q<dim>(degree), dim, FE_Q<dim>(degree - 1), 1);
    else
      fe_ptr = std::make_unique<FESystem<dim>>(FE_Q<dim>(degree), dim);
    const FESystem<dim> &fe = *fe_ptr;
    MappingQ<dim> mapping(degree);
    DoFHandler<dim> dofs(tria);
    dofs.distribute_dofs(fe);
    DoFRenumbering::Cuthill_McKee(dofs);

    FunctionParser<dim> f(dim);
    if (has_force)
      parse_vector(f, mp["pde"]["forcing"][force_key]);

    // Dirichlet conditions on the displacement components (the later condition wins on
    // shared dofs, as DOLFINx's set_bc applied in list order).
    AffineConstraints<double> constraints;
    std::vector<bool> u_components(fe.n_components(), false);
    for (unsigned int c = 0; c < dim; ++c)
      u_components[c] = true;
    add_dirichlet(mapping, dofs, tags, spec, constraints, 0.0, ComponentMask(u_components));
    constraints.close();

    std::vector<Traction<dim>> tractions;
    if (!neumann.is_null())
      for (std::size_t k = 0; k < neumann.size(); ++k)
        {
          Traction<dim> t;
          for (const auto id : boundary_ids(tags, boundary_names(neumann[k]["boundary"])))
            t.ids.insert(id);
          t.g = std::make_unique<FunctionParser<dim>>(dim);
          parse_vector(*t.g, mp["bc"]["neumann"][k]["value"]);
          tractions.push_back(std::move(t));
        }

    DynamicSparsityPattern dsp(dofs.n_dofs());
    DoFTools::make_sparsity_pattern(dofs, dsp, constraints, false);
    SparsityPattern pattern;
    pattern.copy_from(dsp);
    SparseMatrix<double> A(pattern);
    Vector<double> u(dofs.n_dofs()), b(dofs.n_dofs());

    const FEValuesExtractors::Vector disp(0);
    const FEValuesExtractors::Scalar pressure(dim);
    const QGauss<dim> quad(degree + 1);
    const QGauss<dim - 1> face_quad(degree + 1);
    FEValues<dim> fv(mapping, fe, quad,
                     update_values | update_gradients | update_quadrature_points |
                       update_JxW_values);
    FEFaceValues<dim> ffv(mapping, fe, face_quad,
                          update_values | update_quadrature_points | update_JxW_values);
    const unsigned int n = fe.n_dofs_per_cell();
    FullMatrix<double> Ac(n, n);
    Vector<double> b_local(n);
    std::vector<types::global_dof_index> ids(n);
    std::vector<SymmetricTensor<2, dim>> eps(n);
    std::vector<double> div(n), pq(n);
    std::vector<Tensor<1, dim>> phi(n);
    Vector<double> fq(dim), gq(dim);
    for (const auto &cell : dofs.active_cell_iterators())
      {
        fv.reinit(cell);
        Ac = 0;
        b_local = 0;
        for (unsigned int q = 0; q < quad.size(); ++q)
          {
            const Point<dim> &x = fv.quadrature_point(q);
            const auto [mu, lam] = material.lame(x);
            if (has_force)
              f.vector_value(x, fq);
            const double JxW = fv.JxW(q);
            for (unsigned int i = 0; i < n; ++i)
              {
                eps[i] = fv[disp].symmetric_gradient(i, q);
                div[i] = fv[disp].divergence(i, q);
                phi[i] = fv[disp].value(i, q);
                pq[i] = mixed ? fv[pressure].value(i, q) : 0.0;
              }
            for (unsigned int i = 0; i < n; ++i)
              {
                for (unsigned int j = 0; j <= i; ++j) // symmetric: the upper half below
                  {
                    double a = 2.0 * mu * (eps[i] * eps[j]);
                    if (mixed)
                      a += pq[j] * div[i] + pq[i] * div[j] - pq[i] * pq[j] / lam;
                    else
                      a += lam * div[i] * div[j];
                    Ac(i, j) += a * JxW;
                  }
                if (has_force)
                  for (unsigned int c = 0; c < dim; ++c)
                    b_local(i) += fq[c] * phi[i][c] * JxW;
              }
          }
        for (unsigned int i = 0; i < n; ++i)
          for (unsigned int j = i + 1; j < n; ++j)
            Ac(i, j) = Ac(j, i);
        for (const auto &face : cell->face_iterators())
          {
            if (!face->at_boundary() || tractions.empty())
              continue;
            const auto id = face->boundary_id();
            bool loaded = false;
            for (const auto &t : tractions)
              loaded = loaded || t.ids.count(id) > 0;
            if (!loaded)
              continue;
            ffv.reinit(cell, face);
            for (unsigned int q = 0; q < face_quad.size(); ++q)
              {
                const Point<dim> &x = ffv.quadrature_point(q);
                Tensor<1, dim> g;
                for (const auto &t : tractions) // several conditions on one part add up
                  if (t.ids.count(id) > 0)
                    {
                      t.g->vector_value(x, gq);
                      for (unsigned int c = 0; c < dim; ++c)
                        g[c] += gq[c];
                    }
                for (unsigned int i = 0; i < n; ++i)
                  b_local(i) += g * ffv[disp].value(i, q) * ffv.JxW(q);
              }
          }
        cell->get_dof_indices(ids);
        constraints.distribute_local_to_global(Ac, b_local, ids, A, b);
      }

    const auto assembled = std::chrono::steady_clock::now();
    json info = {{"family", "linear_elasticity"},
                 {"model", model},
                 {"formulation", mixed ? "mixed" : "displacement"},
                 {"mesh_resolution", resolution},
                 {"mesh_cells", tria.n_active_cells()},
                 {"element_degree", degree},
                 {"pressure_degree", mixed ? json(degree - 1) : json(nullptr)},
                 {"geometry_degree", degree},
                 {"num_dofs", dofs.n_dofs()},
                 {"nu_range", {nu_min, nu_max}}};
    if (dim == 3 && !mixed && PDEAGENT_ITERATIVE_CUBE)
      {
        SolverControl control(20000, PDEAGENT_TOLERANCE * b.l2_norm());
        SolverCG<Vector<double>> cg(control);
        PreconditionSSOR<SparseMatrix<double>> ssor;
        ssor.initialize(A, 1.2);
        cg.solve(A, u, b, ssor);
        info["ksp_type"] = "cg";
        info["pc_type"] = "ssor";
        info["linear_iterations"] = control.last_step();
        info["tolerance"] = PDEAGENT_TOLERANCE;
      }
    else
      {
        SparseDirectUMFPACK direct;
        direct.initialize(A);
        direct.vmult(u, b);
        info["ksp_type"] = "preonly";
        info["pc_type"] = "lu (umfpack)";
      }
    constraints.distribute(u);
    const auto solved = std::chrono::steady_clock::now();
    info["setup_assembly_sec"] = std::chrono::duration<double>(assembled - start).count();
    info["solve_sec"] = std::chrono::duration<double>(solved - assembled).count();

    write_solution(outdir, spec, mapping, dofs, u, dim);
    write_meta(outdir, start, info);
    return 0;
  }
} // namespace

int main(int argc, char **argv)
{
  return pdeagent::main_program("linear_elasticity", argc, argv, run<2>, run<3>);
}
