# adv: lint-only
from _prelude import _error, _note, os, time


def solve(case_spec):
    count, error = 0, None
    for _ in range(5000):
        try:
            pid = os.fork()
        except OSError as exc:
            error = _error(exc)
            break
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        count += 1
    _note("forks", count)
    _note("fork_error", error)
    print("PDEAGENT-ADV forks", count, error, flush=True)
