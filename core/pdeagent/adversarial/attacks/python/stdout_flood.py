# adv: lint-only
from _prelude import _note, sys


def solve(case_spec):
    chunk = b"A" * (1 << 20)
    out = sys.stdout.buffer
    for _ in range(1024):
        out.write(chunk)
    out.flush()
    _note("flooded_mib", 1024)
