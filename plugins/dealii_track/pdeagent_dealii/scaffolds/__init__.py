"""Template-guided scaffolds (SPEC §8) for deal.II: runnable plumbing in C++ — the
case_spec reading, muparser expressions, meshes of every domain template, periodic and
Dirichlet constraints, grid sampling, output files — with the numerical core left to
the model. The plumbing is the track's own common library (``programs/common.h`` and
``programs/meshing.h``, inlined), the same code the calibration programs use."""

from __future__ import annotations

from importlib import resources

from pdeagent_dealii.bundle import inline_headers

PRESSURE_OUTPUT = (
    "\n// With output.pressure the pressure is an output array too (named\n"
    "// output.pressure.array; zero mean when its normalization is zero_mean, as computed\n"
    "// when absolute): keep it at FE component dim so write_solution writes it."
)
"""The flow families' note on the optional pressure output array."""

CORES = {
    "poisson": "Solve -div(kappa grad u) = f: FE_Q(p) with MappingQ(p), Dirichlet data as\n"
    "// constraints, Neumann/Robin parts as face terms (pdeagent::BoundaryData), CG + SSOR/AMG.",
    "helmholtz": "Solve -laplace(u) - k^2 u = f (indefinite: SparseDirectUMFPACK, enough\n"
    "// points per wavelength); Robin/Neumann parts as face terms.",
    "biharmonic": "Solve laplace(laplace(u)) = f with both stated boundary conditions per part\n"
    "// (mixed splitting w = -laplace(u) for u/laplacian_u data, or C0 interior penalty with\n"
    "// FEInterfaceValues for normal_derivative data).",
    "linear_elasticity": "Solve -div(sigma(u)) = f on FESystem(FE_Q(p), dim) with the stated\n"
    "// model (plane strain/stress, 3d), E and nu; traction parts as face terms.",
    "heat": "March du/dt - div(kappa grad u) = f from ic.u to t_end with an implicit\n"
    "// second-order scheme (set_time on every FunctionParser); factorise once when you can.",
    "convection_diffusion": "Solve -epsilon laplace(u) + beta.grad(u) = f (+ du/dt when\n"
    "// transient); stabilise (e.g. SUPG) when the cell Peclet number is large.",
    "reaction_diffusion": "Solve [du/dt] - epsilon laplace(u) + R(u) = f with the stated\n"
    "// reaction law by Newton's method (check the residual; fail loudly without convergence).",
    "stokes": "Solve the Stokes system on Taylor-Hood FESystem(FE_Q(2)^dim, FE_Q(1)); fix the\n"
    "// pressure constant when velocity is given on the whole boundary." + PRESSURE_OUTPUT,
    "navier_stokes": "Solve the Navier-Stokes system by Newton on Taylor-Hood elements,\n"
    "// starting from Stokes; time-dependent cases march implicitly from ic.velocity."
    + PRESSURE_OUTPUT,
}

TODO = 'throw std::runtime_error("write the numerical core");'


def scaffold(family: str, title: str) -> str:
    """The scaffold of ``family``: one C++ file that compiles as it is and fails at run
    time with "write the numerical core" until ``numerical_core`` is written."""
    if family not in CORES:
        raise KeyError(f"no deal.II scaffold for family {family!r}")
    base = resources.files(__package__).joinpath("base.cc.txt").read_text(encoding="utf-8")
    text = base.replace("{title}", title).replace("{family}", family)
    return inline_headers(text.replace("{core}", CORES[family]))
