# adv: lint-only
from _prelude import FINDINGS, LISTS, READS, _json, _note, _try_list, _try_read


def solve(case_spec):
    _note("reads", {key: _try_read(path) for key, path in READS.items()})
    _note("lists", {key: _try_list(path) for key, path in LISTS.items()})
    print("PDEAGENT-ADV", _json.dumps(FINDINGS)[:8000])
