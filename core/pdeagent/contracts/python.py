"""Helpers for tracks whose submissions follow the Python contract of SPEC §5.

A submission is one file defining ``solve(case_spec: dict) -> None`` that writes
``solution.npz`` and ``meta.json`` into its working directory. Tracks built on
this (DOLFINx, Firedrake, the sample finite-difference track) reuse the same
check, runner and invocation so the contract never drifts between them.
"""

from __future__ import annotations

import ast
import os
from importlib import resources
from pathlib import Path

from pdeagent.stages import Invocation, PrepareResult

RUNNER_NAME = "pdeagent_runner.py"
EXIT_IMPORT_ERROR = 3
EXIT_NO_ENTRY_POINT = 4
SETTINGS_RUNNER = Path(__file__).with_name("settings_runner.py")
"""For a track's tests: a script run with the track runtime's Python (``python
SETTINGS_RUNNER``, a JSON job on stdin) that runs one single-file solver with several
settings; the job and its output lines are described at the top of the script."""

CONTRACT_TEMPLATE = """\
Write ONE Python file that uses {library}. It must define

    def solve(case_spec: dict) -> None

The harness imports your file in a fresh, empty working directory and calls
`solve(case_spec)` with the case_spec shown above (already parsed from JSON).
`solve` must write, into the current working directory:

- `solution.npz` (written with `numpy.savez`), holding float arrays: `x` of shape (nx,),
  `y` of shape (ny,) (and `z` of shape (nz,) in 3-D) equal to
  `numpy.linspace(min, max, n)` over `eval_grid.bbox` per axis, and every output array
  named in the output requirements, of shape (ny, nx) (3-D: (nz, ny, nx)) with
  `u[j, i] = u(x[i], y[j])`;
- `meta.json`: {{"wall_time_sec": float, "status": "ok", "message": str (optional),
  "solver_info": {{mesh resolution, element degree, number of DOFs, time steps,
  linear/Newton iterations, ksp_type, pc_type, ...}}}}.

Return None. Do not print large amounts of output. Do not start servers, daemons or
background processes; everything must have finished when `solve` returns.
"""


def contract_text(library: str) -> str:
    """Prompt section 4 for a Python track of ``library``."""
    return CONTRACT_TEMPLATE.format(library=library)


def runner_source() -> bytes:
    return resources.files("pdeagent.contracts").joinpath("python_runner.py").read_bytes()


def check_source(source: str, filename: str) -> str | None:
    """Static check in the harness (parsing only, nothing executed).

    Returns an error message, or None when the file parses and defines ``solve``
    at module level.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        return f"{filename}:{exc.lineno}:{exc.offset}: SyntaxError: {exc.msg}"
    except ValueError as exc:  # e.g. null bytes
        return f"{filename}: {exc}"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "solve":
            return None
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "solve" for t in node.targets
        ):
            return None
    return f"{filename}: no top-level `solve(case_spec)` function is defined"


def prepare_python(source: str, build_dir: Path, filename: str) -> PrepareResult:
    """The import stage of a Python track: static check, then store the source."""
    build_dir.mkdir(parents=True, exist_ok=True)
    problem = check_source(source, filename)
    if problem is not None:
        return PrepareResult(
            ok=False, build_dir=build_dir, reason="import_error", message=problem, log=problem
        )
    (build_dir / filename).write_text(source, encoding="utf-8")
    return PrepareResult(ok=True, build_dir=build_dir)


def python_invocation(
    python: Path,
    *,
    filename: str,
    expose: list[Path] | None = None,
    env: dict[str, str] | None = None,
) -> Invocation:
    """Run the contract runner with ``python`` on the submission ``filename``."""
    base_env = {
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
    }
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # machine-specific BLAS safety
        if var in os.environ:
            base_env[var] = os.environ[var]
    base_env.update(env or {})
    return Invocation(
        argv=[str(python), RUNNER_NAME, filename],
        env=base_env,
        expose=list(expose or []),
        files={RUNNER_NAME: runner_source()},
        exit_code_reasons={EXIT_IMPORT_ERROR: "import_error", EXIT_NO_ENTRY_POINT: "import_error"},
    )
