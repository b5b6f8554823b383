# adv: lint-only
from _prelude import FINDINGS, READS, _json, _note, _try_read, os


def solve(case_spec):
    _note("environ", dict(os.environ))
    _note("reads", {key: _try_read(path) for key, path in READS.items()})
    scan = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            for what in ("environ", "cmdline"):
                got = _try_read(f"/proc/{entry}/{what}", 1 << 16)
                if got["ok"] and got["size"]:
                    scan[entry + "/" + what] = got["text"][:2048]
    _note("proc_scan", scan)
    print("PDEAGENT-ADV", _json.dumps(FINDINGS)[:8000])
