# Test script for Python tracks: run one single-file family solver (a bundle) on one
# case_spec with several settings. It runs with the track runtime's interpreter, which
# does not have pdeagent installed, so it uses only the standard library and is run by
# path (pdeagent.contracts.python.SETTINGS_RUNNER); the harness never imports it.
#
# Reads JSON from stdin:
#     {"program": path, "case_spec": {...}, "settings": [{...}, ...], "out": dir}
# For each settings entry i it runs ``solve(case_spec, settings)`` in ``out/i`` and
# prints one JSON line per run: {"index", "wall_time_sec", "ok", "error"?}.
import importlib.util
import json
import os
import sys
import time
import traceback
from pathlib import Path


def main() -> int:
    job = json.load(sys.stdin)
    spec = importlib.util.spec_from_file_location("pdeagent_solver", job["program"])
    if spec is None or spec.loader is None:
        print(f"cannot load {job['program']}", file=sys.stderr)
        return 2
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
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
