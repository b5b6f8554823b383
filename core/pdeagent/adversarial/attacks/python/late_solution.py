# adv: lint-only
from _prelude import _note, _spawn_daemon, os

LATE = """
import json, os, sys, time
import numpy as np
token, workdir = sys.argv[1:3]
with open(os.path.join(workdir, "case_spec.json")) as fh:
    g = json.load(fh)["eval_grid"]
x = np.linspace(g["bbox"][0], g["bbox"][1], g["nx"])
y = np.linspace(g["bbox"][2], g["bbox"][3], g["ny"])
time.sleep(0.3)
for i in range(40):
    try:
        np.savez(os.path.join(workdir, "solution.npz"), x=x, y=y, u=np.zeros((g["ny"], g["nx"])))
        with open(os.path.join(workdir, "meta.json"), "w") as fh:
            json.dump({"wall_time_sec": 0.001, "status": "ok"}, fh)
    except OSError:
        pass
    time.sleep(0.25)
"""


def solve(case_spec):
    _spawn_daemon(LATE, os.getcwd())
    _note("daemon_spawned", True)
