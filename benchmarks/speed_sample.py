"""How well a speed sample predicts the time thresholds of cases it did not time (issue #33
item 8, rule ``speed-sample-1``).

    python benchmarks/speed_sample.py -t dolfinx [--sample 20] [--held-out 20] [--busy-core]

Takes the track's manufactured-solution cases with a current frontier entry in the store
(``cases/frontier/<track>/``, their shipped thresholds and chosen configuration as
``pdeagent cases frontier --apply`` writes them), draws a stratified sample and a disjoint
stratified held-out set, and on this machine:

1. measures the speed sample (:func:`pdeagent.evaluation.calibration.measure_speed_sample`:
   the null program once, each sampled case's shipped baseline under the pristine
   protocol) and its ratio;
2. calibrates each held-out case in full (:func:`calibrate_case`, the same protocol), and
   compares its measured ``t_base`` and ``tau_time`` with the ones the speed sample
   predicts for it (:func:`pdeagent.evaluation.speed_sample.moved`).

Prints one row per held-out case and the median and largest relative errors. With
``--busy-core`` a process spinning on one core runs for the whole measurement (the
machine "with one core busy"). Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs

from pdeagent.cases.frontier_thresholds import DEFAULT_STORE, read_stored, store_key
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case, Thresholds, converter
from pdeagent.cases.selection import stratified_sample
from pdeagent.evaluation.calibration import calibrate_case, measure_speed_sample
from pdeagent.evaluation.null import NullTiming
from pdeagent.evaluation.speed_sample import moved
from pdeagent.plugins import load_plugins
from pdeagent.sandbox.select import get_sandbox
from pdeagent.stages import Track

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "cases" / "pdeagent-v2-records.jsonl"


def shipped_cases(track: Track, records: Path, store: Path) -> list[Case]:
    """The manufactured cases with a stored frontier result, as the apply step ships them."""
    out = []
    for case in load_cases(records):
        if (
            track.name not in case.supported_libraries
            or case.evaluation_metadata.construction_method != "manufactured_solution"
        ):
            continue
        stored = read_stored(store, track, case.id, None)
        if not stored or not stored.get("thresholds"):
            continue
        th = stored["thresholds"]
        meta = attrs.evolve(
            case.evaluation_metadata,
            thresholds={track.name: converter.structure(th, Thresholds)},
            calibration_config={
                **(case.evaluation_metadata.calibration_config or {}),
                track.name: th["selection"]["config"],
            },
        )
        out.append(attrs.evolve(case, evaluation_metadata=meta))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-t", "--track", required=True)
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--held-out", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--busy-core", action="store_true")
    parser.add_argument("--sandbox", default=None)
    parser.add_argument("--cases-file", type=Path, default=RECORDS)
    parser.add_argument("--store", type=Path, default=ROOT / DEFAULT_STORE)
    parser.add_argument("--json", type=Path, help="Also write the rows and summary here.")
    args = parser.parse_args(argv)

    host = load_plugins()
    track = host.get_track(args.track)
    pool = shipped_cases(track, args.cases_file, args.store)
    sample = stratified_sample(pool, args.sample, args.seed)
    taken = {c.id for c in sample}
    held = stratified_sample([c for c in pool if c.id not in taken], args.held_out, args.seed + 1)
    for case in [*sample, *held]:
        if read_stored(args.store, track, case.id, store_key(host, track, case)) is None:
            print(f"{case.id}: its stored entry is stale; measure it first", file=sys.stderr)
            return 2
    sandbox = get_sandbox(args.sandbox)
    busy = None
    if args.busy_core:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="pdeagent-speed-", dir="/var/tmp") as tmp:
            speed = measure_speed_sample(
                host, track, sample, sandbox=sandbox, workroot=Path(tmp) / "sample",
                dataset_dir=args.cases_file.parent, seed=args.seed,
                progress=lambda stage, i, n: print(f"[{i}/{n}] {stage}", file=sys.stderr),
            )  # fmt: skip
            null = NullTiming(t_null=speed.t_null, samples=())
            rows = []
            for i, case in enumerate(held):
                print(f"[{i}/{len(held)}] held out: {case.id}", file=sys.stderr)
                shipped = case.evaluation_metadata.thresholds[track.name]
                here = calibrate_case(
                    host, track, case, sandbox=sandbox, workroot=Path(tmp) / f"held-{i}",
                    dataset_dir=args.cases_file.parent, null=null, protocol=shipped.protocol,
                )  # fmt: skip
                predicted = moved(shipped, speed, case.evaluation_config)
                rows.append(
                    {
                        "case": case.id,
                        "shipped_t_base": shipped.t_base,
                        "t_base": here.t_base,
                        "predicted_t_base": predicted.t_base,
                        "tau_time": here.tau_time,
                        "predicted_tau_time": predicted.tau_time,
                        "t_base_error": predicted.t_base / here.t_base - 1.0,
                        "tau_time_error": predicted.tau_time / here.tau_time - 1.0,
                    }
                )
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    wall = time.perf_counter() - started

    print(f"{'case':58} {'shipped':>8} {'here':>8} {'pred.':>8} {'err':>7} {'tau err':>8}")
    for r in rows:
        print(
            f"{r['case']:58} {r['shipped_t_base']:8.3f} {r['t_base']:8.3f} "
            f"{r['predicted_t_base']:8.3f} {r['t_base_error']:+7.1%} {r['tau_time_error']:+8.1%}"
        )
    t_err = [abs(r["t_base_error"]) for r in rows]
    tau_err = [abs(r["tau_time_error"]) for r in rows]
    summary = {
        "track": track.name,
        "busy_core": args.busy_core,
        "sample": len(sample),
        "held_out": len(held),
        "ratio": speed.ratio,
        "usable": sum(1 for c in speed.cases if c.ratio is not None),
        "t_null_here": speed.t_null,
        "median_abs_t_base_error": statistics.median(t_err),
        "max_abs_t_base_error": max(t_err),
        "median_abs_tau_time_error": statistics.median(tau_err),
        "max_abs_tau_time_error": max(tau_err),
        "within_10pct_tau_time": sum(e <= 0.10 for e in tau_err),
        "wall_seconds": round(wall, 1),
    }
    print(
        f"ratio {speed.ratio:.3f} over {summary['usable']} of {len(sample)} sampled cases; "
        f"held-out |t_base error| median {summary['median_abs_t_base_error']:.1%}, max "
        f"{summary['max_abs_t_base_error']:.1%}; |tau_time error| median "
        f"{summary['median_abs_tau_time_error']:.1%}, max {summary['max_abs_tau_time_error']:.1%}, "
        f"{summary['within_10pct_tau_time']}/{len(rows)} within 10%; {wall / 60:.1f} min"
    )
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
