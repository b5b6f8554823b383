# adv: lint-only
from _prelude import FINDINGS, LISTS, READS, _error, _json, _note, _try_list, _try_read


def solve(case_spec):
    _note("reads", {key: _try_read(path) for key, path in READS.items()})
    _note("lists", {key: _try_list(path) for key, path in LISTS.items()})
    try:
        import importlib

        module = importlib.import_module("pdeagent.sandbox.local")
        _note("import", {"ok": True, "file": module.__file__, "read": _try_read(module.__file__)})
    except Exception as exc:
        _note("import", {"ok": False, "error": _error(exc)})
    print("PDEAGENT-ADV", _json.dumps(FINDINGS)[:8000])
