"""The core's own plugin: defaults every track gets unless a plugin answers first."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pdeagent import hookimpl
from pdeagent.sandbox.base import ExecutionResult
from pdeagent.stages import AdaptedOutput, Track

META_MAX_BYTES = 64 * 1024
SOLUTION_NAME = "solution.npz"
_META_KEYS = ("wall_time_sec", "status", "message")


@hookimpl(trylast=True)
def pdeagent_adapt_output(
    track: Track, workdir: Path, case_view: dict[str, Any]
) -> AdaptedOutput | None:
    """Accept a ``solution.npz`` the program wrote itself (the Python contract)."""
    path = workdir / SOLUTION_NAME
    if path.is_symlink():
        return AdaptedOutput(None, "bad_artifact", f"{SOLUTION_NAME} is a symbolic link")
    if not path.exists():
        return AdaptedOutput(None, "missing_artifact", f"no {SOLUTION_NAME} was written")
    if not path.is_file():
        return AdaptedOutput(None, "bad_artifact", f"{SOLUTION_NAME} is not a regular file")
    return AdaptedOutput(path)


def _scalar(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value[:200]
    return None


def read_meta(workdir: Path) -> dict[str, Any]:
    """``meta.json`` as hostile input: bounded size, JSON object, scalars only."""
    path = workdir / "meta.json"
    if path.is_symlink() or not path.is_file():
        return {}
    try:
        if path.stat().st_size > META_MAX_BYTES:
            return {"meta_error": "meta.json larger than 64 KiB; ignored"}
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError) as exc:
        return {"meta_error": f"unreadable meta.json: {type(exc).__name__}"}
    if not isinstance(data, dict):
        return {"meta_error": "meta.json is not a JSON object"}
    out: dict[str, Any] = {}
    for key in _META_KEYS:
        if key in data:
            out[f"reported_{key}"] = _scalar(data[key])
    info = data.get("solver_info")
    if isinstance(info, dict):
        out["solver_info"] = {
            str(k)[:64]: _scalar(v) for k, v in list(info.items())[:64] if _scalar(v) is not None
        }
    return out


@hookimpl
def pdeagent_diagnostics(
    track: Track, workdir: Path, case_view: dict[str, Any], execution: ExecutionResult
) -> dict[str, Any] | None:
    """What the solver reports about itself (never trusted for timing or verdicts)."""
    meta = read_meta(workdir)
    info = meta.get("solver_info") or {}
    dofs, steps = info.get("dofs"), info.get("time_steps") or info.get("n_steps") or 1
    if (
        isinstance(dofs, int | float)
        and isinstance(steps, int | float)
        and dofs > 0
        and execution.wall_time_sec > 0
    ):
        # SPEC §1 derived diagnostic: degrees of freedom times time steps per second,
        # from the sandbox's own wall time of this execution (not the self-report).
        meta["work_rate_dof_steps_per_sec"] = float(dofs) * float(steps) / execution.wall_time_sec
    return meta or None
