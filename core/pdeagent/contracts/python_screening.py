# Screening driver of the frontier-2 search (pdeagent.evaluation.screening), for Python
# tracks' bundled calibration solvers. PythonBundler.screening_source appends this file
# (run in its own namespace) to a family's bundle and makes the bundle's
# solve(case_spec) call screen() below, so a screening run goes through the same import
# stage, runner and sandbox as any program. Standard library only: the track runtime
# has no pdeagent.
#
# One run screens one ladder chain, rung by rung, as the harness asks:
#   JOB_FILE           {"warm_up": {config}, "wait_sec": s}, written before the start;
#   warm-up/           the warm_up config solved once (kernels compiled, caches warm;
#                      its time is not a measurement), then WARM_UP_RECORD is written;
#   request-<i>.json   written by the harness: {"config": {...}} to solve next, or
#                      {"stop": true} to end the run;
#   rung-<i>/          that config's artifact (solution.npz, meta.json);
#   rung-<i>.json      {"index": i, "seconds": s, "ok": bool, "failure": text or null}:
#                      the solve's wall seconds, timed with the kernels warm.
# Every record is written to a temporary name and renamed, so the harness never reads
# half a file. The run ends when asked, when the warm-up fails, or after waiting
# wait_sec for a request.
import gc
import json
import os
import time
import traceback

JOB_FILE = "screening_job.json"
WARM_UP_RECORD = "warm-up.json"
SOLUTION_FILE = "solution.npz"
FAILURE_CHARS = 2000
POLL_SEC = 0.002


def _write(name, record):
    with open(name + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(record, fh)
    os.replace(name + ".tmp", name)


def _wait_for(name, wait_sec):
    deadline = time.monotonic() + wait_sec
    while not os.path.exists(name):
        if time.monotonic() > deadline:
            return None
        time.sleep(POLL_SEC)
    with open(name, encoding="utf-8") as fh:
        return json.load(fh)


def _solve_in(directory, solve_one, case_spec, config):
    """Solve ``config`` in ``directory``: its wall seconds and failure text (or None)."""
    home = os.getcwd()
    os.makedirs(directory)
    gc.collect()  # the previous rung's garbage is not this rung's time
    os.chdir(directory)
    started = time.perf_counter()
    try:
        solve_one(case_spec, settings=config)
        failure = None
    except Exception:
        failure = traceback.format_exc()[-FAILURE_CHARS:]
    seconds = time.perf_counter() - started
    os.chdir(home)
    if failure is None and not os.path.isfile(os.path.join(directory, SOLUTION_FILE)):
        failure = f"the solver wrote no {SOLUTION_FILE}"
    return seconds, failure


def screen(solve_one, case_spec):
    with open(JOB_FILE, encoding="utf-8") as fh:
        job = json.load(fh)
    wait_sec = float(job["wait_sec"])
    seconds, failure = _solve_in("warm-up", solve_one, case_spec, job["warm_up"])
    _write(WARM_UP_RECORD, {"seconds": seconds, "ok": failure is None, "failure": failure})
    if failure is not None:
        return
    index = 0
    while True:
        request = _wait_for(f"request-{index}.json", wait_sec)
        if request is None or request.get("stop"):
            return
        seconds, failure = _solve_in(f"rung-{index}", solve_one, case_spec, request["config"])
        record = {"index": index, "seconds": seconds, "ok": failure is None, "failure": failure}
        _write(f"rung-{index}.json", record)
        index += 1


def screening_entry(solve_one):
    """The ``solve(case_spec)`` of a screening bundle."""

    def solve(case_spec):
        screen(solve_one, case_spec)

    return solve
