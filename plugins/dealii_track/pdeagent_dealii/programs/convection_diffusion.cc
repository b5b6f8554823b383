// pdeagent deal.II calibration program: convection-diffusion.
//
//   [du/dt] - div(epsilon grad u) + beta . grad u = f     in the domain
//   u = g                                  on Dirichlet parts
//   epsilon du/dn = g                      on Neumann parts
//   epsilon du/dn + alpha u = g            on Robin parts
//   epsilon du/dn = 0                      on boundary parts not named
//   u periodic                             across periodic pairs
//
// The same discrete problem as the DOLFINx track's calibration solver
// (solvers/convection_diffusion.py): steady, or transient on (t0, t_end] with
// u(t0) = ic.u (nodal interpolation).  epsilon (> 0) is a number or an expression of
// x, y[, z] (and t); beta is a list of dim numbers (the muparser view has no copy of
// a list of expressions, so expressions there are refused).
//
// Stabilisation "auto": SUPG when the largest cell Peclet number
// Pe_K = |beta| h_K / (2 epsilon) (cell centres, at t0, the mid time and t_end)
// exceeds 1, h_K = cell diameter / degree; none when every component of beta is 0.
// SUPG adds sum_K (tau r(u), beta . grad v)_K with the full residual r of the discrete
// equation (time difference, both levels of the theta scheme, -div(epsilon grad u)
// elementwise with the FE Hessians), and
//     tau_s = h_K / (2 |beta|) (coth Pe_K - 1 / Pe_K)   (h_K^2 / (12 eps)(1 - Pe^2/15)
//                                                        for Pe_K <= 1e-2)
//     tau = tau_s (steady),  tau = 1 / sqrt(tau_s^-2 + (2 / dt)^2) (transient),
// evaluated at the quadrature points.
// Time stepping: BDF2 started with one Crank-Nicolson step, constant dt = (t_end - t0)
// / n with n = ceil((t_end - t0) / PDEAGENT_DT); the Dirichlet data are those of the
// new time level, every Neumann / Robin / forcing term follows the theta scheme.  The
// matrix is assembled and factorised for the first step, again for the second (BDF2)
// and then only when epsilon or a Robin alpha depends on t.
//
// Q_p elements (PDEAGENT_DEGREE) on a quadrilateral / hexahedral mesh of size
// longest-bbox-side / resolution (PDEAGENT_RESOLUTION in 2-D, PDEAGENT_RESOLUTION_CUBE
// for unit_cube, as the DOLFINx track's resolution / resolution_3d), MappingQ_p
// (curved boundaries; the star gets its exact outline from meshing.h), cell and face
// quadrature QGauss(p + PDEAGENT_QUADRATURE).  (DOLFINx integrates with degree 2p + 2,
// i.e. QGauss(p + 2); QGauss(p + 1) changes the errors of the dataset cases by < 0.1 %
// and halves the cost of the muparser forcing, which dominates the transient runs.)
// Linear systems: UMFPACK (2-D, or up to 30000 unknowns), GMRES + ILU otherwise.
// Calibration resolution 32 (DOLFINx: 24): at 24 the unresolved layers of the
// eccentric-annulus reference case (epsilon 0.01) left an error of 0.071, above the
// competence limit 0.05 (32: 0.038; DOLFINx at 24: 0.045).
//
// pdeagent-calibration: {"resolution": 32, "resolution_cube": 8, "degree": 2, "dt": 0.01, "quadrature": 1}
// pdeagent-reference: {"resolution": 64, "resolution_cube": 12, "degree": 3, "dt": 0.0025, "quadrature": 2}
#ifndef PDEAGENT_RESOLUTION
#  define PDEAGENT_RESOLUTION 32
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
#ifndef PDEAGENT_QUADRATURE
#  define PDEAGENT_QUADRATURE 1
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
#include <deal.II/lac/solver_control.h>
#include <deal.II/lac/solver_gmres.h>
#include <deal.II/lac/sparse_direct.h>
#include <deal.II/lac/sparse_ilu.h>
#include <deal.II/lac/sparse_matrix.h>
#include <deal.II/lac/vector.h>
#include <deal.II/numerics/vector_tools.h>

#include <nlohmann/json.hpp>

#include "common.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

using namespace dealii;
using json = nlohmann::json;

namespace
{
  using namespace pdeagent;

  // Case data (an expression) that mentions the time t (as the DOLFINx depends_on_t).
  bool depends_on_t(const json &value)
  {
    static const std::regex token("(^|[^A-Za-z0-9_.])t($|[^A-Za-z0-9_])");
    return value.is_string() && std::regex_search(value.get<std::string>(), token);
  }

  // Only u may be prescribed (the DOLFINx check_scalar_bc, Robin entries included).
  void check_boundary_conditions(const json &bc)
  {
    for (const char *kind : {"dirichlet", "neumann", "robin"})
      if (bc.contains(kind) && bc[kind].is_array())
        for (const auto &entry : bc[kind])
          if (entry.contains("quantity") && !entry["quantity"].is_null() &&
              entry["quantity"] != "u")
            throw std::runtime_error(std::string("a ") + kind + " condition on quantity " +
                                     entry["quantity"].dump() + " is not defined (only u)");
  }

  // SUPG tau_s of the DOLFINx solver (_cd_tau_steady).
  double tau_steady(const double bnorm, const double eps, const double hK)
  {
    const double pe = bnorm * hK / (2.0 * eps);
    if (pe > 1e-2)
      {
        const double e2 = std::exp(-2.0 * pe);
        return hK / (2.0 * bnorm) * ((1.0 + e2) / (1.0 - e2) - 1.0 / pe);
      }
    return hK * hK / (12.0 * eps) * (1.0 - pe * pe / 15.0);
  }

  // One step's form: (c0 u + c1 u_n + c2 u_nm1) / dt + theta A(u; t_new) +
  // (1 - theta) A(u_n; t_old); steady: c = 0, theta = 1.
  struct Step
  {
    double c0, c1, c2, theta;
  };

  template <int dim>
  int run(const json &spec, const std::string &outdir)
  {
    const auto start = std::chrono::steady_clock::now();
    const json &mp = spec["muparser"];
    const json &pde = spec["pde"];
    const json &params = pde["params"];
    check_boundary_conditions(spec["bc"]);
    for (const char *name : {"epsilon", "beta"})
      if (!params.contains(name))
        throw std::runtime_error(std::string("case_spec.pde.params has no '") + name + "'");
    const bool transient = is_transient(spec);

    // beta: dim numbers
    const json &beta_value = params["beta"];
    if (!beta_value.is_array() || beta_value.size() != dim)
      throw std::runtime_error("pde.params.beta must be a list of " + std::to_string(dim) +
                               " numbers, got " + beta_value.dump());
    Tensor<1, dim> beta;
    for (unsigned int d = 0; d < dim; ++d)
      {
        if (!beta_value[d].is_number())
          throw std::runtime_error("this program supports constant beta only (numbers), got " +
                                   beta_value.dump());
        beta[d] = beta_value[d].get<double>();
      }
    const double bnorm = beta.norm();
    const bool no_convection = bnorm == 0.0;

    // epsilon: a number or an expression (muparser copy)
    const json &eps_value = params["epsilon"];
    const bool eps_constant = eps_value.is_number();
    if (!eps_constant && !(mp["pde"]["params"].contains("epsilon")))
      throw std::runtime_error("pde.params.epsilon is neither a number nor an expression: " +
                               eps_value.dump());
    FunctionParser<dim> eps_fn(1);
    parse(eps_fn, eps_constant ? eps_value : mp["pde"]["params"]["epsilon"], transient);

    // the source f: 0 without forcing, the single entry otherwise
    const json &forcing = pde["forcing"];
    FunctionParser<dim> f_fn(1);
    if (forcing.is_null() || forcing.empty())
      parse(f_fn, json(0.0), transient);
    else if (forcing.size() == 1)
      parse(f_fn, mp["pde"]["forcing"].begin().value(), transient);
    else
      throw std::runtime_error("unsupported forcing entries " + forcing.dump() +
                               "; the equation has one source term f");

    Triangulation<dim> tria;
    std::vector<std::string> tags;
    const int resolution = dim == 3 ? PDEAGENT_RESOLUTION_CUBE : PDEAGENT_RESOLUTION;
    build_mesh(spec["domain"], mesh_size(spec["domain"], resolution), tria, tags);

    const unsigned int degree = PDEAGENT_DEGREE;
    FE_Q<dim> fe(degree);
    MappingQ<dim> mapping(degree);
    DoFHandler<dim> dofs(tria);
    dofs.distribute_dofs(fe);
    BoundaryData<dim> data(tags, spec);

    // time levels
    double t0 = 0.0, dt = 0.0;
    unsigned int n_steps = 0;
    if (transient)
      {
        t0 = pde["time"]["t0"].get<double>();
        std::tie(n_steps, dt) = time_steps(spec, PDEAGENT_DT);
        if (!spec.contains("ic") || spec["ic"].is_null() || !spec["ic"].contains("u"))
          throw std::runtime_error("a transient case must give ic.u");
      }

    // epsilon > 0 and the largest cell Peclet number (cell centres, a few times)
    std::vector<double> times = {t0};
    if (transient)
      times = {t0, t0 + 0.5 * n_steps * dt, t0 + n_steps * dt};
    double pe_max = 0.0, eps_min = std::numeric_limits<double>::infinity();
    for (const double tv : times)
      {
        eps_fn.set_time(tv);
        for (const auto &cell : tria.active_cell_iterators())
          {
            const double e = eps_fn.value(cell->center());
            eps_min = std::min(eps_min, e);
            if (!no_convection)
              pe_max = std::max(pe_max, bnorm * cell->diameter() / degree / (2.0 * e));
          }
      }
    if (!(eps_min > 0.0))
      throw std::runtime_error("epsilon must be positive (min " + std::to_string(eps_min) + ")");
    const bool supg = !no_convection && pe_max > 1.0;

    // constraints at time t (periodic first, then Dirichlet)
    auto make_constraints = [&](AffineConstraints<double> &constraints, const double t) {
      constraints.clear();
      add_periodic(dofs, tags, spec, constraints);
      add_dirichlet(mapping, dofs, tags, spec, constraints, t);
      constraints.close();
    };
    AffineConstraints<double> constraints;
    make_constraints(constraints, transient ? t0 + dt : 0.0);

    DynamicSparsityPattern dsp(dofs.n_dofs());
    DoFTools::make_sparsity_pattern(dofs, dsp, constraints, false);
    SparsityPattern pattern;
    pattern.copy_from(dsp);
    SparseMatrix<double> A(pattern);
    Vector<double> u(dofs.n_dofs()), b(dofs.n_dofs());
    Vector<double> u_n(dofs.n_dofs()), u_nm1(dofs.n_dofs());

    const QGauss<dim> quad(degree + PDEAGENT_QUADRATURE);
    const QGauss<dim - 1> face_quad(degree + PDEAGENT_QUADRATURE);
    UpdateFlags flags = update_values | update_gradients | update_quadrature_points |
                        update_JxW_values;
    if (supg)
      flags |= update_hessians;
    FEValues<dim> fv(mapping, fe, quad, flags);
    FEFaceValues<dim> ffv(mapping, fe, face_quad,
                          update_values | update_quadrature_points | update_JxW_values);
    const unsigned int n = fe.n_dofs_per_cell();
    const unsigned int nq = quad.size(), nfq = face_quad.size();
    FullMatrix<double> Ac(n, n);
    Vector<double> bc_local(n);
    std::vector<types::global_dof_index> ids(n);
    std::vector<double> un_q(nq), unm1_q(nq), un_face(nfq);
    std::vector<Tensor<1, dim>> gun_q(nq);
    std::vector<double> lap_un_q(nq);
    std::vector<double> lap_phi(n), conv_phi(n), supg_test(n);

    // One assembly of the step's right-hand side (and, with `matrix`, its matrix);
    // Dirichlet values enter through the constraints of t_new and the cell matrix.
    auto assemble = [&](const Step &s, const double t_new, const double t_old,
                        const bool matrix) {
      if (matrix)
        A = 0;
      b = 0;
      const bool old_level = s.theta < 1.0;
      for (const auto &cell : dofs.active_cell_iterators())
        {
          fv.reinit(cell);
          Ac = 0;
          bc_local = 0;
          const double hK = cell->diameter() / degree;
          if (transient)
            {
              fv.get_function_values(u_n, un_q);
              fv.get_function_values(u_nm1, unm1_q);
              if (old_level)
                {
                  fv.get_function_gradients(u_n, gun_q);
                  if (supg)
                    fv.get_function_laplacians(u_n, lap_un_q);
                }
            }
          for (unsigned int q = 0; q < nq; ++q)
            {
              const Point<dim> &x = fv.quadrature_point(q);
              const double JxW = fv.JxW(q);
              eps_fn.set_time(t_new);
              f_fn.set_time(t_new);
              const double eps = eps_fn.value(x);
              const Tensor<1, dim> geps = eps_constant ? Tensor<1, dim>() : eps_fn.gradient(x);
              const double fq = f_fn.value(x);
              // the explicit part: -(c1 u_n + c2 u_nm1) / dt + theta f_new
              //                    - (1 - theta) (strong / weak operator of u_n - f_old)
              double explicit_value = s.theta * fq; // tested with v and with tau beta.grad v
              double explicit_supg = 0.0;
              Tensor<1, dim> explicit_flux; // tested with grad v
              if (transient)
                explicit_value -= (s.c1 * un_q[q] + s.c2 * unm1_q[q]) / dt;
              if (old_level)
                {
                  eps_fn.set_time(t_old);
                  f_fn.set_time(t_old);
                  const double eps_o = eps_fn.value(x);
                  const double f_o = f_fn.value(x);
                  const double conv_o = beta * gun_q[q];
                  explicit_value -= (1.0 - s.theta) * (conv_o - f_o);
                  explicit_flux = -(1.0 - s.theta) * eps_o * gun_q[q];
                  if (supg)
                    {
                      const Tensor<1, dim> geps_o =
                        eps_constant ? Tensor<1, dim>() : eps_fn.gradient(x);
                      explicit_supg =
                        -(1.0 - s.theta) * (-eps_o * lap_un_q[q] - geps_o * gun_q[q]);
                    }
                }
              double tau = 0.0;
              if (supg)
                {
                  const double ts = tau_steady(bnorm, eps, hK);
                  tau = transient ? 1.0 / std::sqrt(1.0 / (ts * ts) + 4.0 / (dt * dt)) : ts;
                }
              const double mass = transient ? s.c0 / dt : 0.0;
              for (unsigned int i = 0; i < n; ++i)
                {
                  conv_phi[i] = beta * fv.shape_grad(i, q);
                  if (supg)
                    {
                      lap_phi[i] = trace(fv.shape_hessian(i, q));
                      supg_test[i] = tau * conv_phi[i];
                    }
                }
              for (unsigned int i = 0; i < n; ++i)
                {
                  const double vi = fv.shape_value(i, q);
                  const Tensor<1, dim> &gi = fv.shape_grad(i, q);
                  // the cell matrix is needed also without `matrix`: the Dirichlet
                  // values enter the right-hand side through it
                  for (unsigned int j = 0; j < n; ++j)
                    {
                      const double vj = fv.shape_value(j, q);
                      const Tensor<1, dim> &gj = fv.shape_grad(j, q);
                      double a = mass * vj * vi + s.theta * (eps * (gj * gi) + conv_phi[j] * vi);
                      if (supg)
                        a += supg_test[i] *
                             (mass * vj + s.theta * (-eps * lap_phi[j] - geps * gj + conv_phi[j]));
                      Ac(i, j) += a * JxW;
                    }
                  double r = explicit_value * vi + explicit_flux * gi;
                  if (supg)
                    r += supg_test[i] * (explicit_value + explicit_supg);
                  bc_local(i) += r * JxW;
                }
            }
          // Neumann and Robin terms, theta-weighted
          for (const auto &face : cell->face_iterators())
            {
              if (!face->at_boundary())
                continue;
              const auto id = face->boundary_id();
              const bool is_flux = data.has_flux(id), is_robin = data.has_robin(id);
              if (!is_flux && !is_robin)
                continue;
              ffv.reinit(cell, face);
              if (old_level && is_robin)
                ffv.get_function_values(u_n, un_face);
              for (unsigned int q = 0; q < nfq; ++q)
                {
                  const Point<dim> &x = ffv.quadrature_point(q);
                  data.set_time(t_new);
                  double g = 0.0, alpha = 0.0;
                  if (is_flux)
                    g += data.flux(id, x);
                  if (is_robin)
                    {
                      g += data.robin_value(id, x);
                      alpha = data.robin_alpha(id, x);
                    }
                  double rhs = s.theta * g;
                  if (old_level)
                    {
                      data.set_time(t_old);
                      double g_o = 0.0;
                      if (is_flux)
                        g_o += data.flux(id, x);
                      if (is_robin)
                        g_o += data.robin_value(id, x) - data.robin_alpha(id, x) * un_face[q];
                      rhs += (1.0 - s.theta) * g_o;
                    }
                  for (unsigned int i = 0; i < n; ++i)
                    {
                      const double vi = ffv.shape_value(i, q);
                      bc_local(i) += rhs * vi * ffv.JxW(q);
                      if (is_robin)
                        for (unsigned int j = 0; j < n; ++j)
                          Ac(i, j) += s.theta * alpha * vi * ffv.shape_value(j, q) * ffv.JxW(q);
                    }
                }
            }
          cell->get_dof_indices(ids);
          if (matrix)
            constraints.distribute_local_to_global(Ac, bc_local, ids, A, b);
          else
            constraints.distribute_local_to_global(bc_local, ids, b, Ac);
        }
    };

    // linear solver: UMFPACK, or GMRES + ILU for large 3-D systems
    const bool direct = dim == 2 || dofs.n_dofs() <= 30000;
    SparseDirectUMFPACK lu;
    SparseILU<double> ilu;
    unsigned int linear_iterations = 0, matrix_assemblies = 0;
    auto factorise = [&]() {
      ++matrix_assemblies;
      if (direct)
        lu.initialize(A);
      else
        ilu.initialize(A, SparseILU<double>::AdditionalData(0, 0));
    };
    auto solve = [&]() {
      if (direct)
        lu.vmult(u, b);
      else
        {
          SolverControl control(5000, 1e-12 * b.l2_norm());
          SolverGMRES<Vector<double>> gmres(
            control, SolverGMRES<Vector<double>>::AdditionalData(100));
          gmres.solve(A, u, b, ilu);
          linear_iterations += control.last_step();
        }
      constraints.distribute(u);
    };

    json info = {{"mesh_resolution", resolution},
                 {"mesh_cells", tria.n_active_cells()},
                 {"element_degree", degree},
                 {"num_dofs", dofs.n_dofs()},
                 {"quadrature", "QGauss(" + std::to_string(degree + PDEAGENT_QUADRATURE) + ")"},
                 {"stabilization", supg ? "supg" : "none"},
                 {"max_cell_peclet", pe_max}};

    if (!transient)
      {
        assemble(Step{0.0, 0.0, 0.0, 1.0}, 0.0, 0.0, true);
        factorise();
        solve();
      }
    else
      {
        bool time_dependent_matrix = !eps_constant && depends_on_t(eps_value);
        for (const auto &entry : spec["bc"].value("robin", json::array()))
          time_dependent_matrix = time_dependent_matrix || depends_on_t(entry["alpha"]);
        FunctionParser<dim> ic(1);
        parse(ic, mp["ic"]["u"], true);
        ic.set_time(t0);
        VectorTools::interpolate(mapping, dofs, ic, u_n);
        u_nm1 = u_n;
        const Step crank_nicolson{1.0, -1.0, 0.0, 0.5}, bdf2{1.5, -2.0, 0.5, 1.0};
        for (unsigned int step = 1; step <= n_steps; ++step)
          {
            const double t_old = t0 + (step - 1) * dt, t_new = t0 + step * dt;
            const Step &s = step == 1 ? crank_nicolson : bdf2;
            const bool matrix = step <= 2 || time_dependent_matrix;
            make_constraints(constraints, t_new);
            assemble(s, t_new, t_old, matrix);
            if (matrix)
              factorise();
            solve();
            u_nm1 = u_n;
            u_n = u;
          }
        info["time_steps"] = n_steps;
        info["dt"] = dt;
        info["scheme"] = "bdf2 (one crank_nicolson start step)";
      }
    info["matrix_assemblies"] = matrix_assemblies;
    info["ksp_type"] = direct ? "preonly" : "gmres";
    info["pc_type"] = direct ? "lu (umfpack)" : "ilu";
    if (!direct)
      info["linear_iterations"] = linear_iterations;

    write_solution(outdir, spec, mapping, dofs, u);
    write_meta(outdir, start, info);
    return 0;
  }
} // namespace

int main(int argc, char **argv)
{
  return pdeagent::main_program("convection_diffusion", argc, argv, run<2>, run<3>);
}
