"""Navier-Stokes: (u . grad) u - nu laplace(u) + grad(p) = f, div(u) = 0, steady or
transient (du/dt added when ``pde.time`` is given; initial velocity ``ic.velocity``).

Boundary conditions (``quantity``): ``velocity`` Dirichlet u = g; ``traction`` Neumann
nu du/dn - p n = g; ``pressure`` (as Dirichlet or Neumann entry) nu du/dn - p n = -g n;
boundary parts not named carry the natural condition nu du/dn - p n = 0.

Taylor-Hood elements: setting ``degree`` k gives continuous P(k+1) velocity and P(k)
pressure, on meshes of geometry degree ``geometry_degree``.  Weak form
``(du/dt, v) + ((grad u) u, v) + (grad u, grad(nu v)) - (p, div v) - (q, div u)
= (f, v) + natural terms``; every nonlinear system is solved by Newton's method (PETSc
SNES, backtracking line search, MUMPS).  The forms are compiled once: time, time-step
coefficients, a continuation factor on nu and a convection switch are ``fem.Constant``.

Steady: Newton starts from the Stokes solution (the same residual with the convection
switched off).  When it fails (``continuation="auto"``; ``"always"`` forces the path),
Newton is restarted from the Stokes solution on a geometric sequence nu_k = s_k nu,
s_0 = max(2, U L / (Re_start nu)) (U the largest Stokes velocity, L the bounding-box
size), ``continuation_steps`` values down to nu; a failing step is bisected (in log s)
from the last converged state; after ``continuation_max_failures`` failures the solver
raises.

Transient: BDF2 (first step backward Euler) or backward Euler, data at the new time
level; ``convection="implicit"`` solves the fully implicit step by Newton,
``"extrapolated"`` convects with u* = 2 u^n - u^{n-1} (u^n on the first step), a linear
Oseen step per time step (one Newton iteration).

Pressure null space (velocity prescribed on the whole boundary): as in stokes.py, the
residual's pressure rows are projected to zero sum (the range of the singular
Jacobian), one pressure degree of freedom is pinned to zero during the solves and the
pressure is shifted to zero mean afterwards.

Known limitation: inflow through a traction/pressure boundary at small nu can make the
steady problem non-unique (no backflow stabilisation is added, since it would change the
stated boundary condition); Newton then converges to whichever branch it reaches.
"""

import math
import time
from types import SimpleNamespace

import numpy as np
import ufl
from dolfinx import fem
from petsc4py import PETSc

from ._common import (
    DIRECT,
    fem_petsc,
    merged_settings,
    parameter,
    time_interval,
    to_numpy,
    write_solution,
)
from ._flow import (
    _NULL_SPACE,
    _flow_boundary,
    _flow_domain,
    _flow_forcing,
    _flow_space,
    _FlowOutput,
    _pressure_pin,
    _ZeroMean,
)
from ._ufl_families import _flow_quadrature

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 24,  # cells across the longest side of the bounding box (2-D)
    "resolution_3d": 8,  # the same for 3-D domains (MUMPS memory)
    "degree": 1,  # pressure degree k: Taylor-Hood P(k+1)-P(k)
    "geometry_degree": 2,  # curved boundaries: 2 = second-order geometry
    "dt": 0.05,  # transient: largest time step (shrunk to divide t_end - t0)
    "min_steps": 10,  # transient: at least this many time steps
    "scheme": "bdf2",  # transient: "bdf2" or "backward_euler"
    "convection": "implicit",  # transient: "implicit" (Newton) or "extrapolated"
    "newton_rtol": 1e-10,
    "newton_atol": 1e-12,
    "newton_stol": 1e-12,
    "newton_max_it": 15,
    "continuation": "auto",  # steady: "auto", "always" or "never"
    "continuation_steps": 6,
    "continuation_reynolds": 10.0,  # Reynolds number U L / nu of the first step
    "continuation_max_failures": 12,
    "petsc_options": None,  # extra SNES/KSP options (default: MUMPS LU)
}
REFERENCE = {
    **DEFAULTS,
    "resolution": 64,
    "resolution_3d": 12,
    "degree": 2,
    "dt": 0.005,
    "min_steps": 100,
    "newton_rtol": 1e-12,
    "newton_atol": 1e-13,
    "newton_max_it": 25,
}


class _Newton:
    """Newton (PETSc SNES) on ``F(w; v) = 0`` with the forms compiled once."""

    def __init__(self, F, w, bcs, cfg, pin=None, p_dofs=None):
        options = {
            "snes_type": "newtonls",
            "snes_linesearch_type": "bt",
            "snes_rtol": cfg["newton_rtol"],
            "snes_atol": cfg["newton_atol"],
            "snes_stol": cfg["newton_stol"],
            "snes_max_it": int(cfg["newton_max_it"]),
            **DIRECT,
        }
        options.update(cfg["petsc_options"] or {})
        self.problem = fem_petsc.NonlinearProblem(
            F, w, bcs=bcs, petsc_options_prefix="pdeagent_ns_", petsc_options=options
        )
        if pin is not None:
            self._project_residual(w, [bc for bc in bcs if bc is not pin], p_dofs)
        self.w = w
        self.total_iterations = 0
        self.linear_iterations = 0
        self.solves = 0

    def _project_residual(self, w, velocity_bcs, p_dofs):
        """Enclosed flow: residual projected onto the range of the singular operator."""
        problem = self.problem
        pinned = p_dofs[0]

        def residual(snes, x, b):
            fem_petsc.assemble_residual(snes, x, b, w, problem.F, problem.J, velocity_bcs)
            values = b.getArray()
            values[p_dofs] -= values[p_dofs].mean()
            values[pinned] = x.getArray(readonly=True)[pinned]

        problem.solver.setFunction(residual, problem.b)

    def solve(self):
        """One Newton solve from the current state: (converged, iterations, reason)."""
        snes = self.problem.solver
        try:
            self.problem.solve()
        except PETSc.Error:
            return False, int(snes.getIterationNumber()), "PETSc error"
        its = int(snes.getIterationNumber())
        reason = int(snes.getConvergedReason())
        self.total_iterations += its
        self.linear_iterations += int(snes.getLinearSolveIterations())
        self.solves += 1
        ok = reason > 0 and bool(np.all(np.isfinite(self.w.x.array)))
        return ok, its, reason

    def info(self):
        ksp = self.problem.solver.getKSP()
        return {
            "snes_type": self.problem.solver.getType(),
            "ksp_type": ksp.getType(),
            "pc_type": ksp.getPC().getType(),
            "newton_iterations": self.total_iterations,
            "linear_iterations": self.linear_iterations,
            "nonlinear_solves": self.solves,
        }


def _continuation(newton, w, scale, s0, cfg, nu_value):
    """Newton on nu_k = s_k nu, s_k geometric from s0 down to 1, from the state in ``w``
    (the Stokes solution); failing steps are bisected from the last converged state."""
    steps = max(1, int(cfg["continuation_steps"]))
    targets = [s0 ** (1.0 - k / steps) for k in range(steps + 1)]
    targets[-1] = 1.0
    saved = w.x.array.copy()
    converged_s = None
    failures = 0
    path = []
    while targets:
        s = targets[0]
        scale.value = s
        ok, its, reason = newton.solve()
        step = {"nu_factor": s, "newton_iterations": its, "converged": ok}
        if nu_value is not None:
            step["nu"] = s * nu_value
        path.append(step)
        if ok:
            saved[:] = w.x.array
            converged_s = s
            targets.pop(0)
            continue
        failures += 1
        if failures > int(cfg["continuation_max_failures"]):
            raise RuntimeError(
                f"Newton continuation in nu failed ({failures} failed steps; last "
                f"converged nu factor {converged_s}, failing {s}, SNES reason {reason})"
            )
        w.x.array[:] = saved
        w.x.scatter_forward()
        # restart closer to the last converged state (or further from the target)
        targets.insert(0, s * 4.0 if converged_s is None else math.sqrt(converged_s * s))
    return path


def _constant_value(params, name):
    value = params.get(name)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


# ------------------------------------------------------------------------------- solver


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    if cfg["continuation"] not in ("auto", "always", "never"):
        raise ValueError(f"continuation must be auto, always or never: {cfg['continuation']!r}")
    pde = case_spec["pde"]
    params = pde.get("params") or {}
    interval = time_interval(case_spec)
    if interval is not None:
        _check_transient_settings(cfg, case_spec, interval)
    domain, resolution = _flow_domain(case_spec, cfg)
    msh = domain.msh
    W, p_dofs = _flow_space(msh, cfg["degree"])
    w = fem.Function(W)
    u, p = ufl.split(w)
    v, q = ufl.TestFunctions(W)
    t = fem.Constant(msh, PETSc.ScalarType(interval[0] if interval else 0.0))
    t_arg = t if interval else None
    nu = parameter(params, "nu", msh, t_arg)
    scale = fem.Constant(msh, PETSc.ScalarType(1.0))  # continuation factor on nu
    f = _flow_forcing(pde, msh, t_arg, params)
    metadata = _flow_quadrature(cfg["degree"])
    dxq = ufl.dx(metadata=metadata)
    dirichlet, natural, enclosed = _flow_boundary(
        W, domain, case_spec["bc"], v, t_arg, params, metadata
    )
    bcs = [d.bc for d in dirichlet]
    pin = None
    if enclosed:
        pin = _pressure_pin(W, p_dofs)
        bcs.append(pin)
    # F = convection + rest; the time derivative is added by _transient
    rest = (
        ufl.inner(ufl.grad(u), ufl.grad(scale * nu * v)) * dxq
        - p * ufl.div(v) * ufl.dx
        - q * ufl.div(u) * ufl.dx
        - ufl.inner(f, v) * dxq
        - natural
    )
    flow = SimpleNamespace(
        msh=msh,
        domain=domain,
        W=W,
        w=w,
        u=u,
        v=v,
        p_dofs=p_dofs,
        t=t,
        nu=nu,
        scale=scale,
        rest=rest,
        dirichlet=dirichlet,
        bcs=bcs,
        pin=pin,
        params=params,
    )
    if interval is None:
        info, newton = _steady(flow, cfg)
    else:
        info, newton = _transient(flow, cfg, case_spec, interval)
    info = {
        "family": "navier_stokes",
        "resolution": resolution,
        "degree": cfg["degree"],
        "velocity_degree": cfg["degree"] + 1,
        "pressure_degree": cfg["degree"],
        "element": f"Taylor-Hood P{cfg['degree'] + 1}-P{cfg['degree']}",
        "geometry_degree": cfg["geometry_degree"],
        "dofs": W.dofmap.index_map.size_global,
        "cells": msh.topology.index_map(msh.topology.dim).size_global,
        "pressure_null_space": _NULL_SPACE if enclosed else "none",
        **info,
        **newton.info(),
    }
    if enclosed:
        _ZeroMean(msh, w, p_dofs).apply()
    fields = _FlowOutput(W).update(w).fields(case_spec)
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)


def _steady(flow, cfg):
    conv = fem.Constant(flow.msh, PETSc.ScalarType(0.0))  # 0: Stokes, 1: Navier-Stokes
    F = conv * ufl.inner(ufl.grad(flow.u) * flow.u, flow.v) * ufl.dx + flow.rest
    newton = _Newton(F, flow.w, flow.bcs, cfg, flow.pin, flow.p_dofs)
    w = flow.w
    ok, its, reason = newton.solve()
    if not ok:
        raise RuntimeError(f"the Stokes initial guess did not converge (SNES reason {reason})")
    out = {"stokes_iterations": its}
    conv.value = 1.0
    stokes = w.x.array.copy()
    if cfg["continuation"] != "always":
        ok, its, reason = newton.solve()
        out["plain_newton"] = {"newton_iterations": its, "converged": ok, "reason": reason}
        if ok:
            return out, newton
        if cfg["continuation"] == "never":
            raise RuntimeError(f"Newton from the Stokes solution failed (SNES reason {reason})")
        w.x.array[:] = stokes
        w.x.scatter_forward()
    msh = flow.msh
    speed = _FlowOutput(flow.W).update(w).max_speed()  # w holds the Stokes solution
    length = max(hi - lo for lo, hi in flow.domain.bbox)
    nu_mean = fem.assemble_scalar(fem.form(flow.nu * ufl.dx)) / fem.assemble_scalar(
        fem.form(fem.Constant(msh, 1.0) * ufl.dx)
    )
    if not nu_mean > 0:
        raise ValueError(f"the viscosity must be positive (mean nu = {nu_mean})")
    s0 = max(2.0, speed * length / (float(cfg["continuation_reynolds"]) * nu_mean))
    out["continuation_path"] = _continuation(
        newton, w, flow.scale, s0, cfg, _constant_value(flow.params, "nu")
    )
    flow.scale.value = 1.0
    return out, newton


def _check_transient_settings(cfg, case_spec, interval):
    if cfg["scheme"] not in ("bdf2", "backward_euler"):
        raise ValueError(f"unknown time scheme {cfg['scheme']!r} (bdf2, backward_euler)")
    if cfg["convection"] not in ("implicit", "extrapolated"):
        raise ValueError(f"unknown convection treatment {cfg['convection']!r}")
    if not float(cfg["dt"]) > 0:
        raise ValueError(f"dt must be positive, got {cfg['dt']!r}")
    ic = case_spec.get("ic") or {}
    if ic.get("velocity") is None:
        raise KeyError("a transient Navier-Stokes case needs ic.velocity")
    if not interval[1] > interval[0]:
        raise ValueError(f"empty time interval {list(interval)}")


def _transient(flow, cfg, case_spec, interval):
    t0, t1 = interval
    n_steps = max(int(cfg["min_steps"]), math.ceil((t1 - t0) / float(cfg["dt"]) - 1e-9), 1)
    dt_value = (t1 - t0) / n_steps
    msh, u, v, w = flow.msh, flow.u, flow.v, flow.w
    gdim = msh.geometry.dim
    velocity0 = case_spec["ic"]["velocity"]
    if not isinstance(velocity0, (list, tuple)) or len(velocity0) != gdim:
        raise ValueError(f"ic.velocity must be a list of {gdim} component expressions")
    initial = to_numpy(velocity0, flow.params)
    # history as mixed-space Functions (their pressure blocks are unused)
    w_n, w_nm1, w_star = fem.Function(flow.W), fem.Function(flow.W), fem.Function(flow.W)
    w_n.sub(0).interpolate(lambda X: initial(X, t0))
    w_nm1.x.array[:] = w_n.x.array
    u_n, u_nm1, u_star = (ufl.split(f)[0] for f in (w_n, w_nm1, w_star))
    dt = fem.Constant(msh, PETSc.ScalarType(dt_value))
    a0, a1, a2 = (fem.Constant(msh, PETSc.ScalarType(c)) for c in (1.0, -1.0, 0.0))
    implicit = fem.Constant(msh, PETSc.ScalarType(1.0 if cfg["convection"] == "implicit" else 0.0))
    b = implicit * u + (1.0 - implicit) * u_star  # convecting velocity
    F = (
        ufl.inner((a0 * u + a1 * u_n + a2 * u_nm1) / dt, v) * ufl.dx
        + ufl.inner(ufl.grad(u) * b, v) * ufl.dx
        + flow.rest
    )
    newton = _Newton(F, w, flow.bcs, cfg, flow.pin, flow.p_dofs)
    iterations = []
    for n in range(1, n_steps + 1):
        flow.t.value = t0 + n * dt_value
        for data in flow.dirichlet:
            data.update()
        second = cfg["scheme"] == "bdf2" and n >= 2
        a0.value, a1.value, a2.value = (1.5, -2.0, 0.5) if second else (1.0, -1.0, 0.0)
        if n >= 2:
            w_star.x.array[:] = 2.0 * w_n.x.array - w_nm1.x.array
        else:
            w_star.x.array[:] = w_n.x.array
        w.x.array[:] = w_star.x.array  # initial guess (the pinned pressure dof stays 0)
        w.x.scatter_forward()
        ok, its, reason = newton.solve()
        if not ok:
            raise RuntimeError(
                f"Newton failed in time step {n} (t = {float(flow.t.value):.6g}, "
                f"SNES reason {reason})"
            )
        iterations.append(its)
        w_nm1.x.array[:] = w_n.x.array
        w_n.x.array[:] = w.x.array
    out = {
        "time_steps": n_steps,
        "dt": dt_value,
        "scheme": cfg["scheme"],
        "convection": cfg["convection"],
        "t_end": t1,
        "newton_iterations_per_step_max": max(iterations),
        "newton_iterations_per_step_mean": float(np.mean(iterations)),
    }
    return out, newton
