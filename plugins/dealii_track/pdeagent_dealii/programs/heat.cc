// pdeagent deal.II calibration program: heat equation.
//
//   du/dt - div(kappa grad u) = f       in the domain, t in (t0, t_end]
//   u(t0) = ic.u
//   u = g                               on Dirichlet parts
//   kappa du/dn = g                     on Neumann parts
//   kappa du/dn + alpha u = g           on Robin parts
//   u periodic                          across periodic pairs
//   kappa du/dn = 0                     on unnamed boundary parts
//
// kappa, f, g and alpha may depend on x and t.  Same problem and time scheme as the
// DOLFINx track's heat solver: BDF2 with a constant step dt (rounded down so that the
// steps end exactly at t_end), the first step to t0 + dt by PDEAGENT_STARTUP_SUBSTEPS
// backward-Euler substeps, all data of a step taken at the new time level; Dirichlet
// data interpolated at the new time level; the initial condition interpolated
// (nodal) into the FE space; several Neumann / Robin entries on one boundary part add
// up (as the DOLFINx forms do).
//
// Q_p elements (PDEAGENT_DEGREE) on a quadrilateral / hexahedral mesh of size
// longest-bbox-side / PDEAGENT_RESOLUTION (2-D) or 1 / PDEAGENT_RESOLUTION_CUBE (3-D,
// unit_cube), MappingQ_p so curved boundaries are curved, (p + 1)-point Gauss
// quadrature per direction.  Mass M and stiffness K (+ Robin alpha) are assembled once
// (K every step when kappa or a Robin alpha depends on t); a step solves the condensed
//   (a0 M + h K) x = M history + h F(t_new) - (a0 M + h K) g,   u = x + g,
// g = the Dirichlet data at t_new, so each step matrix is factorised once:
// SparseDirectUMFPACK up to PDEAGENT_DIRECT_MAX_DOFS unknowns in 2-D
// (PDEAGENT_DIRECT_MAX_DOFS_CUBE in 3-D), else CG + SSOR (relative tolerance
// PDEAGENT_TOLERANCE, extrapolated initial guess).  The solution at t_end is sampled
// on the evaluation grid (NaN outside the mesh) into solution_grid.bin; meta.json
// reports the settings.
//
// pdeagent-calibration: {"resolution": 24, "resolution_cube": 10, "degree": 2, "dt": 0.02, "startup_substeps": 4, "direct_max_dofs": 150000, "direct_max_dofs_cube": 0, "tolerance": 1e-10}
// pdeagent-reference: {"resolution": 64, "resolution_cube": 12, "degree": 3, "dt": 0.005, "startup_substeps": 4, "direct_max_dofs": 150000, "direct_max_dofs_cube": 0, "tolerance": 1e-12}
#ifndef PDEAGENT_RESOLUTION
#  define PDEAGENT_RESOLUTION 24
#endif
#ifndef PDEAGENT_RESOLUTION_CUBE
#  define PDEAGENT_RESOLUTION_CUBE 10
#endif
#ifndef PDEAGENT_DEGREE
#  define PDEAGENT_DEGREE 2
#endif
#ifndef PDEAGENT_DT
#  define PDEAGENT_DT 0.02
#endif
#ifndef PDEAGENT_STARTUP_SUBSTEPS
#  define PDEAGENT_STARTUP_SUBSTEPS 4
#endif
#ifndef PDEAGENT_DIRECT_MAX_DOFS
#  define PDEAGENT_DIRECT_MAX_DOFS 150000
#endif
#ifndef PDEAGENT_DIRECT_MAX_DOFS_CUBE
#  define PDEAGENT_DIRECT_MAX_DOFS_CUBE 0
#endif
#ifndef PDEAGENT_TOLERANCE
#  define PDEAGENT_TOLERANCE 1e-10
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
#include <deal.II/lac/sparse_direct.h>
#include <deal.II/lac/sparse_matrix.h>
#include <deal.II/lac/vector.h>
#include <deal.II/numerics/vector_tools.h>

#include <nlohmann/json.hpp>

#include "common.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

using namespace dealii;
using json = nlohmann::json;

namespace
{
  using namespace pdeagent;

  double seconds_since(const std::chrono::steady_clock::time_point &start)
  {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // Whether case data (a muparser expression, a number, or a list) mentions the time t.
  bool mentions_t(const json &value)
  {
    if (value.is_array())
      {
        for (const auto &v : value)
          if (mentions_t(v))
            return true;
        return false;
      }
    if (!value.is_string())
      return false;
    static const std::regex token("(^|[^A-Za-z0-9_.])t([^A-Za-z0-9_]|$)");
    return std::regex_search(value.get<std::string>(), token);
  }

  // A scalar coefficient or datum: a number or one expression (never a list).
  const json &scalar(const json &value, const std::string &what)
  {
    if (!value.is_number() && !value.is_string())
      throw std::runtime_error(what + " must be a number or a scalar expression, got " +
                               value.dump());
    return value;
  }

  // The entries of one kind of boundary condition (an empty list when absent or null).
  const json &entries(const json &bc, const char *kind)
  {
    static const json none = json::array();
    return bc.contains(kind) && bc[kind].is_array() ? bc[kind] : none;
  }

  // The quantity of a boundary condition must be u (or unnamed).
  void check_quantity(const json &entry, const std::string &kind)
  {
    if (entry.contains("quantity") && !entry["quantity"].is_null() && entry["quantity"] != "u")
      throw std::runtime_error("a " + kind + " condition on quantity " +
                               entry["quantity"].dump() + " is not defined (only u)");
  }

  template <int dim>
  int run(const json &spec, const std::string &outdir)
  {
    const auto start = std::chrono::steady_clock::now();
    if (!is_transient(spec))
      throw std::runtime_error("the case has no pde.time (the heat equation is transient)");
    const json &pde = spec["pde"], &mp = spec["muparser"], &bc = spec["bc"];
    for (const char *kind : {"dirichlet", "neumann", "robin"})
      for (const auto &entry : entries(bc, kind))
        check_quantity(entry, kind);
    if (!pde.contains("params") || !pde["params"].contains("kappa"))
      throw std::runtime_error("case_spec.pde.params has no 'kappa' (diffusion coefficient)");
    if (!spec.contains("ic") || !spec["ic"].is_object() || !spec["ic"].contains("u"))
      throw std::runtime_error("the case_spec has no initial condition ic.u");
    if (spec["output"]["field"] != "u")
      throw std::runtime_error("cannot produce the output field " +
                               spec["output"]["field"].dump() + " (the solution is u)");

    // kappa: a number, or an expression of x (and t) (muparser copy).
    const bool kappa_number = pde["params"]["kappa"].is_number();
    if (!kappa_number && !mp["pde"]["params"].contains("kappa"))
      throw std::runtime_error("kappa must be a number or an expression, got " +
                               pde["params"]["kappa"].dump());
    const json &kappa_value =
      kappa_number ? pde["params"]["kappa"] : mp["pde"]["params"]["kappa"];
    FunctionParser<dim> kappa_field(1);
    parse(kappa_field, scalar(kappa_value, "kappa"), true);

    // f: 0 without forcing; a single entry is f whatever its name (as the DOLFINx solver).
    const json &forcing = mp["pde"]["forcing"];
    if (forcing.size() > 1)
      throw std::runtime_error("unsupported forcing entries " + pde["forcing"].dump() +
                               "; the equation has one source term f");
    FunctionParser<dim> f(1);
    parse(f, forcing.empty() ? json(0.0) : scalar(forcing.begin().value(), "forcing"), true);

    FunctionParser<dim> ic(1);
    parse(ic, scalar(mp["ic"]["u"], "ic.u"), true);

    const double t0 = pde["time"]["t0"], t_end = pde["time"]["t_end"];
    const auto steps = time_steps(spec, PDEAGENT_DT);
    const unsigned int n_steps = steps.first;
    const double dt = steps.second;
    const unsigned int substeps = PDEAGENT_STARTUP_SUBSTEPS;
    if (substeps < 1)
      throw std::runtime_error("startup_substeps must be positive");

    Triangulation<dim> tria;
    std::vector<std::string> tags;
    const unsigned int resolution = dim == 3 ? PDEAGENT_RESOLUTION_CUBE : PDEAGENT_RESOLUTION;
    build_mesh(spec["domain"], mesh_size(spec["domain"], resolution), tria, tags);
    const double time_mesh = seconds_since(start);

    const unsigned int degree = PDEAGENT_DEGREE;
    FE_Q<dim> fe(degree);
    MappingQ<dim> mapping(degree);
    DoFHandler<dim> dofs(tria);
    dofs.distribute_dofs(fe);
    const auto n_dofs = dofs.n_dofs();

    // Neumann (kappa du/dn = g) and Robin (kappa du/dn + alpha u = g) data; entries on a
    // shared boundary add up, as the DOLFINx forms' ds integrals do.
    for (const char *kind : {"neumann", "robin"})
      for (const auto &entry : entries(mp["bc"], kind))
        {
          scalar(entry["value"], std::string(kind) + " value");
          if (std::string(kind) == "robin")
            scalar(entry["alpha"], "robin alpha");
        }
    BoundaryData<dim> natural(tags, spec);
    bool alpha_depends_on_t = false;
    for (const auto &entry : entries(mp["bc"], "robin"))
      alpha_depends_on_t = alpha_depends_on_t || mentions_t(entry["alpha"]);
    const bool operator_depends_on_t = mentions_t(kappa_value) || alpha_depends_on_t;

    // Constraints at time t: periodic pairs, then Dirichlet data at t.  Which dofs are
    // constrained to what is the same at every t; `homogeneous` is that structure with
    // zero data, the data at t enter through g (u = x + g, x homogeneous).
    AffineConstraints<double> constraints, homogeneous;
    auto make_constraints = [&](AffineConstraints<double> &c, const double t) {
      c.clear();
      add_periodic(dofs, tags, spec, c);
      add_dirichlet(mapping, dofs, tags, spec, c, t);
    };
    make_constraints(homogeneous, t0);
    {
      std::vector<types::global_dof_index> lines;
      for (const auto &line : homogeneous.get_lines())
        lines.push_back(line.index);
      for (const auto i : lines)
        homogeneous.set_inhomogeneity(i, 0.0);
    }
    homogeneous.close();

    DynamicSparsityPattern dsp(n_dofs);
    DoFTools::make_sparsity_pattern(dofs, dsp);
    homogeneous.condense(dsp);
    SparsityPattern pattern;
    pattern.copy_from(dsp);
    // M: mass; K: kappa stiffness + Robin alpha; A: the condensed step matrix a0 M + h K.
    SparseMatrix<double> M(pattern), K(pattern), A(pattern);
    Vector<double> u(n_dofs), u_n(n_dofs), u_nm1(n_dofs), g(n_dofs), x(n_dofs), F(n_dofs),
      rhs(n_dofs), tmp(n_dofs), history(n_dofs), guess(n_dofs);

    const QGauss<dim> quad(degree + 1);
    const QGauss<dim - 1> face_quad(degree + 1);
    const unsigned int n = fe.n_dofs_per_cell(), nq = quad.size(), nfq = face_quad.size();
    FEValues<dim> fv(mapping, fe, quad,
                     update_values | update_gradients | update_quadrature_points |
                       update_JxW_values);
    FEFaceValues<dim> ffv(mapping, fe, face_quad,
                          update_values | update_quadrature_points | update_JxW_values);

    // What the load vector needs at every step, computed once: per cell the dof indices,
    // quadrature points and weights (FE_Q values do not depend on the mapping); per face
    // with Neumann / Robin data also the face values.
    FullMatrix<double> phi(n, nq);
    for (unsigned int i = 0; i < n; ++i)
      for (unsigned int q = 0; q < nq; ++q)
        phi(i, q) = fe.shape_value(i, quad.point(q));
    struct CellData
    {
      std::vector<types::global_dof_index> ids;
      std::vector<Point<dim>> x;
      std::vector<double> JxW;
    };
    struct FaceData
    {
      std::vector<types::global_dof_index> ids;
      std::vector<Point<dim>> x;
      std::vector<double> JxW;
      FullMatrix<double> phi;
      types::boundary_id id;
    };
    std::vector<CellData> cells;
    std::vector<FaceData> faces;
    cells.reserve(tria.n_active_cells());

    FullMatrix<double> Mc(n, n), Kc(n, n);
    std::vector<types::global_dof_index> ids(n);
    // M (and the load data) once; K at time t (every step when it depends on t).
    for (const auto &cell : dofs.active_cell_iterators())
      {
        fv.reinit(cell);
        cell->get_dof_indices(ids);
        Mc = 0;
        for (unsigned int q = 0; q < nq; ++q)
          for (unsigned int i = 0; i < n; ++i)
            for (unsigned int j = 0; j < n; ++j)
              Mc(i, j) += fv.shape_value(i, q) * fv.shape_value(j, q) * fv.JxW(q);
        M.add(ids, Mc);
        cells.push_back({ids, fv.get_quadrature_points(), fv.get_JxW_values()});
        if (!cell->at_boundary() || natural.empty())
          continue;
        for (const auto &face : cell->face_iterators())
          {
            if (!face->at_boundary())
              continue;
            const auto id = face->boundary_id();
            if (!natural.has_flux(id) && !natural.has_robin(id))
              continue;
            ffv.reinit(cell, face);
            FaceData data{ids, ffv.get_quadrature_points(), ffv.get_JxW_values(),
                          FullMatrix<double>(n, nfq), id};
            for (unsigned int i = 0; i < n; ++i)
              for (unsigned int q = 0; q < nfq; ++q)
                data.phi(i, q) = ffv.shape_value(i, q);
            faces.push_back(std::move(data));
          }
      }
    auto assemble_K = [&](const double t) {
      kappa_field.set_time(t);
      natural.set_time(t);
      K = 0;
      for (const auto &cell : dofs.active_cell_iterators())
        {
          fv.reinit(cell);
          cell->get_dof_indices(ids);
          Kc = 0;
          for (unsigned int q = 0; q < nq; ++q)
            {
              const double kJxW = kappa_field.value(fv.quadrature_point(q)) * fv.JxW(q);
              for (unsigned int i = 0; i < n; ++i)
                {
                  const Tensor<1, dim> grad_i = fv.shape_grad(i, q);
                  for (unsigned int j = 0; j < n; ++j)
                    Kc(i, j) += kJxW * (grad_i * fv.shape_grad(j, q));
                }
            }
          K.add(ids, Kc);
        }
      for (const auto &face : faces)
        {
          if (!natural.has_robin(face.id))
            continue;
          Kc = 0;
          for (unsigned int q = 0; q < nfq; ++q)
            {
              const double alpha = natural.robin_alpha(face.id, face.x[q]);
              for (unsigned int i = 0; i < n; ++i)
                for (unsigned int j = 0; j < n; ++j)
                  Kc(i, j) += alpha * face.phi(i, q) * face.phi(j, q) * face.JxW[q];
            }
          K.add(face.ids, Kc);
        }
    };
    // F(t) = (f(t), v) + (Neumann / Robin data g(t), v) on their boundary parts.
    Vector<double> Fc(n);
    std::vector<double> w(std::max(nq, nfq));
    auto assemble_F = [&](const double t) {
      f.set_time(t);
      natural.set_time(t);
      F = 0;
      for (const auto &cell : cells)
        {
          for (unsigned int q = 0; q < nq; ++q)
            w[q] = f.value(cell.x[q]) * cell.JxW[q];
          for (unsigned int i = 0; i < n; ++i)
            {
              double sum = 0;
              for (unsigned int q = 0; q < nq; ++q)
                sum += phi(i, q) * w[q];
              Fc(i) = sum;
            }
          F.add(cell.ids, Fc);
        }
      for (const auto &face : faces)
        {
          for (unsigned int q = 0; q < nfq; ++q)
            {
              const double value = natural.flux(face.id, face.x[q]) +
                                   natural.robin_value(face.id, face.x[q]);
              w[q] = value * face.JxW[q];
            }
          for (unsigned int i = 0; i < n; ++i)
            {
              double sum = 0;
              for (unsigned int q = 0; q < nfq; ++q)
                sum += face.phi(i, q) * w[q];
              Fc(i) = sum;
            }
          F.add(face.ids, Fc);
        }
    };
    assemble_K(t0);

    // Linear solver: UMFPACK (factorised once per matrix) or CG + SSOR.
    const bool direct =
      n_dofs <= static_cast<types::global_dof_index>(dim == 3 ? PDEAGENT_DIRECT_MAX_DOFS_CUBE :
                                                                 PDEAGENT_DIRECT_MAX_DOFS);
    SparseDirectUMFPACK lu;
    PreconditionSSOR<SparseMatrix<double>> ssor;
    unsigned int factorisations = 0, linear_iterations = 0;

    // One step (a0 u^{new} - history) / h - div(kappa grad u^{new}) = f(t_new) with
    // the boundary conditions at t_new:
    //   (a0 M + h K) u = M history + h F(t_new),  u = x + g, x homogeneous.
    auto advance = [&](const double a0, const double h, const double t_new, const bool fresh) {
      make_constraints(constraints, t_new);
      constraints.close();
      g = 0;
      constraints.distribute(g); // the Dirichlet data at t_new (0 at free dofs)
      if (fresh || operator_depends_on_t)
        {
          if (operator_depends_on_t)
            assemble_K(t_new);
          A.copy_from(M);
          A *= a0;
          A.add(h, K);
          homogeneous.condense(A);
          if (direct)
            lu.initialize(A);
          else
            ssor.initialize(A, 1.2);
          ++factorisations;
        }
      assemble_F(t_new);
      M.vmult(rhs, history);
      rhs.add(h, F);
      M.vmult(tmp, g);
      rhs.add(-a0, tmp);
      K.vmult(tmp, g);
      rhs.add(-h, tmp);
      homogeneous.condense(rhs);
      if (direct)
        {
          lu.vmult(x, rhs);
          ++linear_iterations;
        }
      else
        {
          x = guess; // the previous level or the extrapolation from the last two
          x -= g;
          homogeneous.set_zero(x);
          SolverControl control(20000, PDEAGENT_TOLERANCE * rhs.l2_norm());
          SolverCG<Vector<double>> cg(control);
          cg.solve(A, x, rhs, ssor);
          linear_iterations += control.last_step();
        }
      homogeneous.distribute(x);
      u = x;
      u += g;
      for (const auto value : u)
        if (!std::isfinite(value))
          throw std::runtime_error("non-finite solution at t = " + std::to_string(t_new));
    };

    auto level = [&](const unsigned int step) {
      return step == n_steps ? t_end : t0 + step * dt;
    };

    // Initial condition: nodal interpolation at t0 (no boundary condition imposed).
    ic.set_time(t0);
    VectorTools::interpolate(mapping, dofs, ic, u_n);
    const Vector<double> u_start = u_n;

    // First step (to t0 + dt): backward-Euler substeps of size dt / m.
    const double hs = dt / substeps;
    for (unsigned int j = 0; j < substeps; ++j)
      {
        const double t_to = j + 1 == substeps ? level(1) : t0 + (j + 1) * hs;
        history = u_n;
        guess = u_n;
        advance(1.0, hs, t_to, j == 0);
        u_n = u;
      }
    // BDF2: (1.5 u^{n+1} - 2 u^n + 0.5 u^{n-1}) / dt - div(kappa grad u^{n+1}) = f^{n+1}.
    u_nm1 = u_start;
    for (unsigned int step = 1; step < n_steps; ++step)
      {
        history = u_n;
        history *= 2.0;
        history.add(-0.5, u_nm1);
        guess = u_n;
        guess.sadd(2.0, -1.0, u_nm1);
        advance(1.5, dt, level(step + 1), step == 1);
        u_nm1 = u_n;
        u_n = u;
      }

    const double time_solve = seconds_since(start);
    write_solution(outdir, spec, mapping, dofs, u_n);
    const double time_sample = seconds_since(start);
    write_meta(outdir, start,
               {{"mesh_resolution", resolution},
                {"mesh_cells", tria.n_active_cells()},
                {"element_degree", degree},
                {"num_dofs", n_dofs},
                {"quadrature", std::to_string(degree + 1) + "-point Gauss per direction"},
                {"scheme", "bdf2"},
                {"startup", "backward_euler"},
                {"startup_substeps", substeps},
                {"dt", dt},
                {"time_steps", n_steps},
                {"t_end", t_end},
                {"matrix_reassembled_each_step", operator_depends_on_t},
                {"factorisations", factorisations},
                {"linear_iterations", linear_iterations},
                {"ksp_type", direct ? "preonly" : "cg"},
                {"pc_type", direct ? "lu (umfpack)" : "ssor"},
                {"seconds_mesh_solve_sample", {time_mesh, time_solve, time_sample}}});
    return 0;
  }
} // namespace

int main(int argc, char **argv)
{
  return pdeagent::main_program("heat", argc, argv, run<2>, run<3>);
}
