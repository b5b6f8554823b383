import signal

# adv: lint-only
from _lint import __BYSTANDER_PID__, __HARNESS_PID__
from _prelude import FINDINGS, _json, _note, _signal, os, time


def solve(case_spec):
    res = {}
    res["probe bystander"] = _signal(__BYSTANDER_PID__, 0)
    res["probe harness"] = _signal(__HARNESS_PID__, 0)
    if res["probe bystander"] == "sent":
        res["kill bystander"] = _signal(__BYSTANDER_PID__, signal.SIGKILL)
    _note("signals", res)
    if "sent" in (res["probe bystander"], res["probe harness"]):
        res["kill -1"] = "skipped: host processes are visible, kill(-1) would hit the host"
    else:
        res["kill -1"] = _signal(-1, signal.SIGKILL)
    ppid = os.getppid()
    res["parent"] = ppid
    _note("signals", res)
    if ppid == __HARNESS_PID__:
        res["kill parent"] = "skipped: the parent is the harness"
    else:
        res["kill parent"] = _signal(ppid, signal.SIGKILL)
    time.sleep(0.2)
    _note("signals", res)
    print("PDEAGENT-ADV", _json.dumps(FINDINGS))
