"""Run a DOLFINx family solver module on one case_spec with several settings.

Executed with the DOLFINx runtime's Python by the plugin's tests (never imported
by the harness). Reads JSON from stdin:
    {"family": str, "case_spec": {...}, "settings": [{...}, ...], "out": dir}
For each settings entry i it runs ``solve(case_spec, settings)`` in ``out/i`` and
prints one JSON line per run: {"index", "wall_time_sec", "ok", "error"?}.
"""

import json
import os
import sys
import time
import traceback
from pathlib import Path

from mpi4py import MPI  # noqa: F401  (before dolfinx: loads libmpi)

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "pdeagent_dolfinx"
sys.path.insert(0, str(PLUGIN_DIR))


def main() -> int:
    job = json.load(sys.stdin)
    module = __import__(f"solvers.{job['family']}", fromlist=["solve"])
    out = Path(job["out"])
    for i, settings in enumerate(job["settings"]):
        workdir = out / str(i)
        workdir.mkdir(parents=True, exist_ok=True)
        os.chdir(workdir)
        started = time.perf_counter()
        record = {"index": i}
        try:
            module.solve(job["case_spec"], settings)
            record["ok"] = True
        except Exception:
            record["ok"] = False
            record["error"] = traceback.format_exc()[-3000:]
        record["wall_time_sec"] = time.perf_counter() - started
        print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
