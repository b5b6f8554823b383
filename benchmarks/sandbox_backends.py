"""What each sandbox backend costs: per-execution overhead and the graded runtime of the
same DOLFINx solve on local, bwrap and docker, measured side by side in one run.

1. Overhead per execution: a trivial program (``python -I -S -c pass``) run N times on
   each backend, interleaved; per run, the harness-side wall time of ``Sandbox.run``
   (world setup, launch, supervision, teardown) minus the program's own wall time (as
   the launcher measures it: what the time gate sees). Printed: medians, and each
   backend's ratio to ``local``.
2. Graded runtime: the DOLFINx calibration solver of a Poisson case graded through the
   real pipeline (accuracy run + timed repeats) on each backend, interleaved over R
   rounds. Printed: the median runtime per backend (the number compared with
   tau_time), its ratio to ``local``, and the whole evaluation's wall time.

Backends that are not available here are reported and skipped.

Usage (repository root, after ``bash scripts/setup-dev.sh``; the docker backend needs a
running dockerd and ``pdeagent env setup --sandbox docker``):

    .venv/bin/python benchmarks/sandbox_backends.py [--runs 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source
from pdeagent.plugins import load_plugins
from pdeagent.sandbox.base import Limits, SandboxRequest
from pdeagent.sandbox.launched import python_runtime_expose
from pdeagent.sandbox.select import BACKENDS, backend_status, get_sandbox

CASE_FAMILY = "poisson"


def trivial_overheads(backends: list[str], runs: int) -> dict[str, list[float]]:
    sandboxes = {name: get_sandbox(name) for name in backends}
    found: dict[str, list[float]] = {name: [] for name in backends}
    for _ in range(runs):
        for name, sandbox in sandboxes.items():
            with tempfile.TemporaryDirectory(prefix="pdeagent-bench-", dir="/var/tmp") as tmp:
                Path(tmp).chmod(0o755)
                request = SandboxRequest(
                    argv=[sys.executable, "-I", "-S", "-c", "pass"],
                    workdir=Path(tmp),
                    expose=python_runtime_expose(),
                    limits=Limits(wall_time_sec=30),
                )
                t0 = time.monotonic()
                result = sandbox.run(request)
                total = time.monotonic() - t0
            if not result.ok:
                raise SystemExit(f"{name}: the trivial program failed: {result}")
            found[name].append(total - result.wall_time_sec)
    return found


def graded_runtimes(backends: list[str], rounds: int, repeats: int) -> dict[str, list[tuple]]:
    from pdeagent_dolfinx.bundle import bundle
    from pdeagent_dolfinx.representative import representative_case

    host = load_plugins(strict=True)
    track = host.get_track("dolfinx")
    case = representative_case(CASE_FAMILY, repeats=repeats)
    source = bundle(CASE_FAMILY, None)
    found: dict[str, list[tuple]] = {name: [] for name in backends}
    for _ in range(rounds):
        for name in backends:
            with tempfile.TemporaryDirectory(prefix="pdeagent-bench-", dir="/var/tmp") as tmp:
                t0 = time.monotonic()
                report = evaluate_source(
                    host, track, case, source, sandbox=get_sandbox(name),
                    workroot=Path(tmp) / "w", thresholds=None,
                    policy=GradingPolicy(timed_repeats=repeats),
                    limits=Limits(wall_time_sec=300),
                )  # fmt: skip
                wall = time.monotonic() - t0
            if report.verdict is not None or report.runtime_sec is None:
                raise SystemExit(f"{name}: the baseline failed: {report.reason} {report.message}")
            found[name].append((report.runtime_sec, wall, report.error, case.id))
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20, help="trivial runs per backend")
    ap.add_argument("--rounds", type=int, default=3, help="graded DOLFINx runs per backend")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats per graded run")
    args = ap.parse_args()
    status = backend_status()
    backends = [b for b in reversed(BACKENDS) if status[b] is None]  # local first
    print(
        f"# machine: {platform.node()} {platform.machine()} python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    for name in BACKENDS:
        if status[name] is not None:
            print(f"# {name}: not available ({status[name]}), skipped")
    if "local" not in backends:
        raise SystemExit("the local backend is needed as the reference")

    over = trivial_overheads(backends, args.runs)
    base = statistics.median(over["local"])
    print(f"\n## overhead per execution (trivial program, {args.runs} runs each, interleaved)")
    print(f"{'backend':8s} {'median [ms]':>12s} {'p90 [ms]':>10s} {'ratio to local':>15s}")
    for name in backends:
        values = sorted(over[name])
        med = statistics.median(values)
        p90 = values[int(0.9 * (len(values) - 1))]
        print(f"{name:8s} {med * 1e3:12.1f} {p90 * 1e3:10.1f} {med / base:15.2f}")

    graded = graded_runtimes(backends, args.rounds, args.repeats)
    case_id = graded["local"][0][3]
    base = statistics.median(r[0] for r in graded["local"])
    print(
        f"\n## graded runtime of the DOLFINx baseline on {case_id} "
        f"({args.rounds} rounds x {args.repeats} timed repeats, interleaved)"
    )
    print(
        f"{'backend':8s} {'runtime median [s]':>19s} {'ratio to local':>15s} "
        f"{'evaluation wall [s]':>20s} {'rel. L2 error':>14s}"
    )
    for name in backends:
        runtime = statistics.median(r[0] for r in graded[name])
        wall = statistics.median(r[1] for r in graded[name])
        error = graded[name][0][2]
        print(f"{name:8s} {runtime:19.3f} {runtime / base:15.2f} {wall:20.2f} {error:14.3e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
