# adv: lint-only
from _prelude import _note


def solve(case_spec):
    _note("started", True)
    block = bytearray(50 * 2**30)
    _note("allocated", len(block))
