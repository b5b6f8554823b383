"""Loading and validating the solution artifact (SPEC §5, §6).

``solution.npz`` is written by untrusted code, so :func:`load_solution_npz`
treats it as hostile: no symlinks, no special files, bounded size on disk and
after decompression (checked from the zip directory and every ``.npy`` header
before any array is allocated), no pickles. :func:`check_solution` then checks
exact names, dtypes, shapes, coordinates and finiteness on scored points. The
evaluator never resamples or interpolates.
"""

from __future__ import annotations

import math
import os
import stat
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from attrs import define, field
from numpy.typing import NDArray

from pdeagent.cases.model import EvalGrid, OutputSpec
from pdeagent.scoring.verdict import FEXEC_REASONS

DEFAULT_MAX_BYTES = 256 * 1024**2
"""Largest accepted ``solution.npz`` on disk (256 MiB)."""
DEFAULT_MAX_UNCOMPRESSED_BYTES = 1024**3
"""Largest accepted total size of the arrays after decompression (1 GiB)."""
DEFAULT_MAX_MEMBERS = 64
"""Most arrays accepted in one ``solution.npz``."""
_MAX_NPY_HEADER = 10_000

COORD_NAMES = ("x", "y", "z")


class ArtifactError(Exception):
    """The artifact cannot be graded; ``reason`` is an F-Exec reason."""

    def __init__(self, reason: str, message: str) -> None:
        if reason not in FEXEC_REASONS:
            raise ValueError(f"unknown F-Exec reason {reason!r}")
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


def _open_regular(path: Path, workdir: Path | None, max_bytes: int) -> BinaryIO:
    if workdir is not None:
        root = Path(workdir).resolve()
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError) as exc:  # symlink loops
            raise ArtifactError("bad_artifact", f"{path.name}: cannot resolve path: {exc}") from exc
        if not resolved.is_relative_to(root):
            raise ArtifactError(
                "bad_artifact", f"{path.name}: resolves outside the working directory"
            )
    if path.is_symlink():
        raise ArtifactError("bad_artifact", f"{path.name} is a symbolic link")
    if not path.exists():
        raise ArtifactError("missing_artifact", f"{path.name} was not written")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise ArtifactError("missing_artifact", f"{path.name} was not written") from exc
    except OSError as exc:  # ELOOP from O_NOFOLLOW when swapped for a symlink, EACCES, ...
        raise ArtifactError("bad_artifact", f"{path.name}: cannot open: {exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ArtifactError("bad_artifact", f"{path.name} is not a regular file")
        if st.st_size > max_bytes:
            raise ArtifactError(
                "bad_artifact",
                f"{path.name} is {st.st_size} bytes, more than the {max_bytes} allowed",
            )
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _check_zip(fh: BinaryIO, name: str, max_uncompressed_bytes: int, max_members: int) -> None:
    """Check the zip directory and every ``.npy`` header before anything is allocated."""
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ArtifactError("bad_artifact", f"{name} is not a valid npz (zip) file: {exc}") from exc
    with zf:
        infos = zf.infolist()
        if len(infos) > max_members:
            raise ArtifactError(
                "bad_artifact", f"{name} has {len(infos)} members, at most {max_members} allowed"
            )
        names = [info.filename for info in infos]
        if len(set(names)) != len(names):
            raise ArtifactError("bad_artifact", f"{name} has duplicate member names")
        declared = sum(info.file_size for info in infos)
        if declared > max_uncompressed_bytes:
            raise ArtifactError(
                "bad_artifact",
                f"{name} declares {declared} bytes uncompressed, "
                f"more than the {max_uncompressed_bytes} allowed",
            )
        for info in infos:
            member = info.filename
            if not member.endswith(".npy") or info.is_dir():
                raise ArtifactError(
                    "bad_artifact", f"{name}: member {member!r} is not a .npy array"
                )
            try:
                with zf.open(info) as mf:
                    version = np.lib.format.read_magic(mf)
                    if version == (1, 0):
                        header = np.lib.format.read_array_header_1_0(mf, _MAX_NPY_HEADER)
                    elif version == (2, 0):
                        header = np.lib.format.read_array_header_2_0(mf, _MAX_NPY_HEADER)
                    else:
                        raise ArtifactError(
                            "bad_artifact",
                            f"{name}: {member!r} uses unsupported .npy version {version}",
                        )
            except ArtifactError:
                raise
            except Exception as exc:
                raise ArtifactError(
                    "bad_artifact", f"{name}: {member!r} has no valid .npy header: {exc}"
                ) from exc
            shape, _fortran, dtype = header
            if dtype.hasobject:
                raise ArtifactError(
                    "bad_artifact", f"{name}: {member!r} is an object (pickled) array, refused"
                )
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes > info.file_size:
                raise ArtifactError(
                    "bad_artifact",
                    f"{name}: {member!r} header declares {nbytes} bytes of data, "
                    f"but the member holds only {info.file_size}",
                )


def load_solution_npz(
    path: str | os.PathLike[str],
    *,
    workdir: str | os.PathLike[str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED_BYTES,
    max_members: int = DEFAULT_MAX_MEMBERS,
) -> dict[str, np.ndarray]:
    """Load every array of an untrusted ``solution.npz``.

    Refuses (``ArtifactError``): a missing file (``missing_artifact``); a symlink,
    a path resolving outside ``workdir`` (when given), a non-regular file, a file
    over ``max_bytes``, an unreadable zip, more than ``max_members`` members,
    members that are not ``.npy`` arrays, declared uncompressed sizes over
    ``max_uncompressed_bytes``, an ``.npy`` header declaring more data than its
    member holds, object/pickled arrays, corrupt data (all ``bad_artifact``).
    The file is opened once (``O_NOFOLLOW``) and every check and the load use
    that one descriptor.
    """
    p = Path(path)
    wd = Path(workdir) if workdir is not None else None
    with _open_regular(p, wd, max_bytes) as fh:
        _check_zip(fh, p.name, max_uncompressed_bytes, max_members)
        fh.seek(0)
        try:
            with np.load(fh, allow_pickle=False) as npz:
                if not isinstance(npz, np.lib.npyio.NpzFile):
                    raise ArtifactError("bad_artifact", f"{p.name} is not an npz archive")
                return {key: np.asarray(npz[key]) for key in npz.files}
        except ArtifactError:
            raise
        except Exception as exc:  # ValueError (pickles), BadZipFile (CRC), EOFError, zlib.error
            raise ArtifactError("bad_artifact", f"{p.name} cannot be read: {exc}") from exc


@define(frozen=True)
class ArtifactCheck:
    """Result of :func:`check_solution`."""

    ok: bool
    reason: str | None = None
    """F-Exec reason when not ``ok``."""
    message: str = ""
    fields: dict[str, NDArray[np.float64]] = field(factory=dict)
    """float64 copies of the scored arrays (only when ``ok``)."""


def _fail(reason: str, message: str) -> ArtifactCheck:
    return ArtifactCheck(ok=False, reason=reason, message=message)


def _is_real_float(dtype: np.dtype[Any]) -> bool:
    return dtype.kind == "f" and dtype.itemsize >= 4


def check_solution(
    arrays: Mapping[str, NDArray[Any]],
    grid: EvalGrid,
    output: OutputSpec,
    scored_mask: NDArray[np.bool_],
) -> ArtifactCheck:
    """Validate loaded solution arrays against the grid and output spec.

    Checks, in order (first failure wins):

    1. names: ``x``, ``y`` (``z`` in 3-D) and every name of ``output.arrays``
       present (``bad_components``); extra arrays are ignored;
    2. dtype of those arrays a real float of at least 32 bits (``bad_dtype``);
    3. coordinate shapes ``(n,)`` and values equal to ``linspace`` of the bbox
       within ``tol * scale`` with ``scale = max(|lo|, |hi|, hi - lo)`` (1 if
       that is 0) and ``tol = 1e-9``, or ``4 * eps`` of the array's dtype when
       larger (float32 coordinates cannot be closer than that)
       (``bad_shape``, no resampling);
    4. field shapes exactly ``grid.shape`` (``bad_shape``);
    5. every scored point finite in every scored array (``non_finite``).
    """
    mask = np.asarray(scored_mask)
    if mask.shape != grid.shape or mask.dtype != np.bool_:
        raise ValueError(
            f"scored mask must be boolean of shape {grid.shape}, got {mask.dtype} {mask.shape}"
        )
    coords = COORD_NAMES[: grid.dim]
    required = [*coords, *output.arrays]
    missing = [n for n in required if n not in arrays]
    if missing:
        return _fail(
            "bad_components",
            f"missing arrays {missing}; expected {required}, found {sorted(arrays)}",
        )
    for n in required:
        dtype = np.asarray(arrays[n]).dtype
        if not _is_real_float(dtype):
            return _fail(
                "bad_dtype", f"array {n!r} has dtype {dtype}, expected float64 (or float32)"
            )
    sizes = {"x": grid.nx, "y": grid.ny, "z": grid.nz}
    for axis, n in enumerate(coords):
        c = np.asarray(arrays[n])
        size = sizes[n]
        assert size is not None
        if c.shape != (size,):
            return _fail("bad_shape", f"coordinate {n!r} has shape {c.shape}, expected ({size},)")
        lo, hi = float(grid.bbox[2 * axis]), float(grid.bbox[2 * axis + 1])
        expected = np.linspace(lo, hi, size)
        scale = max(abs(lo), abs(hi), hi - lo) or 1.0
        rel_tol = max(1e-9, 4 * float(np.finfo(c.dtype).eps))
        dev = np.abs(c.astype(np.float64) - expected)
        if not np.all(dev <= rel_tol * scale):
            worst = int(np.nanargmax(np.where(np.isfinite(dev), dev, np.inf)))
            return _fail(
                "bad_shape",
                f"coordinate {n!r} does not match the evaluation grid "
                f"linspace({lo}, {hi}, {size}): "
                f"at index {worst} expected {expected[worst]!r}, got {float(c[worst])!r} "
                "(the evaluator never resamples)",
            )
    for n in output.arrays:
        shape = np.shape(arrays[n])
        if shape != grid.shape:
            return _fail("bad_shape", f"array {n!r} has shape {shape}, expected {grid.shape}")
    n_scored = int(mask.sum())
    fields: dict[str, NDArray[np.float64]] = {}
    for n in output.arrays:
        values = np.array(arrays[n], dtype=np.float64, copy=True)
        bad = int(np.count_nonzero(~np.isfinite(values[mask])))
        if bad:
            return _fail(
                "non_finite",
                f"array {n!r} is not finite at {bad} of {n_scored} scored points",
            )
        fields[n] = values
    return ArtifactCheck(ok=True, reason=None, message="", fields=fields)
