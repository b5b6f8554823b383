# adv: lint-only
from _lint import __PWNED_MARKER__
from _prelude import _grid, _note, _write_meta


class _Payload:
    def __reduce__(self):
        return (open, (__PWNED_MARKER__, "w"))


def solve(case_spec):
    import numpy as np

    coords, shape, names = _grid(case_spec)
    arrays = dict(coords)
    for name in names:
        values = np.zeros(shape, dtype=object)
        values.flat[0] = _Payload()
        arrays[name] = values
    np.savez("solution.npz", **arrays)
    _write_meta()
    _note("written", True)
