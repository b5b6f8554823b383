"""deal.II compile time: the harness's compile stage vs a plain CMake Release build.

The same program (``plugins/dealii_track/tests/programs/poisson_unit_box.cc``, a
typical generated-size deal.II solver: 150 lines, Q2 Poisson with muparser, CG+SSOR,
grid sampling, nlohmann/json) is compiled ``--repeats`` times each way, alternating:

- harness: ``pdeagent_prepare`` of the deal.II track, i.e. one ``g++`` call in the
  sandbox with deal.II's Release flags, the precompiled header, gold and
  ``--as-needed`` (compile + link);
- CMake: a fresh build directory with deal.II's usual ``CMakeLists.txt``
  (``deal_ii_setup_target``), ``cmake -DCMAKE_BUILD_TYPE=Release`` then ``make``
  (configure + compile + link, what a user following deal.II's tutorials does).

Printed: each timing, the medians and their ratio; the binary's size and the number
of shared libraries it loads (``ldd``) each way. Target (issue #7): harness median
<= 15 s on this machine (CMake ~36 s).

Usage (repository root, after ``bash scripts/setup-dev.sh``):

    .venv/bin/python benchmarks/dealii_compile.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "plugins" / "dealii_track" / "tests" / "programs" / "poisson_unit_box.cc"
CMAKE = """cmake_minimum_required(VERSION 3.13)
find_package(deal.II 9.4 REQUIRED HINTS /usr/share/cmake/deal.II)
deal_ii_initialize_cached_variables()
project(solver CXX)
add_executable(solver solver.cc)
deal_ii_setup_target(solver)
"""


def harness_compile(scratch: Path) -> tuple[float, Path]:
    from pdeagent.plugins import load_plugins
    from pdeagent.sandbox import default_sandbox

    host = load_plugins(strict=True)
    track = host.get_track("dealii")
    build = Path(tempfile.mkdtemp(prefix="h-", dir=scratch))
    start = time.monotonic()
    result = host.hook.pdeagent_prepare(
        track=track, source=PROGRAM.read_text(), build_dir=build,
        sandbox=default_sandbox(), hide=[],
    )  # fmt: skip
    wall = time.monotonic() - start
    if not result.ok:
        raise SystemExit(f"harness compile failed:\n{result.message}")
    return wall, build / "solver"


def cmake_compile(scratch: Path) -> tuple[float, Path]:
    src = Path(tempfile.mkdtemp(prefix="c-", dir=scratch))
    (src / "CMakeLists.txt").write_text(CMAKE)
    shutil.copy(PROGRAM, src / "solver.cc")
    build = src / "build"
    build.mkdir()
    start = time.monotonic()
    for argv in (["cmake", "-DCMAKE_BUILD_TYPE=Release", ".."], ["make", "-j1"]):
        subprocess.run(argv, cwd=build, check=True, capture_output=True, timeout=900)
    return time.monotonic() - start, build / "solver"


def libraries(binary: Path) -> int:
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True)
    return sum(1 for line in out.stdout.splitlines() if "=>" in line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="pdeagent-dealii-bench-", dir="/var/tmp"))
    times: dict[str, list[float]] = {"harness": [], "cmake": []}
    binaries: dict[str, Path] = {}
    try:
        for i in range(args.repeats):
            for name, fn in (("harness", harness_compile), ("cmake", cmake_compile)):
                seconds, binary = fn(scratch)
                times[name].append(seconds)
                binaries[name] = binary
                print(f"run {i + 1} {name:8s} {seconds:6.1f} s", flush=True)
        h, c = statistics.median(times["harness"]), statistics.median(times["cmake"])
        print(f"\nmedian harness {h:.1f} s, CMake Release {c:.1f} s, ratio {h / c:.2f}")
        for name, binary in binaries.items():
            print(
                f"{name:8s} binary {binary.stat().st_size / 1e6:.1f} MB, "
                f"{libraries(binary)} shared libraries"
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
