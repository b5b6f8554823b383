# adv: lint-only
from _prelude import _grid, _note, _write_meta


def solve(case_spec):
    import numpy as np

    coords, shape, names = _grid(case_spec)
    wrong = (*shape[:-1], shape[-1] + 1)
    np.savez("solution.npz", **coords, **{name: np.zeros(wrong) for name in names})
    _write_meta()
    _note("written", True)
