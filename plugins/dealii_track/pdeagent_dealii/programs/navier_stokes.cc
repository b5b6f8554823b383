// pdeagent deal.II calibration program: incompressible Navier-Stokes (2-D).
//
//   du/dt + (u . grad) u - nu laplace(u) + grad p = f,   div u = 0   in the domain
//   u = g                                  Dirichlet quantity "velocity" (vector g)
//   nu du/dn - p n = g                     Neumann quantity "traction" (vector g)
//   nu du/dn - p n = -g n                  quantity "pressure" (Dirichlet or Neumann entry)
//   nu du/dn - p n = 0                     boundary parts not named
//
// The same boundary-value problem and discretisation choices as the DOLFINx track's
// calibration solver (solvers/navier_stokes.py): weak form
//   (du/dt, v) + ((grad u) u, v) + (grad u, grad(nu v)) - (p, div v) - (q, div u)
//     = (f, v) + natural terms,
// Taylor-Hood Q(k+1)^2-Q(k) with k = PDEAGENT_DEGREE on a quadrilateral mesh of size
// longest-bbox-side / PDEAGENT_RESOLUTION (meshing.h), MappingQ(PDEAGENT_GEOMETRY_DEGREE)
// so that curved boundaries are curved.  Every nonlinear system is solved by Newton's
// method (exact Jacobian, backtracking line search, SparseDirectUMFPACK per step) with the
// SNES-like tests |F| <= atol, |F| <= rtol |F_0|, |dx| <= stol |x|; a solve that does not
// converge is an error.
//
// Steady: Newton starts from the Stokes solution (the same residual without
// convection); when it fails, Newton is restarted from the Stokes solution on a
// geometric sequence nu_k = s_k nu, s_0 = max(2, U L / (Re_start nu_mean)) down to
// s = 1 in PDEAGENT_CONTINUATION_STEPS steps (U the largest nodal Stokes speed, L the
// largest bounding-box side); a failing step is bisected (in log s) from the last
// converged state, and the program fails after PDEAGENT_CONTINUATION_MAX_FAILURES.
// Transient: BDF2 (first step backward Euler; PDEAGENT_BDF_ORDER 1 = backward Euler
// throughout), data at the new time level, n = max(min_steps, ceil(T / dt)) equal
// steps, a fully implicit Newton solve per step starting from 2 u^n - u^{n-1}.
// Velocity prescribed on the whole boundary: the pressure rows of the residual are
// projected to zero sum (the range of the singular Jacobian), one pressure dof is
// pinned, and the pressure is shifted to zero mean afterwards.
//
// Output: velocity components (u_x, u_y), *_magnitude, or the pressure (p / pressure),
// and with `output.pressure` also the pressure as array `output.pressure.array` (zero
// mean exactly when the velocity is prescribed on the whole boundary, i.e. the case's
// normalization "zero_mean"; as the boundary conditions fix it otherwise), sampled on
// the evaluation grid (NaN outside); meta.json reports the settings.
// Unsupported input fails with a message and exit 1 (as the DOLFINx solver raises):
// periodic or Robin conditions, other quantities or forcing entries, vector data of the
// wrong length, a transient case without ic.velocity, other output arrays, 3-D domains
// (the deal.II subset of the family is 2-D; 3-D would need an iterative solver).
// Differences from PETSc SNES: the line search halves the step (down to 1/1024) until
// |F| decreases by the factor (1 - 1e-4 lambda) instead of PETSc's cubic backtracking,
// and the step-size test is made before the line search.
//
// pdeagent-calibration: {"resolution": 24, "degree": 1, "geometry_degree": 2, "dt": 0.05, "min_steps": 10, "bdf_order": 2, "newton_rtol": 1e-10, "newton_atol": 1e-12, "newton_stol": 1e-12, "newton_max_it": 15, "continuation_steps": 6, "continuation_reynolds": 10.0, "continuation_max_failures": 12}
// pdeagent-reference: {"resolution": 32, "degree": 2, "geometry_degree": 3, "dt": 0.01, "min_steps": 50, "newton_rtol": 1e-12, "newton_atol": 1e-13, "newton_max_it": 25}
#ifndef PDEAGENT_RESOLUTION
#  define PDEAGENT_RESOLUTION 24
#endif
#ifndef PDEAGENT_DEGREE
#  define PDEAGENT_DEGREE 1
#endif
#ifndef PDEAGENT_GEOMETRY_DEGREE
#  define PDEAGENT_GEOMETRY_DEGREE 2
#endif
#ifndef PDEAGENT_DT
#  define PDEAGENT_DT 0.05
#endif
#ifndef PDEAGENT_MIN_STEPS
#  define PDEAGENT_MIN_STEPS 10
#endif
#ifndef PDEAGENT_BDF_ORDER
#  define PDEAGENT_BDF_ORDER 2
#endif
#ifndef PDEAGENT_NEWTON_RTOL
#  define PDEAGENT_NEWTON_RTOL 1e-10
#endif
#ifndef PDEAGENT_NEWTON_ATOL
#  define PDEAGENT_NEWTON_ATOL 1e-12
#endif
#ifndef PDEAGENT_NEWTON_STOL
#  define PDEAGENT_NEWTON_STOL 1e-12
#endif
#ifndef PDEAGENT_NEWTON_MAX_IT
#  define PDEAGENT_NEWTON_MAX_IT 15
#endif
#ifndef PDEAGENT_CONTINUATION_STEPS
#  define PDEAGENT_CONTINUATION_STEPS 6
#endif
#ifndef PDEAGENT_CONTINUATION_REYNOLDS
#  define PDEAGENT_CONTINUATION_REYNOLDS 10.0
#endif
#ifndef PDEAGENT_CONTINUATION_MAX_FAILURES
#  define PDEAGENT_CONTINUATION_MAX_FAILURES 12
#endif

#include <deal.II/base/function_parser.h>
#include <deal.II/base/quadrature_lib.h>
#include <deal.II/dofs/dof_handler.h>
#include <deal.II/dofs/dof_tools.h>
#include <deal.II/fe/fe_q.h>
#include <deal.II/fe/fe_system.h>
#include <deal.II/fe/fe_values.h>
#include <deal.II/fe/mapping_q.h>
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
#include <fstream>
#include <iostream>
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

  // A vector datum (forcing, velocity, traction) as a list of dim expressions.
  void check_vector(const json &value, const unsigned int dim, const std::string &what)
  {
    if (!value.is_array() || value.size() != dim)
      throw std::runtime_error(what + " must be a list of " + std::to_string(dim) +
                               " component expressions, got " + value.dump());
  }

  struct NewtonResult
  {
    bool converged;
    unsigned int iterations;
    std::string reason;
  };

  template <int dim>
  class NavierStokes
  {
  public:
    explicit NavierStokes(const json &spec);
    void run(const std::string &outdir);

  private:
    // natural boundary data on one boundary id: traction g (dim components) or pressure g
    struct Natural
    {
      types::boundary_id id;
      bool pressure;
      std::unique_ptr<FunctionParser<dim>> g;
    };

    void read_data();
    void setup_system();
    void set_time(double t);
    void set_boundary_values(double t);
    void assemble(bool with_matrix);
    NewtonResult newton();
    json steady();
    json transient();
    double max_speed() const;
    double mean_nu() const;

    const json &spec;
    const bool time_dependent;
    Triangulation<dim> tria;
    std::vector<std::string> tags;
    const unsigned int degree; // pressure degree k: Q(k+1)-Q(k)
    FESystem<dim> fe;
    MappingQ<dim> mapping;
    DoFHandler<dim> dofs;
    const QGauss<dim> quad;
    const QGauss<dim - 1> face_quad;
    const FEValuesExtractors::Vector velocity{0};
    const FEValuesExtractors::Scalar pressure{dim};

    // data
    bool nu_constant = true;
    double nu_number = 0;
    std::unique_ptr<FunctionParser<dim>> nu_field, forcing;
    std::vector<std::pair<std::vector<types::boundary_id>, json>> velocity_bcs;
    std::vector<Natural> natural;
    bool enclosed = false;

    // algebra
    std::vector<bool> pressure_dof;
    types::global_dof_index pinned = numbers::invalid_dof_index;
    AffineConstraints<double> boundary_values, zero_residual, zero_update;
    SparsityPattern pattern;
    SparseMatrix<double> jacobian;
    Vector<double> w, w_n, w_nm1, residual, delta;

    // coefficient values at the quadrature points (refreshed by set_time)
    std::vector<Tensor<1, dim>> f_q, grad_nu_q;
    std::vector<double> nu_q;

    // state of the current nonlinear problem
    double scale = 1.0;      // continuation factor on nu
    double convection = 1.0; // 0: Stokes, 1: Navier-Stokes
    double a0 = 0, a1 = 0, a2 = 0, inv_dt = 0;
    bool time_term = false;
    unsigned int newton_total = 0, newton_solves = 0, factorizations = 0, assemblies = 0;
    double seconds_assemble = 0, seconds_factorize = 0;
  };

  template <int dim>
  NavierStokes<dim>::NavierStokes(const json &spec)
    : spec(spec)
    , time_dependent(is_transient(spec))
    , degree(PDEAGENT_DEGREE)
    , fe(FE_Q<dim>(PDEAGENT_DEGREE + 1), dim, FE_Q<dim>(PDEAGENT_DEGREE), 1)
    , mapping(PDEAGENT_GEOMETRY_DEGREE)
    , dofs(tria)
    , quad(PDEAGENT_DEGREE + 3)
    , face_quad(PDEAGENT_DEGREE + 3)
  {
    if (PDEAGENT_DEGREE < 1)
      throw std::runtime_error("Taylor-Hood needs pressure degree >= 1");
  }

  template <int dim>
  void NavierStokes<dim>::read_data()
  {
    const json &pde = spec["pde"], &mp = spec["muparser"];
    // viscosity: a number or an expression (x, y (, t))
    const json &params = pde["params"];
    if (!params.is_object() || !params.contains("nu") || params["nu"].is_null())
      throw std::runtime_error("case_spec.pde.params has no 'nu'");
    if (params["nu"].is_number())
      nu_number = params["nu"].get<double>();
    else
      {
        nu_constant = false;
        nu_field = std::make_unique<FunctionParser<dim>>(1, 0.0, 1e-5);
        parse(*nu_field, mp["pde"]["params"]["nu"], time_dependent);
        nu_field->set_formula(AutoDerivativeFunction<dim>::FourthOrder);
      }

    // forcing: only f (a vector); none = 0
    forcing = std::make_unique<FunctionParser<dim>>(dim);
    const json &f = pde["forcing"];
    bool has_f = false;
    if (f.is_object())
      for (const auto &entry : f.items())
        {
          if (entry.key() != "f")
            throw std::runtime_error("unsupported forcing entry '" + entry.key() +
                                     "': only 'f' is defined");
          has_f = !entry.value().is_null();
        }
    if (has_f)
      {
        check_vector(f["f"], dim, "forcing f");
        parse_vector(*forcing, mp["pde"]["forcing"]["f"], time_dependent);
      }
    else
      parse_vector(*forcing, json(std::vector<double>(dim, 0.0)), time_dependent);

    // boundary conditions
    const json &bc = spec["bc"], &mbc = mp["bc"];
    if (bc.contains("periodic") && !bc["periodic"].is_null() && !bc["periodic"].empty())
      throw std::runtime_error("periodic boundary conditions are not supported by this solver");
    if (bc.contains("robin") && !bc["robin"].is_null() && !bc["robin"].empty())
      throw std::runtime_error("Robin conditions are not defined for incompressible flow");
    auto add_pressure = [&](const json &entry, const json &mirrored) {
      if (entry["value"].is_array())
        throw std::runtime_error("pressure data must be a scalar expression");
      for (const auto id : boundary_ids(tags, entry["boundary"]))
        {
          Natural n{id, true, std::make_unique<FunctionParser<dim>>(1)};
          parse(*n.g, mirrored["value"], time_dependent);
          natural.push_back(std::move(n));
        }
    };
    std::set<types::boundary_id> velocity_ids;
    const json &dirichlet = bc["dirichlet"];
    for (std::size_t c = 0; dirichlet.is_array() && c < dirichlet.size(); ++c)
      {
        const json &entry = dirichlet[c];
        const std::string q = entry.contains("quantity") && !entry["quantity"].is_null() ?
                                entry["quantity"].get<std::string>() :
                                "velocity";
        if (q == "velocity")
          {
            check_vector(entry["value"], dim, "velocity data");
            const auto ids = boundary_ids(tags, entry["boundary"]);
            velocity_ids.insert(ids.begin(), ids.end());
            velocity_bcs.emplace_back(ids, mbc["dirichlet"][c]["value"]);
          }
        else if (q == "pressure")
          add_pressure(entry, mbc["dirichlet"][c]);
        else
          throw std::runtime_error("Dirichlet quantity '" + q +
                                   "' is not defined (velocity, pressure)");
      }
    const json &neumann = bc["neumann"];
    for (std::size_t c = 0; neumann.is_array() && c < neumann.size(); ++c)
      {
        const json &entry = neumann[c];
        const std::string q = entry.contains("quantity") && entry["quantity"].is_string() ?
                                entry["quantity"].get<std::string>() :
                                "(none)";
        if (q == "traction")
          {
            check_vector(entry["value"], dim, "traction data");
            for (const auto id : boundary_ids(tags, entry["boundary"]))
              {
                Natural n{id, false, std::make_unique<FunctionParser<dim>>(dim)};
                parse_vector(*n.g, mbc["neumann"][c]["value"], time_dependent);
                natural.push_back(std::move(n));
              }
          }
        else if (q == "pressure")
          add_pressure(entry, mbc["neumann"][c]);
        else
          throw std::runtime_error("Neumann quantity '" + q +
                                   "' is not defined (traction, pressure)");
      }
    output_plan<dim>(spec, dim, true); // fail before solving
    enclosed = true;
    for (const auto id : tria.get_boundary_ids())
      if (velocity_ids.count(id) == 0)
        enclosed = false;
  }

  template <int dim>
  void NavierStokes<dim>::setup_system()
  {
    dofs.distribute_dofs(fe);
    const IndexSet p_set = DoFTools::extract_dofs(dofs, fe.component_mask(pressure));
    pressure_dof.assign(dofs.n_dofs(), false);
    for (const auto i : p_set)
      pressure_dof[i] = true;

    set_boundary_values(time_dependent ? spec["pde"]["time"]["t0"].get<double>() : 0.0);
    zero_residual.clear();
    zero_update.clear();
    for (types::global_dof_index i = 0; i < dofs.n_dofs(); ++i)
      if (boundary_values.is_constrained(i))
        {
          zero_residual.add_line(i);
          zero_update.add_line(i);
        }
    zero_residual.close();
    if (enclosed)
      {
        pinned = *p_set.begin(); // the first pressure dof
        zero_update.add_line(pinned);
      }
    zero_update.close();

    DynamicSparsityPattern dsp(dofs.n_dofs());
    Table<2, DoFTools::Coupling> coupling(dim + 1, dim + 1); // no pressure-pressure block
    for (unsigned int c = 0; c <= dim; ++c)
      for (unsigned int d = 0; d <= dim; ++d)
        coupling[c][d] = c == dim && d == dim ? DoFTools::none : DoFTools::always;
    DoFTools::make_sparsity_pattern(dofs, coupling, dsp, zero_update, false);
    pattern.copy_from(dsp);
    jacobian.reinit(pattern);
    w.reinit(dofs.n_dofs());
    w_n.reinit(dofs.n_dofs());
    w_nm1.reinit(dofs.n_dofs());
    residual.reinit(dofs.n_dofs());
    delta.reinit(dofs.n_dofs());

    const std::size_t n = tria.n_active_cells() * quad.size();
    f_q.assign(n, Tensor<1, dim>());
    grad_nu_q.assign(n, Tensor<1, dim>());
    nu_q.assign(n, nu_number);
  }

  // Velocity Dirichlet values at time t; a later condition wins on shared dofs (as in
  // DOLFINx, where the last boundary condition is applied last): deal.II keeps the first
  // constraint of a dof, so the conditions are interpolated in reverse order.
  template <int dim>
  void NavierStokes<dim>::set_boundary_values(const double t)
  {
    boundary_values.clear();
    for (auto it = velocity_bcs.rbegin(); it != velocity_bcs.rend(); ++it)
      {
        std::vector<std::string> parts;
        for (const auto &v : it->second)
          parts.push_back(expression(v));
        parts.push_back("0");
        FunctionParser<dim> g(dim + 1);
        g.initialize(variables<dim>(time_dependent), parts, {}, time_dependent);
        g.set_time(t);
        for (const auto id : it->first)
          VectorTools::interpolate_boundary_values(mapping, dofs, id, g, boundary_values,
                                                   fe.component_mask(velocity));
      }
    boundary_values.close();
  }

  template <int dim>
  void NavierStokes<dim>::set_time(const double t)
  {
    forcing->set_time(t);
    if (!nu_constant)
      nu_field->set_time(t);
    for (auto &n : natural)
      n.g->set_time(t);
    FEValues<dim> fv(mapping, fe, quad, update_quadrature_points);
    Vector<double> fval(dim);
    for (const auto &cell : dofs.active_cell_iterators())
      {
        fv.reinit(cell);
        for (unsigned int q = 0; q < quad.size(); ++q)
          {
            const std::size_t c = cell->active_cell_index() * quad.size() + q;
            const Point<dim> &x = fv.quadrature_point(q);
            forcing->vector_value(x, fval);
            for (unsigned int d = 0; d < dim; ++d)
              f_q[c][d] = fval[d];
            if (!nu_constant)
              {
                nu_q[c] = nu_field->value(x);
                grad_nu_q[c] = nu_field->gradient(x);
              }
          }
      }
  }

  // Residual F(w) (and its Jacobian): constrained velocity rows are zero; with the
  // velocity prescribed on the whole boundary the pressure rows are projected to zero
  // sum and the pinned pressure row is zero.
  template <int dim>
  void NavierStokes<dim>::assemble(const bool with_matrix)
  {
    const auto started = std::chrono::steady_clock::now();
    ++assemblies;
    if (with_matrix)
      jacobian = 0;
    residual = 0;
    FEValues<dim> fv(mapping, fe, quad, update_values | update_gradients | update_JxW_values);
    FEFaceValues<dim> ffv(mapping, fe, face_quad,
                          update_values | update_normal_vectors | update_quadrature_points |
                            update_JxW_values);
    const unsigned int n = fe.n_dofs_per_cell(), nq = quad.size();
    FullMatrix<double> Jc(n, n);
    Vector<double> rc(n);
    std::vector<types::global_dof_index> ids(n);
    std::vector<Tensor<1, dim>> u(nq), un(nq), unm1(nq);
    std::vector<Tensor<2, dim>> grad_u(nq);
    std::vector<double> p(nq);
    // every shape function of the Taylor-Hood system is primitive: one nonzero
    // component comp[k] (0..dim-1 velocity, dim pressure) with value val and gradient grad
    std::vector<unsigned int> comp(n);
    for (unsigned int k = 0; k < n; ++k)
      comp[k] = fe.system_to_component_index(k).first;
    std::vector<double> val(n), s(n);
    std::vector<Tensor<1, dim>> grad(n);
    Vector<double> gval(dim);
    for (const auto &cell : dofs.active_cell_iterators())
      {
        fv.reinit(cell);
        Jc = 0;
        rc = 0;
        fv[velocity].get_function_values(w, u);
        fv[velocity].get_function_gradients(w, grad_u);
        fv[pressure].get_function_values(w, p);
        if (time_term)
          {
            fv[velocity].get_function_values(w_n, un);
            fv[velocity].get_function_values(w_nm1, unm1);
          }
        for (unsigned int q = 0; q < nq; ++q)
          {
            for (unsigned int k = 0; k < n; ++k)
              {
                val[k] = fv.shape_value(k, q);
                grad[k] = fv.shape_grad(k, q);
              }
            const std::size_t c = cell->active_cell_index() * nq + q;
            const double nu = scale * nu_q[c];
            const Tensor<1, dim> grad_nu = scale * grad_nu_q[c];
            const Tensor<2, dim> &G = grad_u[q];
            const double JxW = fv.JxW(q);
            // residual: (du/dt + (grad u) u + (grad u) grad nu - f, v) + nu (grad u, grad v)
            //           - (p, div v) - (q, div u)
            Tensor<1, dim> r_v = convection * (G * u[q]) + G * grad_nu - f_q[c];
            if (time_term)
              r_v += inv_dt * (a0 * u[q] + a1 * un[q] + a2 * unm1[q]);
            const double div_u = trace(G);
            for (unsigned int i = 0; i < n; ++i)
              {
                const unsigned int ci = comp[i];
                if (ci < dim)
                  rc(i) += (r_v[ci] * val[i] + nu * (G[ci] * grad[i]) - p[q] * grad[i][ci]) * JxW;
                else
                  rc(i) -= val[i] * div_u * JxW;
              }
            if (!with_matrix)
              continue;
            // Jacobian: velocity j in component cj contributes
            //   phi_i . [(grad phi_j) u + (grad u) phi_j + (grad phi_j) grad nu + a0/dt phi_j]
            //   + nu grad phi_j : grad phi_i - psi_i div phi_j;   pressure j: -psi_j div phi_i
            for (unsigned int j = 0; j < n; ++j)
              if (comp[j] < dim)
                s[j] = convection * (u[q] * grad[j]) + grad_nu * grad[j] +
                       (time_term ? a0 * inv_dt * val[j] : 0.0);
            for (unsigned int i = 0; i < n; ++i)
              {
                const unsigned int ci = comp[i];
                for (unsigned int j = 0; j < n; ++j)
                  {
                    const unsigned int cj = comp[j];
                    double a;
                    if (ci < dim && cj < dim)
                      {
                        a = convection * val[i] * val[j] * G[ci][cj];
                        if (ci == cj)
                          a += val[i] * s[j] + nu * (grad[i] * grad[j]);
                      }
                    else if (ci < dim)
                      a = -val[j] * grad[i][ci];
                    else if (cj < dim)
                      a = -val[i] * grad[j][cj];
                    else
                      continue;
                    Jc(i, j) += a * JxW;
                  }
              }
          }
        if (!natural.empty())
          for (const auto &face : cell->face_iterators())
            {
              if (!face->at_boundary())
                continue;
              bool reinit = false;
              for (const auto &data : natural)
                {
                  if (data.id != face->boundary_id())
                    continue;
                  if (!reinit)
                    ffv.reinit(cell, face), reinit = true;
                  for (unsigned int q = 0; q < face_quad.size(); ++q)
                    {
                      const Point<dim> &x = ffv.quadrature_point(q);
                      Tensor<1, dim> g; // nu du/dn - p n = g
                      if (data.pressure)
                        g = -data.g->value(x) * ffv.normal_vector(q);
                      else
                        {
                          data.g->vector_value(x, gval);
                          for (unsigned int d = 0; d < dim; ++d)
                            g[d] = gval[d];
                        }
                      for (unsigned int i = 0; i < n; ++i)
                        if (comp[i] < dim)
                          rc(i) -= g[comp[i]] * ffv.shape_value(i, q) * ffv.JxW(q);
                    }
                }
            }
        cell->get_dof_indices(ids);
        zero_residual.distribute_local_to_global(rc, ids, residual);
        if (with_matrix)
          zero_update.distribute_local_to_global(Jc, ids, jacobian);
      }
    if (enclosed)
      {
        double sum = 0;
        unsigned int count = 0;
        for (types::global_dof_index i = 0; i < residual.size(); ++i)
          if (pressure_dof[i])
            sum += residual[i], ++count;
        for (types::global_dof_index i = 0; i < residual.size(); ++i)
          if (pressure_dof[i])
            residual[i] -= sum / count;
        residual[pinned] = 0;
      }
    seconds_assemble +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }

  // Newton from the current w (which satisfies the velocity Dirichlet values).
  template <int dim>
  NewtonResult NavierStokes<dim>::newton()
  {
    const double rtol = PDEAGENT_NEWTON_RTOL, atol = PDEAGENT_NEWTON_ATOL,
                 stol = PDEAGENT_NEWTON_STOL;
    const unsigned int max_it = PDEAGENT_NEWTON_MAX_IT;
    ++newton_solves;
    assemble(true);
    double norm = residual.l2_norm();
    const double norm0 = norm;
    SparseDirectUMFPACK lu;
    Vector<double> w0(w.size());
    for (unsigned int its = 0;; ++its)
      {
        if (!std::isfinite(norm))
          return {false, its, "non-finite residual"};
        if (norm <= atol || (its > 0 && norm <= rtol * norm0))
          return {true, its, "residual"};
        if (its == max_it)
          return {false, its, "maximum number of iterations (|F| = " + std::to_string(norm) +
                                ", |F_0| = " + std::to_string(norm0) + ")"};
        const auto started = std::chrono::steady_clock::now();
        lu.initialize(jacobian);
        ++factorizations;
        lu.vmult(delta, residual);
        seconds_factorize +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        delta *= -1.0;
        zero_update.distribute(delta);
        ++newton_total;
        if (!std::isfinite(delta.l2_norm()))
          return {false, its + 1, "non-finite Newton step"};
        if (delta.l2_norm() <= stol * w.l2_norm())
          {
            w += delta;
            return {true, its + 1, "step size"};
          }
        // backtracking on |F|: full step first, halved until |F| decreases enough
        w0 = w;
        double lambda = 1.0;
        for (;;)
          {
            w = w0;
            w.add(lambda, delta);
            assemble(true);
            const double trial = residual.l2_norm();
            if (std::isfinite(trial) && trial <= (1.0 - 1e-4 * lambda) * norm)
              {
                norm = trial;
                break;
              }
            lambda *= 0.5;
            if (lambda < 1.0 / 1024)
              {
                w = w0;
                return {false, its + 1, "line search failed (|F| = " + std::to_string(norm) + ")"};
              }
          }
      }
  }

  template <int dim>
  double NavierStokes<dim>::max_speed() const
  {
    const Quadrature<dim> nodes(fe.base_element(0).get_unit_support_points());
    FEValues<dim> fv(mapping, fe, nodes, update_values);
    std::vector<Tensor<1, dim>> u(nodes.size());
    double speed = 0;
    for (const auto &cell : dofs.active_cell_iterators())
      {
        fv.reinit(cell);
        fv[velocity].get_function_values(w, u);
        for (const auto &v : u)
          speed = std::max(speed, v.norm());
      }
    return speed;
  }

  template <int dim>
  double NavierStokes<dim>::mean_nu() const
  {
    FEValues<dim> fv(mapping, fe, quad, update_JxW_values);
    double integral = 0, area = 0;
    for (const auto &cell : dofs.active_cell_iterators())
      {
        fv.reinit(cell);
        for (unsigned int q = 0; q < quad.size(); ++q)
          {
            integral += nu_q[cell->active_cell_index() * quad.size() + q] * fv.JxW(q);
            area += fv.JxW(q);
          }
      }
    return integral / area;
  }

  template <int dim>
  json NavierStokes<dim>::steady()
  {
    set_time(0.0);
    w = 0;
    boundary_values.distribute(w);
    convection = 0.0; // Stokes initial guess
    NewtonResult r = newton();
    if (!r.converged)
      throw std::runtime_error("the Stokes initial guess did not converge (" + r.reason + ")");
    json info = {{"stokes_iterations", r.iterations}};
    const Vector<double> stokes = w;
    convection = 1.0;
    r = newton();
    info["plain_newton"] = {{"newton_iterations", r.iterations},
                            {"converged", r.converged},
                            {"reason", r.reason}};
    if (r.converged)
      return info;

    // continuation in nu from the Stokes solution
    w = stokes;
    const double speed = max_speed();
    const auto box = spec["domain"]["bounds"];
    double length = 0;
    for (const auto &side : box)
      length = std::max(length, side[1].get<double>() - side[0].get<double>());
    const double nu_mean = mean_nu();
    if (!(nu_mean > 0))
      throw std::runtime_error("the viscosity must be positive (mean nu = " +
                               std::to_string(nu_mean) + ")");
    const double s0 =
      std::max(2.0, speed * length / (double(PDEAGENT_CONTINUATION_REYNOLDS) * nu_mean));
    const int steps = std::max(1, int(PDEAGENT_CONTINUATION_STEPS));
    std::vector<double> targets;
    for (int k = 0; k <= steps; ++k)
      targets.push_back(std::pow(s0, 1.0 - double(k) / steps));
    targets.back() = 1.0;
    Vector<double> saved = w;
    double converged_s = -1;
    int failures = 0;
    json path = json::array();
    while (!targets.empty())
      {
        const double s = targets.front();
        scale = s;
        r = newton();
        json step = {{"nu_factor", s}, {"newton_iterations", r.iterations},
                     {"converged", r.converged}};
        if (nu_constant)
          step["nu"] = s * nu_number;
        path.push_back(step);
        if (r.converged)
          {
            saved = w;
            converged_s = s;
            targets.erase(targets.begin());
            continue;
          }
        if (++failures > int(PDEAGENT_CONTINUATION_MAX_FAILURES))
          throw std::runtime_error("Newton continuation in nu failed (" + std::to_string(failures) +
                                   " failed steps; last converged nu factor " +
                                   std::to_string(converged_s) + ", failing " +
                                   std::to_string(s) + ": " + r.reason + ")");
        w = saved;
        targets.insert(targets.begin(), converged_s < 0 ? s * 4.0 : std::sqrt(converged_s * s));
      }
    scale = 1.0;
    info["continuation_path"] = path;
    return info;
  }

  template <int dim>
  json NavierStokes<dim>::transient()
  {
    const json &time = spec["pde"]["time"];
    const double t0 = time["t0"], t1 = time["t_end"];
    if (!spec.contains("ic") || !spec["ic"].is_object() || !spec["ic"].contains("velocity") ||
        spec["ic"]["velocity"].is_null())
      throw std::runtime_error("a transient Navier-Stokes case needs ic.velocity");
    check_vector(spec["ic"]["velocity"], dim, "ic.velocity");
    const auto [n_dt, dt_dt] = time_steps(spec, PDEAGENT_DT);
    (void)dt_dt;
    const unsigned int n_steps = std::max<unsigned int>(PDEAGENT_MIN_STEPS, n_dt);
    const double dt = (t1 - t0) / n_steps;

    {
      std::vector<std::string> parts;
      for (const auto &v : spec["muparser"]["ic"]["velocity"])
        parts.push_back(expression(v));
      parts.push_back("0");
      FunctionParser<dim> initial(dim + 1);
      initial.initialize(variables<dim>(true), parts, {}, true);
      initial.set_time(t0);
      VectorTools::interpolate(mapping, dofs, initial, w_n);
    }
    w_nm1 = w_n;
    time_term = true;
    convection = 1.0;
    inv_dt = 1.0 / dt;
    unsigned int max_its = 0, sum_its = 0;
    for (unsigned int n = 1; n <= n_steps; ++n)
      {
        const double t = t0 + n * dt;
        set_time(t);
        set_boundary_values(t);
        const bool second = PDEAGENT_BDF_ORDER == 2 && n >= 2;
        a0 = second ? 1.5 : 1.0;
        a1 = second ? -2.0 : -1.0;
        a2 = second ? 0.5 : 0.0;
        if (n >= 2)
          {
            w = w_n;
            w.sadd(2.0, -1.0, w_nm1); // 2 w^n - w^{n-1}
          }
        else
          w = w_n;
        if (enclosed)
          w[pinned] = 0;
        boundary_values.distribute(w);
        const NewtonResult r = newton();
        if (!r.converged)
          throw std::runtime_error("Newton failed in time step " + std::to_string(n) +
                                   " (t = " + std::to_string(t) + "): " + r.reason);
        max_its = std::max(max_its, r.iterations);
        sum_its += r.iterations;
        w_nm1 = w_n;
        w_n = w;
      }
    return {{"time_steps", n_steps},
            {"dt", dt},
            {"t_end", t1},
            {"scheme", PDEAGENT_BDF_ORDER == 2 ? "bdf2" : "backward_euler"},
            {"convection", "implicit"},
            {"newton_iterations_per_step_max", max_its},
            {"newton_iterations_per_step_mean", double(sum_its) / n_steps}};
  }

  template <int dim>
  void NavierStokes<dim>::run(const std::string &outdir)
  {
    const auto start = std::chrono::steady_clock::now();
    const double h = mesh_size(spec["domain"], PDEAGENT_RESOLUTION);
    build_mesh(spec["domain"], h, tria, tags);
    read_data();
    setup_system();
    const double seconds_setup =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    json info = time_dependent ? transient() : steady();

    if (enclosed) // pressure to zero mean
      {
        FEValues<dim> fv(mapping, fe, quad, update_values | update_JxW_values);
        std::vector<double> p(quad.size());
        double integral = 0, area = 0;
        for (const auto &cell : dofs.active_cell_iterators())
          {
            fv.reinit(cell);
            fv[pressure].get_function_values(w, p);
            for (unsigned int q = 0; q < quad.size(); ++q)
              integral += p[q] * fv.JxW(q), area += fv.JxW(q);
          }
        for (types::global_dof_index i = 0; i < w.size(); ++i)
          if (pressure_dof[i])
            w[i] -= integral / area;
      }
    const auto sampling = std::chrono::steady_clock::now();
    write_solution(outdir, spec, mapping, dofs, w, dim);
    info["seconds_setup"] = seconds_setup;
    info["seconds_output"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sampling).count();

    info["family"] = "navier_stokes";
    info["mesh_resolution"] = PDEAGENT_RESOLUTION;
    info["mesh_cells"] = tria.n_active_cells();
    info["element_degree"] = degree + 1;
    info["velocity_degree"] = degree + 1;
    info["pressure_degree"] = degree;
    info["element"] = "Taylor-Hood Q" + std::to_string(degree + 1) + "-Q" + std::to_string(degree);
    info["geometry_degree"] = PDEAGENT_GEOMETRY_DEGREE;
    info["num_dofs"] = dofs.n_dofs();
    info["pressure_null_space"] =
      enclosed ? "range projection + pinned dof + zero-mean shift" : "none";
    info["nonlinear_solver"] = "newton (backtracking line search)";
    info["newton_iterations"] = newton_total;
    info["nonlinear_solves"] = newton_solves;
    info["factorizations"] = factorizations;
    info["assemblies"] = assemblies;
    info["seconds_assemble"] = seconds_assemble;
    info["seconds_factorize"] = seconds_factorize;
    info["ksp_type"] = "preonly";
    info["pc_type"] = "lu (umfpack)";
    write_meta(outdir, start, info);
  }

  template <int dim>
  int run(const json &spec, const std::string &outdir)
  {
    NavierStokes<dim> problem(spec);
    problem.run(outdir);
    return 0;
  }

  int run3(const json &, const std::string &)
  {
    throw std::runtime_error("this Navier-Stokes program solves 2-D problems only (the "
                             "domain has 3-D bounds)");
  }
} // namespace

int main(int argc, char **argv)
{
  return pdeagent::main_program("navier_stokes", argc, argv, run<2>, run3);
}
