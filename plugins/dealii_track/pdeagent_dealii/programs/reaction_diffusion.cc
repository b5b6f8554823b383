// pdeagent deal.II calibration program: reaction-diffusion (the PDE of the DOLFINx
// track's solvers/reaction_diffusion.py).
//
//   [du/dt] - div(epsilon grad u) + R(u) = f    in the domain (steady, or on (t0, t_end])
//   u = g                                        on Dirichlet parts
//   epsilon du/dn = g                            on Neumann parts
//   epsilon du/dn + alpha u = g                  on Robin parts
//   epsilon du/dn = 0                            on boundary parts not named
//   u(t0) = ic.u                                 (transient)
//
// Reaction laws (pde.params.reaction_law; sigma = pde.params.sigma, stated by the case):
// linear R = sigma u, cubic R = sigma u^3, allen_cahn R = sigma (u^3 - u), logistic
// R = -sigma u (1 - u).  epsilon and sigma are numbers or expressions of x, y[, z][, t].
// Dirichlet / Neumann conditions on a quantity other than u and periodic conditions are
// refused (exit 1), like the DOLFINx solver.
//
// Q_p elements (PDEAGENT_DEGREE) on a quadrilateral / hexahedral mesh of size
// longest-bbox-side / PDEAGENT_RESOLUTION (3-D: PDEAGENT_RESOLUTION_CUBE), MappingQ_p, cell
// and face quadrature QGauss(p + 2).  Newton's method with the exact Jacobian and a
// backtracking line search; converged when ||F|| <= max(newton_atol, newton_rtol ||F_0||)
// or the full Newton step is below newton_stol ||u|| (PETSc SNES's tests); otherwise it
// throws.  Jacobian solves: SparseDirectUMFPACK in 2-D, GMRES + SSOR in 3-D.  The linear
// law is the same loop (one Newton step solves it).  Steady nonlinear problems start
// from ic.u when given, else from the harmonic extension of the Dirichlet data (zero
// without Dirichlet conditions).  Transient: BDF2 with constant step
// dt = (t_end - t0) / ceil((t_end - t0) / PDEAGENT_DT), started with one Crank-Nicolson
// step (R, f and boundary data at both time levels); each step's Newton iteration starts
// from the previous solution with the new Dirichlet values.  The coefficient and data
// values at the quadrature points are evaluated once per time level (muparser is the
// bulk of the cost otherwise).  The solution is sampled on the evaluation grid (NaN
// outside the domain) into solution_grid.bin.
//
// pdeagent-calibration: {"resolution": 24, "resolution_cube": 8, "degree": 2, "dt": 0.01, "newton_rtol": 1e-10, "newton_atol": 1e-12, "newton_stol": 1e-08, "newton_max_it": 30}
// pdeagent-reference: {"resolution": 48, "resolution_cube": 16, "degree": 3, "dt": 0.0025, "newton_rtol": 1e-12, "newton_atol": 1e-14, "newton_stol": 1e-10, "newton_max_it": 30}
#ifndef PDEAGENT_RESOLUTION
#  define PDEAGENT_RESOLUTION 24
#endif
#ifndef PDEAGENT_RESOLUTION_CUBE
#  define PDEAGENT_RESOLUTION_CUBE 8
#endif
#ifndef PDEAGENT_DEGREE
#  define PDEAGENT_DEGREE 2
#endif
#ifndef PDEAGENT_DT
#  define PDEAGENT_DT 0.01
#endif
#ifndef PDEAGENT_NEWTON_RTOL
#  define PDEAGENT_NEWTON_RTOL 1e-10
#endif
#ifndef PDEAGENT_NEWTON_ATOL
#  define PDEAGENT_NEWTON_ATOL 1e-12
#endif
#ifndef PDEAGENT_NEWTON_STOL
#  define PDEAGENT_NEWTON_STOL 1e-08
#endif
#ifndef PDEAGENT_NEWTON_MAX_IT
#  define PDEAGENT_NEWTON_MAX_IT 30
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
#include <deal.II/lac/solver_control.h>
#include <deal.II/lac/solver_gmres.h>
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
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace dealii;
using json = nlohmann::json;

namespace
{
  using namespace pdeagent;

  const char *const LAWS = "linear, cubic, allen_cahn, logistic";

  // R(u) and R'(u) of the stated law (times sigma).
  struct Reaction
  {
    int law = -1;

    explicit Reaction(const std::string &name)
    {
      const std::vector<std::string> names = {"linear", "cubic", "allen_cahn", "logistic"};
      for (std::size_t k = 0; k < names.size(); ++k)
        if (name == names[k])
          law = int(k);
      if (law < 0)
        throw std::runtime_error("unknown pde.params.reaction_law '" + name + "'; one of " +
                                 LAWS);
    }

    double value(const double u, const double sigma) const
    {
      switch (law)
        {
          case 0:
            return sigma * u;
          case 1:
            return sigma * u * u * u;
          case 2:
            return sigma * (u * u * u - u);
          default:
            return -sigma * u * (1.0 - u);
        }
    }

    double derivative(const double u, const double sigma) const
    {
      switch (law)
        {
          case 0:
            return sigma;
          case 1:
            return 3.0 * sigma * u * u;
          case 2:
            return sigma * (3.0 * u * u - 1.0);
          default:
            return -sigma * (1.0 - 2.0 * u);
        }
    }
  };

  // A coefficient parameter: a number, or an expression (its muparser copy).
  template <int dim>
  void parse_parameter(FunctionParser<dim> &fp, const json &spec, const std::string &name,
                       const bool time)
  {
    if (!spec["pde"].contains("params") || !spec["pde"]["params"].contains(name) ||
        spec["pde"]["params"][name].is_null())
      throw std::runtime_error("case_spec.pde.params has no '" + name + "'");
    const json &value = spec["pde"]["params"][name];
    if (value.is_number())
      {
        parse(fp, value, time);
        return;
      }
    const json &mp = spec["muparser"]["pde"]["params"];
    if (!value.is_string() || !mp.contains(name))
      throw std::runtime_error("pde.params." + name +
                               " is neither a number nor an expression: " + value.dump());
    parse(fp, mp[name], time);
  }

  // The single source term f (0 without forcing; several entries are refused).
  json source_term(const json &spec)
  {
    const json &forcing = spec["muparser"]["pde"]["forcing"];
    if (forcing.is_null() || forcing.empty())
      return json(0.0);
    if (forcing.size() > 1)
      throw std::runtime_error("unsupported forcing entries " + forcing.dump() +
                               "; the equation has one source term f");
    return forcing.begin().value();
  }

  // Conditions the family does not define fail loudly.
  void check_boundary_conditions(const json &spec)
  {
    const json &bc = spec["bc"];
    if (bc.contains("periodic") && !bc["periodic"].is_null() && !bc["periodic"].empty())
      throw std::runtime_error("periodic boundary conditions are not supported");
    for (const std::string kind : {"dirichlet", "neumann", "robin"})
      {
        if (!bc.contains(kind) || bc[kind].is_null())
          continue;
        for (const auto &entry : bc[kind])
          if (entry.contains("quantity") && !entry["quantity"].is_null() &&
              entry["quantity"] != "u")
            throw std::runtime_error("a " + kind + " condition on quantity " +
                                     entry["quantity"].dump() + " is not defined (only u)");
      }
    for (const auto &key : bc.items())
      if (key.key() != "dirichlet" && key.key() != "neumann" && key.key() != "robin" &&
          key.key() != "periodic" && !key.value().is_null() && !key.value().empty())
        throw std::runtime_error("boundary condition kind '" + key.key() +
                                 "' is not supported");
  }

  // pde.params.reaction_law (a word).
  std::string law_name(const json &spec)
  {
    if (!spec["pde"].contains("params") || !spec["pde"]["params"].contains("reaction_law") ||
        !spec["pde"]["params"]["reaction_law"].is_string())
      throw std::runtime_error(std::string("pde.params.reaction_law must be one of ") + LAWS);
    return spec["pde"]["params"]["reaction_law"];
  }

  // The output must be the scalar u (the DOLFINx solver's output_fields); common.h's
  // write_solution writes it (and refuses components / magnitudes of a scalar).
  void check_output(const json &spec)
  {
    const json &output = spec["output"];
    if (output["field"] != "u")
      throw std::runtime_error("cannot produce output array " + output["field"].dump() +
                               " (the solution is the scalar u)");
  }

  template <int dim>
  class LinearSolver
  {
  public:
    explicit LinearSolver(const bool direct)
      : direct(direct)
    {}

    void solve(const SparseMatrix<double> &A, Vector<double> &x, const Vector<double> &b)
    {
      x = 0;
      if (b.l2_norm() == 0.0)
        return;
      if (direct)
        {
          umfpack.initialize(A);
          umfpack.vmult(x, b);
          return;
        }
      SolverControl control(10000, 1e-13 * b.l2_norm());
      SolverGMRES<Vector<double>> gmres(control,
                                        SolverGMRES<Vector<double>>::AdditionalData(200));
      PreconditionSSOR<SparseMatrix<double>> ssor;
      ssor.initialize(A, 1.2);
      gmres.solve(A, x, b, ssor); // throws SolverControl::NoConvergence
      iterations += control.last_step();
    }

    const bool direct;
    unsigned long iterations = 0;

  private:
    SparseDirectUMFPACK umfpack;
  };

  template <int dim>
  class ReactionDiffusion
  {
  public:
    ReactionDiffusion(const json &spec)
      : spec(spec)
      , transient(is_transient(spec))
      , reaction(law_name(spec))
      , degree(PDEAGENT_DEGREE)
      , fe(degree)
      , mapping(degree)
      , quad(degree + 2)
      , face_quad(degree + 2)
      , solver(dim == 2)
    {}

    int run(const std::string &outdir)
    {
      const auto start = std::chrono::steady_clock::now();
      check_boundary_conditions(spec);
      check_output(spec);
      const int resolution = dim == 3 ? PDEAGENT_RESOLUTION_CUBE : PDEAGENT_RESOLUTION;
      build_mesh(spec["domain"], mesh_size(spec["domain"], resolution), tria, tags);
      dofs.reinit(tria);
      dofs.distribute_dofs(fe);

      parse_parameter(epsilon, spec, "epsilon", transient);
      parse_parameter(sigma, spec, "sigma", transient);
      parse(f, source_term(spec), transient);
      data = std::make_unique<BoundaryData<dim>>(tags, spec);

      // Homogeneous constraints of the Newton updates on the Dirichlet dofs.
      for (const auto &entry : spec["bc"]["dirichlet"])
        for (const auto id : boundary_ids(tags, entry["boundary"]))
          DoFTools::make_zero_boundary_constraints(dofs, id, zero_constraints);
      zero_constraints.close();
      DynamicSparsityPattern dsp(dofs.n_dofs());
      DoFTools::make_sparsity_pattern(dofs, dsp, zero_constraints, false);
      pattern.copy_from(dsp);
      J.reinit(pattern);
      u.reinit(dofs.n_dofs());
      u_old.reinit(dofs.n_dofs());
      u_older.reinit(dofs.n_dofs());
      old_part.reinit(dofs.n_dofs());

      json info = {{"family", "reaction_diffusion"},
                   {"reaction_law", spec["pde"]["params"]["reaction_law"]},
                   {"mesh_resolution", resolution},
                   {"mesh_cells", tria.n_active_cells()},
                   {"element_degree", degree},
                   {"num_dofs", dofs.n_dofs()},
                   {"quadrature", "QGauss(" + std::to_string(degree + 2) + ")"},
                   {"nonlinear_solver", "newton (backtracking line search)"},
                   {"ksp_type", solver.direct ? "preonly" : "gmres"},
                   {"pc_type", solver.direct ? "lu (umfpack)" : "ssor"}};

      if (!transient)
        {
          check_epsilon({0.0});
          const bool linear = reaction.law == 0;
          const json &ic = spec["muparser"].value("ic", json::object());
          if (!linear && ic.contains("u"))
            {
              FunctionParser<dim> guess(1);
              parse(guess, ic["u"]);
              VectorTools::interpolate(mapping, dofs, guess, u);
            }
          else if (!linear && spec["bc"]["dirichlet"].size() > 0)
            harmonic_extension();
          set_dirichlet(0.0); // the initial guess takes the Dirichlet values
          set_time(0.0);
          newton(" (steady problem)");
        }
      else
        {
          const double t0 = spec["pde"]["time"]["t0"], t_end = spec["pde"]["time"]["t_end"];
          if (!(t_end > t0))
            throw std::runtime_error("empty time interval");
          const json &ic = spec["muparser"].value("ic", json::object());
          if (!ic.contains("u"))
            throw std::runtime_error("a transient case must give ic.u");
          check_epsilon({t0, 0.5 * (t0 + t_end), t_end});
          const auto [n_steps, dt] = time_steps(spec, PDEAGENT_DT);
          FunctionParser<dim> initial(1);
          parse(initial, ic["u"], true);
          initial.set_time(t0);
          VectorTools::interpolate(mapping, dofs, initial, u);
          u_old = u;
          u_older = u;
          step = dt;
          for (unsigned int n = 1; n <= n_steps; ++n)
            {
              const double t_prev = t0 + (n - 1) * dt, t_new = t0 + n * dt;
              if (n == 1) // Crank-Nicolson start
                c0 = 1.0, c1 = -1.0, c2 = 0.0, theta = 0.5;
              else // BDF2
                c0 = 1.5, c1 = -2.0, c2 = 0.5, theta = 1.0;
              old_part = 0;
              if (theta < 1.0)
                {
                  set_time(t_prev);
                  assemble(u_old, old_part, false, 1.0 - theta, true);
                }
              set_time(t_new);
              set_dirichlet(t_new);
              std::ostringstream where;
              where << " in time step " << n << " (t = " << t_new << ")";
              newton(where.str());
              u_older = u_old;
              u_old = u;
            }
          info["time_steps"] = n_steps;
          info["dt"] = dt;
          info["scheme"] = "bdf2 (one crank_nicolson start step)";
        }

      info["newton_iterations"] = total_iterations;
      info["max_newton_iterations"] = max_iterations;
      info["linear_solves"] = linear_solves;
      if (!solver.direct)
        info["linear_iterations"] = solver.iterations;
      write_solution(outdir, spec, mapping, dofs, u);
      write_meta(outdir, start, info);
      return 0;
    }

  private:
    // epsilon > 0 at the cell centres at the given times (the DOLFINx solver's check).
    void check_epsilon(const std::vector<double> &times)
    {
      double lowest = std::numeric_limits<double>::infinity();
      for (const double t : times)
        {
          epsilon.set_time(t);
          for (const auto &cell : tria.active_cell_iterators())
            lowest = std::min(lowest, epsilon.value(cell->center()));
        }
      if (!(lowest > 0.0))
        throw std::runtime_error("epsilon must be positive (min " +
                                 std::to_string(lowest) + ")");
    }

    // u takes the Dirichlet values at time t on the Dirichlet dofs.
    void set_dirichlet(const double t)
    {
      AffineConstraints<double> constraints;
      add_dirichlet(mapping, dofs, tags, spec, constraints, t);
      constraints.close();
      constraints.distribute(u);
    }

    void set_time(const double t)
    {
      epsilon.set_time(t);
      sigma.set_time(t);
      f.set_time(t);
      data->set_time(t);
      ++time_level; // the cached coefficient values are stale
    }

    // u = the harmonic extension of the Dirichlet data (natural condition elsewhere):
    // the steady Newton iteration's initial guess, as in the DOLFINx solver.
    void harmonic_extension()
    {
      AffineConstraints<double> constraints;
      add_dirichlet(mapping, dofs, tags, spec, constraints, 0.0);
      constraints.close();
      SparseMatrix<double> A(pattern);
      Vector<double> b(dofs.n_dofs());
      FEValues<dim> fv(mapping, fe, quad, update_gradients | update_JxW_values);
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
            for (unsigned int i = 0; i < n; ++i)
              for (unsigned int j = 0; j < n; ++j)
                Ac(i, j) += fv.shape_grad(i, q) * fv.shape_grad(j, q) * fv.JxW(q);
          cell->get_dof_indices(ids);
          constraints.distribute_local_to_global(Ac, bc_local, ids, A, b);
        }
      solver.solve(A, u, b);
      constraints.distribute(u);
    }

    // residual += scale * (the steady residual at w and the parsers' time); with
    // `time_terms` also the BDF / theta mass terms and the theta weight (Newton residual);
    // with `jacobian` J = its derivative.  Constrained rows are zero (zero_constraints).
    void assemble(const Vector<double> &w, Vector<double> &residual, const bool jacobian,
                  const double scale, const bool old_level)
    {
      const bool mass = transient && !old_level;
      FEValues<dim> fv(mapping, fe, quad,
                       update_values | update_gradients | update_quadrature_points |
                         update_JxW_values);
      FEFaceValues<dim> ffv(mapping, fe, face_quad,
                            update_values | update_quadrature_points | update_JxW_values);
      const unsigned int n = fe.n_dofs_per_cell(), nq = quad.size(), nfq = face_quad.size();
      FullMatrix<double> Ac(n, n);
      Vector<double> rc(n);
      std::vector<types::global_dof_index> ids(n);
      std::vector<double> wq(nq), oq(nq), ooq(nq);
      std::vector<Tensor<1, dim>> gq(nq);
      std::vector<double> wf(nfq);
      const double k = transient ? step : 1.0;
      if (jacobian)
        J = 0;
      // epsilon, sigma, f and the boundary data at the quadrature points are evaluated
      // (muparser) once per time level and cached: Newton assembles several times.
      const bool fill = cached_level != time_level;
      const std::size_t n_faces = GeometryInfo<dim>::faces_per_cell;
      if (fill)
        {
          cached_level = time_level;
          cell_eps.assign(tria.n_active_cells() * nq, 0.0);
          cell_sigma.assign(tria.n_active_cells() * nq, 0.0);
          cell_f.assign(tria.n_active_cells() * nq, 0.0);
          face_g.assign(tria.n_active_cells() * n_faces * nfq, 0.0);
          face_alpha.assign(tria.n_active_cells() * n_faces * nfq, 0.0);
        }
      for (const auto &cell : dofs.active_cell_iterators())
        {
          fv.reinit(cell);
          fv.get_function_values(w, wq);
          fv.get_function_gradients(w, gq);
          if (mass)
            {
              fv.get_function_values(u_old, oq);
              fv.get_function_values(u_older, ooq);
            }
          Ac = 0;
          rc = 0;
          const std::size_t at = cell->active_cell_index() * nq;
          if (fill)
            for (unsigned int q = 0; q < nq; ++q)
              {
                const Point<dim> &x = fv.quadrature_point(q);
                cell_eps[at + q] = epsilon.value(x);
                cell_sigma[at + q] = sigma.value(x);
                cell_f[at + q] = f.value(x);
              }
          for (unsigned int q = 0; q < nq; ++q)
            {
              const double eps = cell_eps[at + q], sig = cell_sigma[at + q];
              const double dx = fv.JxW(q);
              const double m = mass ? (c0 * wq[q] + c1 * oq[q] + c2 * ooq[q]) / k : 0.0;
              const double r = scale * (reaction.value(wq[q], sig) - cell_f[at + q]);
              const Tensor<1, dim> flux = scale * eps * gq[q];
              const double dr = scale * reaction.derivative(wq[q], sig) + (mass ? c0 / k : 0.0);
              for (unsigned int i = 0; i < n; ++i)
                {
                  const double vi = fv.shape_value(i, q);
                  rc(i) += ((m + r) * vi + flux * fv.shape_grad(i, q)) * dx;
                  if (jacobian)
                    for (unsigned int j = 0; j < n; ++j)
                      Ac(i, j) += (dr * fv.shape_value(j, q) * vi +
                                   scale * eps * (fv.shape_grad(j, q) * fv.shape_grad(i, q))) *
                                  dx;
                }
            }
          for (const auto &face : cell->face_iterators())
            {
              if (!face->at_boundary())
                continue;
              const auto id = face->boundary_id();
              const bool neumann = data->has_flux(id), robin = data->has_robin(id);
              if (!neumann && !robin)
                continue;
              ffv.reinit(cell, face);
              ffv.get_function_values(w, wf);
              const std::size_t fat =
                (cell->active_cell_index() * n_faces + cell->face_iterator_to_index(face)) * nfq;
              if (fill)
                for (unsigned int q = 0; q < nfq; ++q)
                  {
                    // Neumann and Robin data on the same part add up (as the DOLFINx forms)
                    const Point<dim> &x = ffv.quadrature_point(q);
                    if (neumann)
                      face_g[fat + q] += data->flux(id, x);
                    if (robin)
                      {
                        face_g[fat + q] += data->robin_value(id, x);
                        face_alpha[fat + q] = data->robin_alpha(id, x);
                      }
                  }
              for (unsigned int q = 0; q < nfq; ++q)
                {
                  const double g = face_g[fat + q], alpha = face_alpha[fat + q];
                  const double ds = ffv.JxW(q);
                  for (unsigned int i = 0; i < n; ++i)
                    {
                      const double vi = ffv.shape_value(i, q);
                      rc(i) += scale * (alpha * wf[q] - g) * vi * ds;
                      if (jacobian && alpha != 0.0)
                        for (unsigned int j = 0; j < n; ++j)
                          Ac(i, j) += scale * alpha * ffv.shape_value(j, q) * vi * ds;
                    }
                }
            }
          cell->get_dof_indices(ids);
          if (jacobian)
            zero_constraints.distribute_local_to_global(Ac, rc, ids, J, residual);
          else
            zero_constraints.distribute_local_to_global(rc, ids, residual);
        }
    }

    // The Newton residual at w (the old-level part added) and optionally its Jacobian.
    double residual(const Vector<double> &w, Vector<double> &F, const bool jacobian)
    {
      F = old_part;
      assemble(w, F, jacobian, transient ? theta : 1.0, false);
      return F.l2_norm();
    }

    void newton(const std::string &where)
    {
      const double rtol = PDEAGENT_NEWTON_RTOL, atol = PDEAGENT_NEWTON_ATOL;
      const double stol = PDEAGENT_NEWTON_STOL;
      const unsigned int max_it = PDEAGENT_NEWTON_MAX_IT;
      Vector<double> F(dofs.n_dofs()), du(dofs.n_dofs()), trial(dofs.n_dofs()),
        trial_F(dofs.n_dofs()), rhs(dofs.n_dofs());
      double norm = residual(u, F, false);
      const double norm0 = norm;
      const double target = std::max(atol, rtol * norm0);
      unsigned int it = 0;
      bool converged = norm <= atol;
      while (!converged)
        {
          if (it == max_it)
            {
              std::ostringstream msg;
              msg << "Newton did not converge" << where << " ("
                  << max_it << " iterations, residual " << norm << " from " << norm0
                  << ", target " << target << "); try a smaller dt or a better initial guess";
              throw std::runtime_error(msg.str());
            }
          ++it;
          residual(u, F, true);
          rhs = F;
          rhs *= -1.0;
          solver.solve(J, du, rhs);
          zero_constraints.distribute(du);
          ++linear_solves;
          // backtracking: halve the step until the residual norm decreases enough
          double lambda = 1.0, trial_norm = 0.0;
          for (;;)
            {
              trial = u;
              trial.add(lambda, du);
              trial_norm = residual(trial, trial_F, false);
              if (trial_norm <= (1.0 - 1e-4 * lambda) * norm || trial_norm <= target)
                break;
              lambda *= 0.5;
              if (lambda < 1.0 / 1024)
                {
                  std::ostringstream msg;
                  msg << "Newton line search failed" << where
                      << " (iteration " << it << ", residual " << norm
                      << "); try a smaller dt or a better initial guess";
                  throw std::runtime_error(msg.str());
                }
            }
          u = trial;
          F = trial_F;
          norm = trial_norm;
          converged = norm <= target || du.l2_norm() <= stol * u.l2_norm();
        }
      total_iterations += it;
      max_iterations = std::max(max_iterations, it);
    }

    const json &spec;
    const bool transient;
    const Reaction reaction;
    const unsigned int degree;
    FE_Q<dim> fe;
    MappingQ<dim> mapping;
    const QGauss<dim> quad;
    const QGauss<dim - 1> face_quad;
    LinearSolver<dim> solver;
    Triangulation<dim> tria;
    std::vector<std::string> tags;
    DoFHandler<dim> dofs;
    FunctionParser<dim> epsilon{1}, sigma{1}, f{1};
    std::unique_ptr<BoundaryData<dim>> data;
    AffineConstraints<double> zero_constraints;
    SparsityPattern pattern;
    SparseMatrix<double> J;
    Vector<double> u, u_old, u_older, old_part;
    double step = 1.0, c0 = 1.0, c1 = -1.0, c2 = 0.0, theta = 1.0;
    unsigned int time_level = 0, cached_level = std::numeric_limits<unsigned int>::max();
    std::vector<double> cell_eps, cell_sigma, cell_f, face_g, face_alpha;
    unsigned int total_iterations = 0, max_iterations = 0, linear_solves = 0;
  };

  template <int dim>
  int run(const json &spec, const std::string &outdir)
  {
    ReactionDiffusion<dim> problem(spec);
    return problem.run(outdir);
  }
} // namespace

int main(int argc, char **argv)
{
  return pdeagent::main_program("reaction_diffusion", argc, argv, run<2>, run<3>);
}
