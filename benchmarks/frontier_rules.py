"""Frontier-1 against frontier-2 on the same cases (issue #33 item 4).

Two steps, so the measurement itself is the real CLI:

    # the sample: N manufactured-solution cases per family a track supports (fixed seed)
    python benchmarks/frontier_rules.py select -t dolfinx --per-family 3 > /tmp/ids
    # measure both rules, one case at a time, the machine otherwise idle
    pdeagent cases frontier -t dolfinx --cases-file cases/pdeagent-v2-records.jsonl \
        --rule frontier-1 --store benchmarks/frontier_rules -c "$(cat /tmp/ids)"
    pdeagent cases frontier -t dolfinx --cases-file cases/pdeagent-v2-records.jsonl \
        -c "$(cat /tmp/ids)"
    # compare the stored results
    python benchmarks/frontier_rules.py compare -t dolfinx \
        --a benchmarks/frontier_rules/dolfinx --b cases/frontier/dolfinx -c "$(cat /tmp/ids)"

``compare`` prints, per case and in total: whether the two rules chose the same
configuration, the ratios b/a of e_base, t_base (so of tau_acc and the solve allowance)
and of the measurement's wall seconds, and the reasons each rule gave.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "cases" / "pdeagent-v2-records.jsonl"


def select(track: str, per_family: int, seed: int, records: Path) -> list[str]:
    by_family: dict[str, list[str]] = defaultdict(list)
    for line in records.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        meta = record["evaluation_metadata"]
        if track in record["supported_libraries"] and (
            meta.get("construction_method") == "manufactured_solution"
        ):
            by_family[record["pde_classification"]["equation_family"]].append(record["id"])
    rng = random.Random(seed)
    chosen = []
    for family in sorted(by_family):
        chosen += sorted(rng.sample(by_family[family], min(per_family, len(by_family[family]))))
    return chosen


def _load(store: Path, case_id: str) -> dict | None:
    path = store / f"{case_id}.json"
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else math.nan


def compare(a: Path, b: Path, case_ids: list[str]) -> int:
    rows = []
    for cid in case_ids:
        ra, rb = _load(a, cid), _load(b, cid)
        if ra is None or rb is None or not ra.get("thresholds") or not rb.get("thresholds"):
            print(f"{cid}: missing or failed (a: {bool(ra)}, b: {bool(rb)})")
            continue
        ta, tb = ra["thresholds"], rb["thresholds"]
        sa, sb = ta["selection"], tb["selection"]
        rows.append(
            {
                "case": cid,
                "same": sa["config"] == sb["config"],
                "e": tb["e_base"] / ta["e_base"],
                "t": tb["t_base"] / ta["t_base"],
                "solve": max(tb["t_base"] - tb["t_null"], 1e-9)
                / max(ta["t_base"] - ta["t_null"], 1e-9),
                "seconds_a": ra["seconds"],
                "seconds_b": rb["seconds"],
                "why_a": sa["why"].split(" ")[0],
                "why_b": sb["why"].split(" ")[0],
                "rungs_a": len(sa["trials"]),
                "rungs_b": len(sb["trials"]),
            }
        )
    print(f"{'case':52s} same  e_b/e_a  t_b/t_a  s_a(s)  s_b(s) rungs why_a/why_b")
    for r in rows:
        print(
            f"{r['case']:52s} {'yes ' if r['same'] else 'NO  '} {r['e']:8.3g} {r['t']:8.3g} "
            f"{r['seconds_a']:7.1f} {r['seconds_b']:7.1f} {r['rungs_a']:2d}/{r['rungs_b']:<2d} "
            f"{r['why_a']}/{r['why_b']}"
        )
    if not rows:
        return 1
    differ = [r for r in rows if not r["same"]]
    print(f"\ncases compared: {len(rows)}; same choice: {len(rows) - len(differ)}")
    if differ:
        e = [r["e"] for r in differ]
        t = [r["t"] for r in differ]
        print(
            f"where they differ ({len(differ)}): e_base ratio b/a median {statistics.median(e):.3g}"
            f" (min {min(e):.3g}, max {max(e):.3g}); t_base ratio median "
            f"{statistics.median(t):.3g} (min {min(t):.3g}, max {max(t):.3g})"
        )
    print(
        f"all: e_base ratio geometric mean {_geomean([r['e'] for r in rows]):.3g}, t_base ratio "
        f"geometric mean {_geomean([r['t'] for r in rows]):.3g}"
    )
    sa = [r["seconds_a"] for r in rows]
    sb = [r["seconds_b"] for r in rows]
    print(
        f"measurement seconds per case: a median {statistics.median(sa):.1f} (total "
        f"{sum(sa):.0f}); b median {statistics.median(sb):.1f} (total {sum(sb):.0f}); "
        f"ratio of totals {sum(sa) / sum(sb):.2f}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sel = sub.add_parser("select", help="print the sample's case ids, comma-separated")
    sel.add_argument("-t", "--track", required=True)
    sel.add_argument("--per-family", type=int, default=3)
    sel.add_argument("--seed", type=int, default=33)
    sel.add_argument("--records", type=Path, default=RECORDS)
    cmp_ = sub.add_parser("compare", help="compare two stores on the sample")
    cmp_.add_argument("-t", "--track", required=True)
    cmp_.add_argument("--a", type=Path, required=True, help="the store of rule a (frontier-1)")
    cmp_.add_argument("--b", type=Path, required=True, help="the store of rule b (frontier-2)")
    cmp_.add_argument("-c", "--cases", required=True, help="comma-separated case ids")
    args = parser.parse_args(argv)
    if args.command == "select":
        print(",".join(select(args.track, args.per_family, args.seed, args.records)))
        return 0
    return compare(args.a, args.b, [c for c in args.cases.split(",") if c])


if __name__ == "__main__":
    sys.exit(main())
