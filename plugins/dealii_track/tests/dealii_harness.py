"""Shared pieces of the deal.II track tests."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from pdeagent.testing import require_runtime, runtime_missing

PROGRAMS = Path(__file__).parent / "programs"
TRACK_HEADERS = Path(__file__).resolve().parents[1] / "pdeagent_dealii" / "programs"
"""The track's own headers (meshing.h, common.h), for test drivers that include them."""


def compile_driver(name: str, build: Path) -> Path:
    """Compile the test driver ``programs/<name>.cc`` (it may include the track's
    headers) with the track's toolchain into ``build``; returns the binary."""
    import subprocess
    import time

    from pdeagent_dealii import compile_argv

    argv = compile_argv(toolchain(), str(PROGRAMS / f"{name}.cc"), name)
    argv.insert(1, f"-I{TRACK_HEADERS}")
    start = time.monotonic()
    result = subprocess.run(
        argv, cwd=build, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-4000:]
    print(f"{name} compiled in {time.monotonic() - start:.1f} s")
    return build / name


def toolchain() -> dict[str, Any]:
    """The set-up deal.II toolchain; skip the test without it, unless
    $PDEAGENT_REQUIRE_RUNTIMES=1 (CI), where a missing toolchain fails it."""
    from pdeagent_dealii.environment import load_toolchain

    tc = require_runtime(load_toolchain)
    if not Path(tc["pch_header"] + ".gch").is_file():
        runtime_missing("the deal.II precompiled header is missing: pdeagent env setup dealii")
    return tc


def require_dolfinx() -> None:
    """Skip without the DOLFINx runtime, unless $PDEAGENT_REQUIRE_RUNTIMES=1 (CI)."""
    from pdeagent_dolfinx import runtime_python

    require_runtime(runtime_python)


DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v1.jsonl"


class Setup:
    """The plugin host, the deal.II track and the dataset, for a test module."""

    def __init__(self) -> None:
        from pdeagent.cases.io import load_cases
        from pdeagent.plugins import load_plugins

        toolchain()
        self.host = load_plugins(strict=True)
        self.track = self.host.get_track("dealii")
        self.cases = load_cases(DATASET)

    def prepare(self, source: str, build_dir: Path):
        """The track's own compile stage on ``source`` into ``build_dir`` (created if
        needed): the binary, a bundle's run-time settings, the stage's result."""
        from pdeagent.sandbox import default_sandbox

        build_dir.mkdir(parents=True, exist_ok=True)
        return self.host.call_track_hook(
            self.track, "pdeagent_prepare", source=source, build_dir=build_dir,
            sandbox=default_sandbox(), hide=[],
        )  # fmt: skip

    def case(self, case_id: str):
        return next(c for c in self.cases if c.id == case_id)

    def calibration_source(self, case) -> str:
        from pdeagent.cases.agent_view import agent_view

        return self.host.hook.pdeagent_calibration_source(
            track=self.track, case_view=agent_view(case, "dealii"), calibration_config=None
        )

    def grade(self, case, source: str, *, tau_acc: float = 0.05, keep: Path | None = None):
        """The pipeline's report for ``source`` on ``case`` (compiled in the sandbox, run,
        adapted, graded against the case's exact or reference solution with ``tau_acc``).
        With ``keep``, the evaluation directory is ``keep`` and stays (for the solution
        arrays)."""
        from pdeagent.evaluation.pipeline import (
            GradingPolicy,
            evaluate_source,
            resolve_thresholds,
        )
        from pdeagent.sandbox import default_sandbox

        policy = GradingPolicy(tau_acc=tau_acc, tau_time=600.0, timed_repeats=1)

        def run(workroot: Path):
            return evaluate_source(
                self.host, self.track, case, source,
                sandbox=default_sandbox(), workroot=workroot,
                thresholds=resolve_thresholds(case, self.track.name, policy), policy=policy,
                dataset_dir=DATASET.parent,
            )  # fmt: skip

        if keep is not None:
            return run(keep)
        with tempfile.TemporaryDirectory(prefix="pdeagent-dealii-", dir="/var/tmp") as tmp:
            return run(Path(tmp) / "eval")


def failure(report) -> tuple:
    """What to show when a report is not the expected verdict."""
    return (report.verdict, report.reason, report.error, report.message,
            report.stderr_excerpt[-1500:])  # fmt: skip
