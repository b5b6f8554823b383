"""Where the frontier measurement of dataset 2.0 stands, per track (issue #33 item 5).

    python benchmarks/frontier_progress.py -t dolfinx
    python benchmarks/frontier_progress.py -t dolfinx --remaining > /tmp/ids   # next chunk

Reads the store (``cases/frontier/<track>/``) and, for each case the track supports,
decides with the store key of the code checked out whether its entry is current, stale
(measured by other code) or missing. Prints, per family, the current, stale, failed and
missing counts and the median measurement seconds; over all current entries, the median
e_base and t_base and how many sit at the tau_min floor (tau_acc == tau_min).
``--remaining`` prints instead the comma-separated ids of manufactured-solution cases
with no current entry, in dataset order (no-exact cases need a reference study first).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

from pdeagent.cases.frontier_thresholds import DEFAULT_STORE, read_stored, store_key
from pdeagent.cases.io import load_cases
from pdeagent.plugins import load_plugins

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "cases" / "pdeagent-v2-records.jsonl"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-t", "--track", required=True)
    parser.add_argument("--cases-file", type=Path, default=RECORDS)
    parser.add_argument("--store", type=Path, default=ROOT / DEFAULT_STORE)
    parser.add_argument("--remaining", action="store_true")
    args = parser.parse_args(argv)

    host = load_plugins()
    track = host.get_track(args.track)
    cases = [c for c in load_cases(args.cases_file) if track.name in c.supported_libraries]
    status: dict[str, Counter] = defaultdict(Counter)
    seconds: dict[str, list[float]] = defaultdict(list)
    current: list[tuple[dict, float]] = []
    remaining: list[str] = []
    for case in cases:
        stored = read_stored(args.store, track, case.id, store_key(host, track, case))
        manufactured = case.evaluation_metadata.construction_method == "manufactured_solution"
        if stored is None:
            exists = (args.store / track.name / f"{case.id}.json").exists()
            status[case.family]["stale" if exists else "missing"] += 1
            if manufactured:
                remaining.append(case.id)
        elif stored.get("thresholds"):
            status[case.family]["current"] += 1
            seconds[case.family].append(float(stored["seconds"]))
            current.append((stored["thresholds"], case.evaluation_config.tau_min))
        else:
            status[case.family]["failed"] += 1
    if args.remaining:
        print(",".join(remaining))
        return 0

    print(f"{'family':<22}{'cases':>6}{'current':>8}{'stale':>6}{'failed':>7}{'missing':>8}"
          f"{'median s':>10}")  # fmt: skip
    for family in sorted(status):
        c = status[family]
        med = f"{statistics.median(seconds[family]):.1f}" if seconds[family] else "-"
        print(f"{family:<22}{sum(c.values()):>6}{c['current']:>8}{c['stale']:>6}"
              f"{c['failed']:>7}{c['missing']:>8}{med:>10}")  # fmt: skip
    all_seconds = [s for v in seconds.values() for s in v]
    print(f"current {len(current)} of {len(cases)}; remaining manufactured {len(remaining)}")
    if current:
        floor = sum(1 for th, tau_min in current if th["tau_acc"] <= tau_min)
        print(
            f"median e_base {statistics.median(th['e_base'] for th, _ in current):.2g}, "
            f"median t_base {statistics.median(th['t_base'] for th, _ in current):.3g} s, "
            f"at the tau_min floor {floor} of {len(current)} "
            f"({100 * floor / len(current):.0f}%); measurement seconds median "
            f"{statistics.median(all_seconds):.1f}, mean {statistics.fmean(all_seconds):.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
