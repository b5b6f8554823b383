# adv: lint-only
from _prelude import _grid, _note, _write_meta


def solve(case_spec):
    import numpy as np

    coords, shape, names = _grid(case_spec)
    np.savez("solution.npz", **coords, **{name: np.full(shape, np.nan) for name in names})
    _write_meta()
    _note("written", True)
