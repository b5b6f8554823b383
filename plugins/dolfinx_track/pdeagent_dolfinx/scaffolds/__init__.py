"""Template-guided scaffolds (SPEC §8): runnable plumbing, numerical core left to the model."""

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
    "    Dirichlet/Neumann/Robin parts, solve, then `axes, [[u]] = sample([uh], msh, grid)`\n"
    "    and return ({'u': u}, solver_info).",
    "helmholtz": "Solve -laplace(u) - k**2 u = f (indefinite: use a direct solver, enough\n"
    "    points per wavelength), then sample u on the grid.",
    "biharmonic": "Solve laplace(laplace(u)) = f with both stated boundary conditions (mixed\n"
    "    formulation with w = -laplace(u), or C0 interior penalty), then sample u.",
    "linear_elasticity": "Solve -div(sigma(u)) = f on a vector Lagrange space with the stated\n"
    "    model (plane strain/stress) and parameters; sample the components or the magnitude.",
    "heat": "March du/dt - div(kappa grad u) = f from ic.u to t_end with an implicit\n"
    "    second-order scheme; forms built once with time as a fem.Constant; sample u(t_end).",
    "convection_diffusion": "Solve -epsilon laplace(u) + beta.grad(u) = f (+ du/dt when\n"
    "    transient); stabilise (e.g. SUPG) when the cell Peclet number is large; sample u.",
    "reaction_diffusion": "Solve [du/dt] - epsilon laplace(u) + R(u) = f with the stated\n"
    "    reaction law by Newton (NonlinearProblem); sample u (at t_end when transient).",
    "stokes": "Solve the Stokes system with an inf-sup stable pair (Taylor-Hood); handle the\n"
    "    pressure constant when velocity is given on the whole boundary; sample the outputs."
    + PRESSURE_OUTPUT,
    "navier_stokes": "Solve the Navier-Stokes system by Newton on Taylor-Hood elements,\n"
    "    starting from Stokes (continuation in viscosity if needed); sample the outputs."
    + PRESSURE_OUTPUT,
    "burgers": "March du/dt + u (b.grad u) = nu laplace(u) + f implicitly with Newton each\n"
    "    step; forms built once; sample u(t_end).",
    "wave": "March d2u/dt2 - div(c**2 grad u) = f from ic.u, ic.u_t with a second-order\n"
    "    implicit scheme (e.g. Newmark average acceleration) and a correct start; sample u.",
}


def scaffold(family: str, title: str) -> str:
    if family not in CORES:
        raise KeyError(f"no DOLFINx scaffold for family {family!r}")
    base = resources.files(__package__).joinpath("base.py.txt").read_text(encoding="utf-8")
    return base.format(title=title, core="    " + CORES[family])
