"""The harness side of :data:`pdeagent.contracts.python.SETTINGS_RUNNER`, for a Python
track's tests: write a single-file solver, run it in the track's runtime once per
settings entry, and read what each run wrote. Nothing here imports a FEM library."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pdeagent.contracts.python import SETTINGS_RUNNER


def run_settings(
    python: Path | str,
    source: str,
    name: str,
    case_spec: dict[str, Any],
    settings: list[dict[str, Any]],
    out: Path,
    *,
    env: Mapping[str, str],
    timeout: float = 1800,
) -> tuple[subprocess.CompletedProcess, list[dict[str, Any]]]:
    """Write ``source`` to ``out/<name>.py`` and run it with ``python`` through the
    settings runner (run ``i`` in ``out/i``); the process and its per-run JSON records."""
    out.mkdir(parents=True, exist_ok=True)
    program = out / f"{name}.py"
    program.write_text(source, encoding="utf-8")
    job = {"program": str(program), "case_spec": case_spec, "settings": settings, "out": str(out)}
    proc = subprocess.run(
        [str(python), str(SETTINGS_RUNNER)],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(env),
    )
    return proc, [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def solved_runs(
    proc: subprocess.CompletedProcess,
    records: list[dict[str, Any]],
    settings: list[dict[str, Any]],
    out: Path,
) -> list[dict[str, Any]]:
    """The records of :func:`run_settings` with each run's arrays (``arrays``, from
    ``solution.npz``) and ``meta`` (``meta.json``); raises AssertionError when the runner
    or any run failed."""
    if proc.returncode != 0:
        raise AssertionError(f"runtime runner failed:\n{proc.stderr[-4000:]}")
    assert len(records) == len(settings), proc.stdout + proc.stderr[-3000:]
    for rec in records:
        if not rec["ok"]:
            raise AssertionError(
                f"solver failed with settings {settings[rec['index']]}:\n{rec['error']}"
            )
        workdir = out / str(rec["index"])
        with np.load(workdir / "solution.npz", allow_pickle=False) as data:
            rec["arrays"] = {k: data[k] for k in data.files}
        rec["meta"] = json.loads((workdir / "meta.json").read_text())
    return records
