"""Time and size of ``pdeagent report --out`` with walkthrough pages (issue #23).

For the given run folders, measured side by side in one invocation:

1. ``pdeagent report RUN... --out DIR --no-pictures``: wall time, files, bytes;
2. ``pdeagent report RUN... --out DIR`` (every field picture): wall time, files, bytes,
   the pictures' share, bytes per walkthrough page;

and the ratio of the two. With ``--copies N`` the runs are first copied N times under
other model names (``<model>-copy-<k>``; every attempt folder and report renamed
accordingly), so a report over N "models" is measured from one real run: the pages,
pictures and tables are those of N models, the content repeated.

Usage (repository root, after ``bash scripts/setup-dev.sh``; a run folder of the
baseline over the whole dataset: ``pdeagent run --track dolfinx --provider baseline
--workers 2 --out RUN``):

    .venv/bin/python benchmarks/report_pages.py RUN [RUN ...] [--copies 5] [--keep DIR]
        [--program FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def folder_size(root: Path) -> tuple[int, int, int]:
    """(files, bytes, bytes of pictures: PNG figures and WebP field pictures) under
    ``root``."""
    files = size = png = 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            n = os.lstat(os.path.join(dirpath, name)).st_size
            files += 1
            size += n
            png += n if name.endswith((".png", ".webp")) else 0
    return files, size, png


def copy_as_models(run: Path, copies: int, dest: Path, program: str | None = None) -> list[Path]:
    """``copies`` copies of ``run``, the k-th with every model renamed ``<model>-copy-k``.
    With ``program``: every attempt's ``solver.py`` replaced by that text plus a comment
    naming the attempt, so every page shows a program of its own (as a model writing a
    new program per case; the baseline submits one bundled solver per family)."""
    manifest = json.loads((run / "run.json").read_text())
    models = manifest["config"]["models"]
    out = []
    for k in range(copies):
        target = dest / f"{run.name}-copy-{k}"
        shutil.copytree(run, target, symlinks=True)
        renamed = {m: f"{m}-copy-{k}" for m in models}
        data = json.loads((target / "run.json").read_text())
        data["config"]["models"] = [renamed[m] for m in models]
        data["run_id"] = f"{data.get('run_id') or run.name}-copy-{k}"
        (target / "run.json").write_text(json.dumps(data, indent=2))
        for track_dir in [p for p in target.iterdir() if p.is_dir()]:
            for model_dir in [p for p in track_dir.iterdir() if p.is_dir()]:
                new = renamed.get(model_dir.name)
                if new is None:
                    continue
                for report in model_dir.rglob("report.json"):
                    rec = json.loads(report.read_text())
                    rec["model"] = new
                    report.write_text(json.dumps(rec, indent=1))
                    source = report.parent / "solver.py"
                    if program is not None and source.is_file():
                        source.write_text(f"{program}\n# {new} {report.parent}\n")
                model_dir.rename(track_dir / new)
        out.append(target)
    return out


def report(runs: list[Path], out: Path, *, pictures: bool) -> float:
    argv = [sys.executable, "-m", "pdeagent.cli.main", "report", *map(str, runs),
            "--out", str(out)]  # fmt: skip
    if not pictures:
        argv.append("--no-pictures")
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"pdeagent report failed:\n{proc.stderr[-3000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--copies", type=int, default=1, help="models simulated per run")
    parser.add_argument("--keep", type=Path, help="keep the reports here (default: removed)")
    parser.add_argument(
        "--program", type=Path,
        help="give every attempt of the copies this program (plus a line naming the "
        "attempt): a distinct program per page, as a model's run has",
    )  # fmt: skip
    args = parser.parse_args()
    program = None if args.program is None else args.program.read_text(encoding="utf-8")
    work = Path(tempfile.mkdtemp(prefix="pdeagent-report-bench-", dir="/var/tmp"))
    try:
        runs = [r.resolve() for r in args.runs]
        if args.copies > 1:
            runs = [c for r in runs for c in copy_as_models(r, args.copies, work / "runs", program)]
        pages = sum(1 for r in runs for _ in r.rglob("attempt-*/report.json"))
        machine = f"{platform.node()} ({os.cpu_count()} CPUs)"
        print(f"machine: {machine}, python {platform.python_version()}")
        print(f"runs: {len(runs)} ({args.copies} copies of {len(args.runs)}), attempts: {pages}")
        if args.program is not None:
            print(f"every attempt's program: {args.program} ({len(program or '')} characters)")
        rows = []
        for label, pictures in (("no pictures", False), ("pictures", True)):
            out = (args.keep or work) / label.replace(" ", "-")
            seconds = report(runs, out, pictures=pictures)
            files, size, png = folder_size(out)
            rows.append((label, seconds, files, size, png))
        print(f"{'report':<12} {'wall s':>8} {'files':>7} {'MB':>8} {'pic MB':>8} {'kB/page':>8}")
        for label, seconds, files, size, png in rows:
            print(f"{label:<12} {seconds:8.1f} {files:7d} {size / 1e6:8.1f} {png / 1e6:8.1f} "
                  f"{size / 1e3 / max(pages, 1):8.1f}")  # fmt: skip
        (_, t0, _, s0, _), (_, t1, _, s1, _) = rows
        print(f"pictures / no pictures: time x{t1 / t0:.1f}, size x{s1 / s0:.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
