"""Template-guided scaffolds (SPEC §8) for Firedrake: runnable plumbing, the numerical
core left to the model (one short brief per family)."""

from __future__ import annotations

from importlib import resources

PRESSURE_OUTPUT = (
    "\n    With output['pressure'] also return the pressure under the name\n"
    "    output['pressure']['array'] (zero mean when its normalization is 'zero_mean',\n"
    "    as computed when it is 'absolute')."
)
"""The flow families' note on the optional pressure output array."""

CORES = {
    "poisson": "Solve -div(kappa grad u) = f: choose a Lagrange space, impose the stated\n"
    "    Dirichlet/Neumann/Robin parts (boundary ids from build_mesh), solve, then\n"
    "    `[[u]] = sample([uh], msh, grid)` and return ({'u': u}, solver_info).",
    "helmholtz": "Solve -laplace(u) - k**2 u = f (indefinite: a direct solver, enough points\n"
    "    per wavelength), then sample u on the grid.",
    "biharmonic": "Solve laplace(laplace(u)) = f with both stated boundary conditions (mixed\n"
    "    formulation with w = -laplace(u), or C0 interior penalty with dS jumps), sample u.",
    "linear_elasticity": "Solve -div(sigma(u)) = f on a VectorFunctionSpace with the stated\n"
    "    model (plane strain/stress) and parameters; sample the components or the magnitude.",
    "heat": "March du/dt - div(kappa grad u) = f from ic.u to t_end with an implicit\n"
    "    second-order scheme; one LinearVariationalSolver, time as an fd.Constant; sample\n"
    "    u(t_end).",
    "convection_diffusion": "Solve -epsilon laplace(u) + beta.grad(u) = f (+ du/dt when\n"
    "    transient); stabilise (e.g. SUPG) when the cell Peclet number is large; sample u.",
    "reaction_diffusion": "Solve [du/dt] - epsilon laplace(u) + R(u) = f with the stated\n"
    "    reaction law by Newton (NonlinearVariationalSolver); sample u (at t_end when\n"
    "    transient).",
    "stokes": "Solve the Stokes system with an inf-sup stable pair (Taylor-Hood on a mixed\n"
    "    space); handle the pressure constant when the velocity is given on the whole\n"
    "    boundary; sample the outputs." + PRESSURE_OUTPUT,
}


def scaffold(family: str, title: str) -> str:
    if family not in CORES:
        raise KeyError(f"no Firedrake scaffold for family {family!r}")
    base = resources.files(__package__).joinpath("base.py.txt").read_text(encoding="utf-8")
    return base.format(title=title, core="    " + CORES[family])
