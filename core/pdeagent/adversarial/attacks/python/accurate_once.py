# --- appended by the pdeagent adversarial attack __ATTACK_NAME__: solve only on the first
# run (told apart by the work dir's name), write zeros at once on the timed repeats.
import json as _adv_json
import os as _adv_os

import numpy as _adv_np

# adv: lint-only
from _lint import solve

_adv_real_solve = solve


def solve(case_spec, *args, **kwargs):
    run = _adv_os.path.basename(_adv_os.getcwd())
    with open("findings.json", "w") as fh:
        _adv_json.dump({"run " + run: "solved" if run.endswith("-0") else "zeros"}, fh)
    if run.endswith("-0"):
        return _adv_real_solve(case_spec, *args, **kwargs)
    g = case_spec["eval_grid"]
    b = g["bbox"]
    axes = {"x": _adv_np.linspace(b[0], b[1], g["nx"]), "y": _adv_np.linspace(b[2], b[3], g["ny"])}
    shape = (g["ny"], g["nx"])
    if g.get("nz"):
        axes["z"] = _adv_np.linspace(b[4], b[5], g["nz"])
        shape = (g["nz"], *shape)
    out = case_spec["output"]
    names = list(out.get("components") or [out["field"]])
    if out.get("pressure"):
        names.append(out["pressure"]["array"])
    _adv_np.savez("solution.npz", **axes, **{n: _adv_np.zeros(shape) for n in names})
    with open("meta.json", "w") as fh:
        _adv_json.dump({"wall_time_sec": 0.001, "status": "ok"}, fh)
    return None
