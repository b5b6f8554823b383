"""Runs on this machine: does --workers 2 change measured runtimes, what does the
harness add per case, and how many baseline cases per hour.

The same stratified DOLFINx sample is run twice with the offline baseline provider,
once with ``--workers 1`` and once with ``--workers 2`` (each worker pinned to its
own CPU, timed repeats serialized), into fresh run directories. Printed side by side
per case: the median timed runtime under each setting and their ratio, then

- harness overhead per case: the evaluation's wall time minus the solver's own
  time (accuracy run + timed repeats), plus the provider call; i.e. prompt,
  extraction, staging, sandbox setup, artifact checks, scoring and report writing;
- whole-run overhead per case (workers 1): (wall time of ``pdeagent run`` - the
  solvers' own time) / cases, which also counts the CLI start and dataset loading;
- cases per hour: cases / wall time of the whole ``pdeagent run``.

Usage (repository root, after ``bash scripts/setup-dev.sh``):

    .venv/bin/python benchmarks/run_throughput.py [--sample 12]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PDEAGENT = ROOT / ".venv" / "bin" / "pdeagent"


def run(out: Path, workers: int, sample: int) -> float:
    start = time.monotonic()
    subprocess.run(
        [str(PDEAGENT), "run", "--track", "dolfinx", "--provider", "baseline",
         "--sample", str(sample), "--workers", str(workers), "--no-cache", "--out", str(out)],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return time.monotonic() - start


def reports(out: Path) -> dict[str, dict]:
    found = {}
    for path in out.glob("*/*/*/attempt-0/report.json"):
        data = json.loads(path.read_text())
        found[data["case_id"]] = data
    return found


def overhead(r: dict) -> float:
    solver = (r["accuracy_run_wall_sec"] or 0.0) + sum(r["runtime_samples"])
    return r["evaluation_wall_sec"] - solver + (r["generation_sec"] or 0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=12)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="pdeagent-bench-"))
    try:
        wall = {w: run(scratch / f"w{w}", w, args.sample) for w in (1, 2)}
        one, two = reports(scratch / "w1"), reports(scratch / "w2")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{'case':42s} {'verdict w1/w2':>14s} {'t w1 [s]':>9s} {'t w2 [s]':>9s} {'w2/w1':>6s}")
    ratios = []
    for cid in sorted(one):
        a, b = one[cid], two[cid]
        ta, tb = a["runtime_sec"], b["runtime_sec"]
        ratio = tb / ta if ta and tb else float("nan")
        if ta and tb:
            ratios.append(ratio)
        print(
            f"{cid:42s} {a['verdict'] + '/' + b['verdict']:>14s} "
            f"{ta or float('nan'):9.3f} {tb or float('nan'):9.3f} {ratio:6.3f}"
        )
    print(
        f"\nruntime ratio w2/w1: median {statistics.median(ratios):.3f}, "
        f"min {min(ratios):.3f}, max {max(ratios):.3f} over {len(ratios)} cases"
    )
    for w, reps in ((1, one), (2, two)):
        over = [overhead(r) for r in reps.values()]
        solver_total = sum(
            (r["accuracy_run_wall_sec"] or 0.0) + sum(r["runtime_samples"]) for r in reps.values()
        )
        print(
            f"workers {w}: {len(reps)} cases in {wall[w]:.1f} s = "
            f"{3600 * len(reps) / wall[w]:.0f} cases/hour; harness overhead per case "
            f"median {statistics.median(over):.3f} s, max {max(over):.3f} s; "
            f"passes {sum(r['verdict'] == 'PASS' for r in reps.values())}/{len(reps)}"
        )
        if w == 1:
            print(
                f"  whole-run overhead per case (wall - solver time, incl. CLI start and "
                f"dataset loading): {(wall[w] - solver_total) / len(reps):.3f} s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
