# adv: lint-only
from _lint import __CANARY_DIR__, __CANARY_FILE__, __OUTSIDE_EXISTING__, __OUTSIDE_NEW__
from _prelude import FINDINGS, RUN_TOKEN, _error, _json, _note, os


def solve(case_spec):
    results = {}
    for path in __OUTSIDE_NEW__:
        try:
            with open(path, "x") as fh:
                fh.write("pdeagent adversarial " + RUN_TOKEN)
            results[path] = "written"
        except Exception as exc:
            results[path] = _error(exc)
    for path in __OUTSIDE_EXISTING__:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
            results[path] = "opened for writing"
        except Exception as exc:
            results[path] = _error(exc)
    canary_dir, canary_file = __CANARY_DIR__, __CANARY_FILE__

    def append():
        with open(canary_file, "a") as fh:
            fh.write("x")

    operations = {
        "append": append,
        "utime": lambda: os.utime(canary_file, (0, 0)),
        "chmod": lambda: os.chmod(canary_dir, 0o700),
        "mkdir": lambda: os.mkdir(os.path.join(canary_dir, "d-" + RUN_TOKEN)),
        "symlink": lambda: os.symlink("/etc/passwd", os.path.join(canary_dir, "l-" + RUN_TOKEN)),
        "rename": lambda: os.rename(canary_file, canary_file + ".moved"),
        "unlink": lambda: os.unlink(canary_file),
    }
    for name, operation in operations.items():
        try:
            operation()
            results["canary " + name] = "done"
        except Exception as exc:
            results["canary " + name] = _error(exc)
    _note("writes", results)
    print("PDEAGENT-ADV", _json.dumps(FINDINGS))
