"""Provisioning and checking the DOLFINx runtime environment (``env setup`` / ``doctor``).

The runtime is a separate Python >= 3.12 virtual environment with the pinned
packages of ``runtime-requirements.txt``; solvers run there inside the sandbox.
The harness itself never imports dolfinx: checks run the runtime's interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from pdeagent.stages import DoctorCheck, TrackUnavailable

LIBRARY_VERSION_PREFIX = "0.11."

IMPORT_PROBE = textwrap.dedent(
    """
    import json
    from mpi4py import MPI
    import dolfinx, gmsh, numpy, scipy, sympy, ufl, basix
    print(json.dumps({"dolfinx": dolfinx.__version__, "gmsh": gmsh.__version__,
                      "numpy": numpy.__version__, "scipy": scipy.__version__,
                      "sympy": sympy.__version__}))
    """
)

SOLVE_PROBE = textwrap.dedent(
    """
    import json
    import numpy as np
    import ufl
    from mpi4py import MPI
    from dolfinx import fem, mesh
    from dolfinx.fem.petsc import LinearProblem

    msh = mesh.create_unit_square(MPI.COMM_WORLD, 8, 8)
    V = fem.functionspace(msh, ("Lagrange", 2))
    x = ufl.SpatialCoordinate(msh)
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    msh.topology.create_connectivity(1, 2)
    dofs = fem.locate_dofs_topological(V, 1, mesh.exterior_facet_indices(msh.topology))
    bc = fem.dirichletbc(fem.Constant(msh, 0.0), dofs, V)
    problem = LinearProblem(
        ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx, 2.0 * ufl.pi**2 * ufl.sin(ufl.pi * x[0])
        * ufl.sin(ufl.pi * x[1]) * v * ufl.dx, bcs=[bc], petsc_options_prefix="doctor_",
        petsc_options={"ksp_type": "preonly", "pc_type": "lu"})
    uh = problem.solve()
    exact = ufl.sin(ufl.pi * x[0]) * ufl.sin(ufl.pi * x[1])
    err = fem.assemble_scalar(fem.form((uh - exact) ** 2 * ufl.dx)) ** 0.5
    print(json.dumps({"l2_error": float(err)}))
    """
)


LISTED_PACKAGES = (
    "dolfinx-solver-real", "fenics-basix", "fenics-ffcx", "fenics-ufl", "gmsh", "mpi4py",
    "numpy", "scipy", "sympy",
)  # fmt: skip
"""The distributions the prompt names (runtime_packages.json ``packages``); the rest of the
runtime (cffi, setuptools, mpmath, ...) is recorded as ``dependencies``."""


def runtime_packages(python: Path) -> dict[str, Any]:
    """The runtime manifest, asked from the interpreter ``python`` (the closure of the
    pinned requirements; packages installed into the venv by hand do not count)."""
    from pdeagent.runtime_packages import python_runtime_manifest

    return python_runtime_manifest(
        "dolfinx", python, runtime_env(python), roots=requirements(), listed=LISTED_PACKAGES
    )


def requirements() -> list[str]:
    text = resources.files(__package__).joinpath("runtime-requirements.txt").read_text()
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def runtime_env(python: Path) -> dict[str, str]:
    """Environment for running the runtime interpreter outside the sandbox."""
    lib = python.parent.parent / "lib"
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/tmp"),
        "LD_LIBRARY_PATH": str(lib),
        "OMP_NUM_THREADS": "1",
    }


def _run_probe(python: Path, code: str, timeout: float = 300) -> tuple[bool, str]:
    try:
        proc = subprocess.run(
            [str(python), "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=runtime_env(python),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    if proc.returncode != 0:
        return False, (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
    return True, proc.stdout.strip().splitlines()[-1]


def doctor(python: Path, venv: Path) -> list[DoctorCheck]:
    """What is present and how to fix what is not."""
    setup_hint = "run `pdeagent env setup dolfinx`"
    checks = [
        DoctorCheck(
            "runtime interpreter",
            python.exists(),
            str(python),
            None if python.exists() else setup_hint,
        )
    ]
    if not python.exists():
        return checks
    ok, out = _run_probe(python, IMPORT_PROBE)
    versions = json.loads(out) if ok else {}
    checks.append(
        DoctorCheck(
            "imports (mpi4py, dolfinx, gmsh, numpy, scipy, sympy)",
            ok,
            out if ok else f"import failed: {out}",
            None if ok else f"{setup_hint} --force",
        )
    )
    if not ok:
        return checks
    version = versions.get("dolfinx", "")
    right = version.startswith(LIBRARY_VERSION_PREFIX)
    checks.append(
        DoctorCheck(
            "DOLFINx version",
            right,
            version,
            None if right else f"the track is written for 0.11; {setup_hint} --force",
        )
    )
    ok, out = _run_probe(python, SOLVE_PROBE)
    solved = ok and json.loads(out).get("l2_error", 1.0) < 1e-3
    checks.append(
        DoctorCheck(
            "P2 Poisson smoke solve",
            solved,
            out,
            None if solved else "the runtime cannot solve a small problem: reinstall it",
        )
    )
    checks.append(_sandbox_check(python))
    return checks


def _sandbox_check(python: Path) -> DoctorCheck:
    """The smoke solve again, inside the sandbox the harness runs submissions in."""
    from pdeagent.sandbox import SandboxError, default_sandbox, python_runtime_expose
    from pdeagent.sandbox.base import Limits, SandboxRequest

    name = "smoke solve inside the sandbox"
    with tempfile.TemporaryDirectory(prefix="pdeagent-doctor-", dir="/var/tmp") as tmp:
        workdir = Path(tmp)
        (workdir / "probe.py").write_text(SOLVE_PROBE)
        env = runtime_env(python)
        env["HOME"] = str(workdir)
        env["XDG_CACHE_HOME"] = str(workdir / ".cache")
        try:
            result = default_sandbox().run(
                SandboxRequest(
                    argv=[str(python), "probe.py"],
                    workdir=workdir,
                    env=env,
                    expose=python_runtime_expose(python),
                    limits=Limits(wall_time_sec=300),
                )
            )
        except SandboxError as exc:
            return DoctorCheck(name, False, str(exc), "see `pdeagent` sandbox requirements")
    ok = result.ok and '"l2_error"' in result.stdout
    detail = result.stdout.strip()[-200:] if ok else (result.stderr.strip()[-300:] or "failed")
    return DoctorCheck(name, ok, detail, None if ok else "the sandbox cannot run the runtime")


def _base_python() -> Path:
    """An interpreter >= 3.12 to create the runtime venv from (the harness's own base)."""
    candidates = [os.environ.get("PDEAGENT_PYTHON"), getattr(sys, "_base_executable", None)]
    candidates += [shutil.which("python3.12")]
    for cand in candidates:
        if not cand:
            continue
        try:
            out = subprocess.run(
                [cand, "-c", "import sys; print(sys.version_info >= (3, 12))"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip() == "True":
            return Path(cand)
    raise TrackUnavailable("no Python >= 3.12 found for the DOLFINx runtime (set PDEAGENT_PYTHON)")


def setup(
    venv: Path, *, force: bool, log: Callable[[str], None], update_pins: bool = False
) -> None:
    """Create (or reuse) the runtime venv and install the requirements into it under the
    committed pins (``runtime_packages.json``), so every build holds the same versions.

    ``update_pins`` builds a fresh venv from the newest versions the requirements allow
    instead (the caller then writes the new manifest, pins included)."""
    from pdeagent.runtime_packages import ManifestError, load_pins, write_constraints
    from pdeagent_dolfinx import TRACK

    pins: list[str] | None = None
    if not update_pins:
        try:
            pins = load_pins(TRACK)
        except ManifestError as exc:
            raise TrackUnavailable(str(exc)) from None
    python = venv / "bin" / "python"
    if (force or update_pins) and venv.exists():
        log(f"removing {venv}")
        shutil.rmtree(venv)
    if not python.exists():
        base = _base_python()
        log(f"creating the virtual environment {venv} with {base}")
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(base), "-m", "venv", str(venv)], check=True)
    reqs = requirements()
    how = f"under {len(pins)} pins" if pins is not None else "at the newest allowed versions"
    log(f"installing {', '.join(reqs)} ({how})")
    with tempfile.TemporaryDirectory() as tmp:
        req_file = Path(tmp) / "requirements.txt"
        req_file.write_text("\n".join(reqs) + "\n")
        argv = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                "-r", str(req_file)]  # fmt: skip
        if pins is not None:
            argv += ["-c", str(write_constraints(pins, Path(tmp) / "pins.txt"))]
        proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise TrackUnavailable(
            "pip could not install the DOLFINx runtime: "
            + (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        )
