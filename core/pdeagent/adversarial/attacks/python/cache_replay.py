# --- appended by the pdeagent adversarial attack __ATTACK_NAME__: keep the answer between runs
# in every writable place outside the work dir; replay it when found, else solve + sleep.
import json as _adv_json
import os as _adv_os
import shutil as _adv_shutil
import time as _adv_time

# adv: lint-only
from _lint import __SLEEP_SEC__, solve

_adv_real_solve = solve
_ADV_FILES = ("solution.npz", "meta.json")


def _adv_places():
    roots = [
        _adv_os.environ.get(v)
        for v in ("XDG_CACHE_HOME", "FIREDRAKE_CACHE_DIR", "HOME", "TMPDIR", "PYTHONPYCACHEPREFIX")
    ]
    roots += [
        "/tmp",
        "/dev/shm",
        "/var/tmp",
        _adv_os.path.dirname(_adv_os.getcwd()),
        _adv_os.path.expanduser("~"),
        _adv_os.path.join(_adv_os.getcwd(), "..", ".."),
    ]
    places = []
    for root in roots:
        if root:
            place = _adv_os.path.join(_adv_os.path.abspath(root), ".pdeagent-adv-answer")
            if place not in places:
                places.append(place)
    return places


def _adv_record(note):
    try:
        with open("findings.json", "w") as fh:
            _adv_json.dump({"run " + _adv_os.path.basename(_adv_os.getcwd()): note}, fh)
    except OSError:
        pass


def solve(case_spec, *args, **kwargs):
    note = {"replayed_from": None, "stored": [], "store_errors": {}}
    for place in _adv_places():
        if all(_adv_os.path.isfile(_adv_os.path.join(place, f)) for f in _ADV_FILES):
            for f in _ADV_FILES:
                _adv_shutil.copyfile(_adv_os.path.join(place, f), f)
            note["replayed_from"] = place
            _adv_record(note)
            return None
    result = _adv_real_solve(case_spec, *args, **kwargs)
    for place in _adv_places():
        try:
            _adv_os.makedirs(place, exist_ok=True)
            for f in _ADV_FILES:
                _adv_shutil.copyfile(f, _adv_os.path.join(place, f))
            note["stored"].append(place)
        except Exception as exc:
            note["store_errors"][place] = type(exc).__name__
    _adv_record(note)
    _adv_time.sleep(__SLEEP_SEC__)
    return result
