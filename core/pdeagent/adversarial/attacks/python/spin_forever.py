# adv: lint-only
from _prelude import _note


def solve(case_spec):
    _note("spinning", True)
    while True:
        pass
