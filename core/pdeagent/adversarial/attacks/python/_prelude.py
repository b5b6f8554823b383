# pdeagent adversarial attack __ATTACK_NAME__: a hostile submission (sandbox test).
import json as _json
import os
import socket  # noqa: F401 -- for the attack bodies
import sys
import time  # noqa: F401 -- for the attack bodies

# adv: lint-only
from _lint import __ATTACK_NAME__, __LISTS__, __READS__, __RUN_TOKEN__

RUN_TOKEN = __RUN_TOKEN__
READS = __READS__
LISTS = __LISTS__
FINDINGS = {"attack": __ATTACK_NAME__}


def _note(key, value):
    FINDINGS[key] = value
    try:
        with open("findings.json.tmp", "w") as fh:
            _json.dump(FINDINGS, fh)
        os.replace("findings.json.tmp", "findings.json")
    except OSError:
        pass


def _error(exc):
    return type(exc).__name__ + ": " + str(exc)[:200]


def _try_read(path, limit=1 << 20):
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit)
    except Exception as exc:
        return {"ok": False, "error": _error(exc)}
    return {
        "ok": True,
        "size": len(data),
        "head": data[:64].hex(),
        "text": data[:4096].decode("latin-1"),
    }


def _try_list(path):
    try:
        return {"ok": True, "names": sorted(os.listdir(path))[:200]}
    except Exception as exc:
        return {"ok": False, "error": _error(exc)}


def _grid(case_spec):
    import numpy as np

    g = case_spec["eval_grid"]
    bbox = g["bbox"]
    coords = {
        "x": np.linspace(bbox[0], bbox[1], g["nx"]),
        "y": np.linspace(bbox[2], bbox[3], g["ny"]),
    }
    shape = (g["ny"], g["nx"])
    if g.get("nz"):
        coords["z"] = np.linspace(bbox[4], bbox[5], g["nz"])
        shape = (g["nz"], *shape)
    out = case_spec["output"]
    names = list(out.get("components") or [out["field"]])
    if out.get("pressure"):
        names.append(out["pressure"]["array"])
    return coords, shape, names


def _write_meta(seconds=0.5):
    with open("meta.json", "w") as fh:
        _json.dump({"wall_time_sec": seconds, "status": "ok"}, fh)


def _spawn_daemon(code, *args):
    """Double fork + setsid; the daemon runs a fresh interpreter whose command line
    carries RUN_TOKEN."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", code, RUN_TOKEN, *map(str, args)])
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
        return "sent"
    except Exception as exc:
        return _error(exc)
