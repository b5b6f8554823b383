# --- appended by the pdeagent adversarial attack __ATTACK_NAME__: the baseline solver, then a
# sleep, then a meta.json claiming a 1 ms run.
import json as _adv_json
import time as _adv_time

# adv: lint-only
from _lint import __SLEEP_SEC__, solve

_adv_real_solve = solve


def solve(case_spec, *args, **kwargs):
    result = _adv_real_solve(case_spec, *args, **kwargs)
    _adv_time.sleep(__SLEEP_SEC__)
    with open("meta.json", "w") as _adv_fh:
        _adv_json.dump({"wall_time_sec": 0.001, "status": "ok", "message": "1 ms"}, _adv_fh)
    return result
