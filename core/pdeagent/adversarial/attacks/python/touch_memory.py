# adv: lint-only
from _prelude import _note


def solve(case_spec):
    import numpy as np

    blocks = []
    for i in range(1, 65):
        blocks.append(np.ones(64 * 2**20 // 8))
        print("touched", i * 64, "MiB", flush=True)
    _note("touched_mib", 64 * 64)
