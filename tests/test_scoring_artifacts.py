"""Loading hostile solution.npz files and validating solution arrays."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from pdeagent.cases.model import EvalGrid, OutputSpec
from pdeagent.scoring.artifacts import ArtifactError, check_solution, load_solution_npz

# ---------------------------------------------------------------- load_solution_npz


def _reason(exc: pytest.ExceptionInfo[ArtifactError]) -> str:
    return exc.value.reason


def test_roundtrip_plain_and_compressed(tmp_path: Path) -> None:
    u = np.arange(12.0).reshape(3, 4)
    for saver in (np.savez, np.savez_compressed):
        p = tmp_path / f"{saver.__name__}.npz"
        saver(p, x=np.linspace(0, 1, 4), u=u)
        arrays = load_solution_npz(p, workdir=tmp_path)
        assert sorted(arrays) == ["u", "x"]
        np.testing.assert_array_equal(arrays["u"], u)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(tmp_path / "solution.npz")
    assert _reason(exc) == "missing_artifact"
    assert "solution.npz" in exc.value.message


def test_symlink_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.npz"
    np.savez(real, u=np.ones(3))
    link = tmp_path / "solution.npz"
    link.symlink_to(real)
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(link)
    assert _reason(exc) == "bad_artifact"
    assert "symbolic link" in exc.value.message


def test_dangling_symlink_refused(tmp_path: Path) -> None:
    link = tmp_path / "solution.npz"
    link.symlink_to(tmp_path / "nowhere.npz")
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(link)
    assert _reason(exc) == "bad_artifact"


def test_directory_symlink_escaping_workdir_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    np.savez(outside / "solution.npz", u=np.ones(3))
    work = tmp_path / "work"
    work.mkdir()
    (work / "out").symlink_to(outside)
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(work / "out" / "solution.npz", workdir=work)
    assert _reason(exc) == "bad_artifact"
    assert "outside the working directory" in exc.value.message


def test_directory_and_fifo_refused(tmp_path: Path) -> None:
    d = tmp_path / "solution.npz"
    d.mkdir()
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(d)
    assert _reason(exc) == "bad_artifact"
    fifo = tmp_path / "fifo.npz"
    os.mkfifo(fifo)
    with pytest.raises(ArtifactError) as exc:  # must not block waiting for a writer
        load_solution_npz(fifo)
    assert _reason(exc) == "bad_artifact"
    assert "regular file" in exc.value.message


def test_file_too_large(tmp_path: Path) -> None:
    p = tmp_path / "solution.npz"
    np.savez(p, u=np.zeros(1000))
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(p, max_bytes=1000)
    assert _reason(exc) == "bad_artifact"
    assert "1000 allowed" in exc.value.message


def test_not_a_zip(tmp_path: Path) -> None:
    p = tmp_path / "solution.npz"
    p.write_bytes(b"this is not a zip file at all")
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(p)
    assert _reason(exc) == "bad_artifact"
    # a bare .npy under the npz name is refused too
    with p.open("wb") as fh:
        np.save(fh, np.ones(3))
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(p)
    assert _reason(exc) == "bad_artifact"


def test_zip_bomb_by_declared_size(tmp_path: Path) -> None:
    p = tmp_path / "solution.npz"
    np.savez_compressed(p, u=np.zeros(2_000_000))  # 16 MB of zeros, a few kB on disk
    assert p.stat().st_size < 100_000
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(p, max_uncompressed_bytes=1_000_000)
    assert _reason(exc) == "bad_artifact"
    assert "uncompressed" in exc.value.message


def test_too_many_members(tmp_path: Path) -> None:
    p = tmp_path / "solution.npz"
    np.savez(p, **{f"a{i}": np.ones(1) for i in range(10)})
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(p, max_members=5)
    assert _reason(exc) == "bad_artifact"
    assert "10 members" in exc.value.message


def _npy_header(shape: tuple[int, ...], descr: str = "<f8") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": descr, "fortran_order": False, "shape": shape}
    )
    return buf.getvalue()


def test_npy_header_declaring_huge_array_refused_before_allocation(tmp_path: Path) -> None:
    p = tmp_path / "solution.npz"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("u.npy", _npy_header((10**12,)) + b"\0" * 64)
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(p)
    assert _reason(exc) == "bad_artifact"
    assert "header declares" in exc.value.message


def test_pickled_object_array_refused(tmp_path: Path) -> None:
    p = tmp_path / "solution.npz"
    np.savez(p, u=np.array([{"evil": 1}, None], dtype=object))
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(p)
    assert _reason(exc) == "bad_artifact"
    assert "object" in exc.value.message


def test_non_npy_member_refused(tmp_path: Path) -> None:
    p = tmp_path / "solution.npz"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("u.npy", _npy_header((2,)) + np.ones(2).tobytes())
        zf.writestr("payload.py", b"print('hi')")
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(p)
    assert _reason(exc) == "bad_artifact"
    assert "payload.py" in exc.value.message


def test_corrupt_data_refused(tmp_path: Path) -> None:
    p = tmp_path / "solution.npz"
    np.savez(p, u=np.full(16, 1234.5))
    data = bytearray(p.read_bytes())
    marker = np.float64(1234.5).tobytes()
    pos = bytes(data).index(marker)
    data[pos] ^= 0xFF  # breaks the member's CRC
    p.write_bytes(bytes(data))
    with pytest.raises(ArtifactError) as exc:
        load_solution_npz(p)
    assert _reason(exc) == "bad_artifact"


# ---------------------------------------------------------------- check_solution

GRID2 = EvalGrid(nx=5, ny=4, bbox=[0.0, 1.0, -1.0, 2.0])
GRID3 = EvalGrid(nx=3, ny=4, nz=2, bbox=[0.0, 1.0, 0.0, 1.0, 0.0, 0.5])
SCALAR = OutputSpec(field="u")
VECTOR = OutputSpec(field="velocity", components=["u_x", "u_y"])


def _coords(grid: EvalGrid) -> dict[str, np.ndarray]:
    out = {
        "x": np.linspace(grid.bbox[0], grid.bbox[1], grid.nx),
        "y": np.linspace(grid.bbox[2], grid.bbox[3], grid.ny),
    }
    if grid.nz is not None:
        out["z"] = np.linspace(grid.bbox[4], grid.bbox[5], grid.nz)
    return out


def _mask(grid: EvalGrid) -> np.ndarray:
    mask = np.ones(grid.shape, dtype=bool)
    mask.flat[0] = False  # one unscored corner
    return mask


def _scalar_solution(grid: EvalGrid = GRID2) -> dict[str, np.ndarray]:
    u = np.arange(float(np.prod(grid.shape))).reshape(grid.shape)
    u.flat[0] = np.nan  # unscored point, NaN as the contract asks
    return {**_coords(grid), "u": u}


def test_valid_scalar_solution() -> None:
    arrays = _scalar_solution()
    arrays["extra"] = np.array(["ignored"])
    res = check_solution(arrays, GRID2, SCALAR, _mask(GRID2))
    assert res.ok and res.reason is None
    assert list(res.fields) == ["u"]
    assert res.fields["u"].dtype == np.float64
    assert res.fields["u"] is not arrays["u"]
    np.testing.assert_array_equal(res.fields["u"], arrays["u"])


def test_float32_fields_and_coordinates_accepted_as_float64() -> None:
    arrays = {k: v.astype(np.float32) for k, v in _scalar_solution().items()}
    res = check_solution(arrays, GRID2, SCALAR, _mask(GRID2))
    assert res.ok, res.message
    assert res.fields["u"].dtype == np.float64


def test_valid_vector_3d_solution() -> None:
    shape = GRID3.shape
    arrays = {**_coords(GRID3), "u_x": np.ones(shape), "u_y": np.zeros(shape)}
    res = check_solution(arrays, GRID3, VECTOR, _mask(GRID3))
    assert res.ok, res.message
    assert sorted(res.fields) == ["u_x", "u_y"]
    assert res.fields["u_x"].shape == (2, 4, 3)


def test_missing_component_names_expected_and_found() -> None:
    arrays = {**_coords(GRID2), "u": np.ones(GRID2.shape), "ux": np.ones(GRID2.shape)}
    res = check_solution(arrays, GRID2, VECTOR, _mask(GRID2))
    assert not res.ok and res.reason == "bad_components"
    assert "u_x" in res.message and "'ux'" in res.message


def test_missing_coordinate() -> None:
    arrays = _scalar_solution(GRID3)
    del arrays["z"]
    res = check_solution(arrays, GRID3, SCALAR, _mask(GRID3))
    assert res.reason == "bad_components"
    assert "'z'" in res.message


@pytest.mark.parametrize("dtype", [np.int64, np.complex128, np.bool_, np.float16])
def test_bad_dtype(dtype: type) -> None:
    arrays = _scalar_solution()
    arrays["u"] = np.ones(GRID2.shape, dtype=dtype)
    res = check_solution(arrays, GRID2, SCALAR, _mask(GRID2))
    assert res.reason == "bad_dtype"
    assert np.dtype(dtype).name in res.message


def test_integer_coordinates_bad_dtype() -> None:
    grid = EvalGrid(nx=3, ny=3, bbox=[0.0, 2.0, 0.0, 2.0])
    arrays = {"x": np.arange(3), "y": np.arange(3.0), "u": np.ones((3, 3))}
    assert check_solution(arrays, grid, SCALAR, _mask(grid)).reason == "bad_dtype"


def test_transposed_field_bad_shape() -> None:
    arrays = _scalar_solution()
    arrays["u"] = np.ones((5, 4))
    res = check_solution(arrays, GRID2, SCALAR, _mask(GRID2))
    assert res.reason == "bad_shape"
    assert "(5, 4)" in res.message and "(4, 5)" in res.message


def test_coordinate_length_bad_shape() -> None:
    arrays = _scalar_solution()
    arrays["x"] = np.linspace(0, 1, 6)
    res = check_solution(arrays, GRID2, SCALAR, _mask(GRID2))
    assert res.reason == "bad_shape"
    assert "(6,)" in res.message and "(5,)" in res.message


def test_shifted_coordinates_bad_shape_no_resampling() -> None:
    arrays = _scalar_solution()
    arrays["y"] = arrays["y"] + 1e-6  # e.g. a solver sampling at other points
    res = check_solution(arrays, GRID2, SCALAR, _mask(GRID2))
    assert res.reason == "bad_shape"
    assert "'y'" in res.message and "expected" in res.message
    # within tolerance: round-off of another linspace implementation is fine
    arrays["y"] = _coords(GRID2)["y"] * (1 + 1e-12)
    assert check_solution(arrays, GRID2, SCALAR, _mask(GRID2)).ok


def test_nan_coordinates_bad_shape() -> None:
    arrays = _scalar_solution()
    arrays["x"] = np.full(5, np.nan)
    assert check_solution(arrays, GRID2, SCALAR, _mask(GRID2)).reason == "bad_shape"


def test_non_finite_on_scored_points_counts_them() -> None:
    arrays = _scalar_solution()
    arrays["u"][1, 1] = np.nan
    arrays["u"][2, 3] = np.inf
    res = check_solution(arrays, GRID2, SCALAR, _mask(GRID2))
    assert res.reason == "non_finite"
    assert "2 of 19" in res.message


def test_nan_only_at_unscored_points_is_fine() -> None:
    arrays = _scalar_solution()
    mask = _mask(GRID2)
    mask[3, :] = False
    arrays["u"][3, :] = np.nan
    assert check_solution(arrays, GRID2, SCALAR, mask).ok


def test_mask_of_wrong_shape_is_a_caller_error() -> None:
    with pytest.raises(ValueError):
        check_solution(_scalar_solution(), GRID2, SCALAR, np.ones((5, 4), dtype=bool))


def test_load_then_check(tmp_path: Path) -> None:
    p = tmp_path / "solution.npz"
    np.savez(p, **_scalar_solution())
    res = check_solution(load_solution_npz(p, workdir=tmp_path), GRID2, SCALAR, _mask(GRID2))
    assert res.ok, res.message
