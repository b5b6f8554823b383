"""Walkthrough pages of ``pdeagent report`` (issue #23): one static page per graded
attempt, with the case, the verdict, the code, the diagnostics and pictures of the
fields on the evaluation grid, written from the run folder alone.

Layout of the report folder (every link relative, so the folder works from ``file://``
and any static host): ``report.html`` (the tables), ``leaderboard.html`` and one page
per attempt at :func:`walkthrough_relpath` with its pictures beside it, except the
reference pictures: one file per case (:func:`reference_picture_relpath`) that every
model's page of the case shows.

Pictures (:func:`field_pictures`) show, for every scored array of the case, the
submission, the reference and the signed error on the evaluation grid (3-D cases: the
mid-plane ``k = nz // 2``). Only scored points are coloured (``cividis`` for fields,
the diverging ``PuOr`` symmetric about zero for the error; both read in grey and by
colour-blind readers; the submission on the reference's scale); points outside the domain
are light grey, the unscored band along the boundary hatched dark grey, non-finite
values at scored points magenta and marked ``x``. Every caption states what the
picture shows and its value range in :func:`fmt_range`'s format.

Pages (:func:`render_walkthrough`) are static HTML (no scripts, no external resources,
autoescaped); every number on them is a value of the attempt's ``report.json`` shown
through one of the format functions of this module (``fmt_*``; :data:`FIELD_FORMATS`
says which for each ``data-field``), so a test can compare the page with the file.
The saved files are hostile input: ``solution.npz`` is read by the grader's own safe
loader, sources and reports with size caps, nothing through a symlink.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import math
import os
import stat
import sys
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import jinja2
import numpy as np
from attrs import define
from markupsafe import Markup
from numpy.typing import NDArray

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import Case
from pdeagent.extras import MissingExtra, require
from pdeagent.fileio import atomic_write_bytes, atomic_write_text
from pdeagent.prompts.builder import templates_dir
from pdeagent.runs.layout import REPORT_FILE, attempt_dir, path_component
from pdeagent.runs.records import AttemptReport, attempt_to_dict
from pdeagent.runs.report import Run, RunData, case_outcomes
from pdeagent.scoring.artifacts import ArtifactError, load_solution_npz

if TYPE_CHECKING:
    from pdeagent.geometry import EvaluationMask

WALKTHROUGH_DIR = "cases"
"""Top folder of the walkthrough pages inside the report folder."""


def walkthrough_relpath(
    run_index: int, run_id: str, track: str, model: str, case_id: str, attempt: int
) -> PurePosixPath:
    """The page of one attempt, relative to the report folder:
    ``cases/<run index>-<run id>/<track>/<model>/<case id>/attempt-<k>/index.html`` (the
    run index keeps two runs with the same id apart; every part a safe path component)."""
    run = path_component(f"{run_index}-{run_id}")
    parts = (WALKTHROUGH_DIR, run, path_component(track), path_component(model),
             path_component(case_id), f"attempt-{int(attempt)}", "index.html")  # fmt: skip
    return PurePosixPath(*parts)


def relative_to_root(page_relpath: PurePosixPath | str) -> PurePosixPath:
    """The report folder seen from the folder of the page at ``page_relpath`` (a path
    relative to the report folder): ``../../../../../..`` for a walkthrough page, ``.``
    for a page at the top. ValueError for an absolute path or one with an empty, ``.``
    or ``..`` part."""
    raw = page_relpath.as_posix() if isinstance(page_relpath, PurePosixPath) else page_relpath
    if any(part in ("", ".", "..") for part in raw.split("/")):
        raise ValueError(f"not a page path inside the report folder: {raw!r}")
    path = PurePosixPath(raw)
    depth = len(path.parts) - 1
    return PurePosixPath(*([".."] * depth)) if depth else PurePosixPath(".")


REFERENCE_DIR = "references"
"""Folder of the shared reference pictures inside :data:`WALKTHROUGH_DIR` (a run's
folder there starts with its index, so the names cannot meet)."""


def reference_picture_relpath(dataset_tag: str, case_id: str, file_name: str) -> PurePosixPath:
    """Where the reference picture ``file_name`` of one case of one dataset is, relative
    to the report folder: ``cases/references/<dataset tag>/<case id>/<file name>``. It
    depends on the case alone, so every model's page of the case shows this one file."""
    parts = (WALKTHROUGH_DIR, REFERENCE_DIR, path_component(dataset_tag),
             path_component(case_id), path_component(file_name))  # fmt: skip
    return PurePosixPath(*parts)


REPORT_PAGE = "report.html"
"""The tables of the report, at the top of the report folder (the pages link back)."""
TEMPLATE = "walkthrough.html.j2"
SOURCE_FILES = ("solver.py", "solver.cc")
"""The names a track saves the extracted program under in an attempt folder."""
SOLUTION_FILE = PurePosixPath("artifacts") / "solution.npz"
MAX_SOURCE_BYTES = 2_000_000
MAX_REPORT_BYTES = 4_000_000
PROGRESS_MIN_PAGES = 20
"""More pages than this: a progress bar on stderr."""

# ------------------------------------------------------------------------ formats


SIG_FORMAT = ".3g"
ERROR_FORMAT = ".3e"
SECONDS_FORMAT = ".4g"
VALUE_FORMAT = ".6g"
"""The Python format specs of :func:`fmt_sig`, :func:`fmt_error`, :func:`fmt_seconds` and
:func:`fmt_value` (the page states them)."""


def fmt_sig(value: float) -> str:
    """A number in a caption (ranges, coordinates, times): 3 significant digits
    (``%.3g``: ``-0.0312``, ``1.02``, ``2.5e-07``, ``nan``)."""
    return format(float(value), SIG_FORMAT)


def fmt_range(low: float, high: float) -> str:
    """A value range in a caption: ``[low, high]`` with :func:`fmt_sig`."""
    return f"[{fmt_sig(low)}, {fmt_sig(high)}]"


_NONE = "none"


def fmt_error(value: Any) -> str:
    """An error or accuracy threshold (``error``, ``tau_acc``, ``e_base``, each timed
    repeat's error): ``%.3e`` (``1.234e-03``, ``nan``, ``inf``); ``none`` for null."""
    if value is None:
        return _NONE
    return format(float(value), ERROR_FORMAT)


def fmt_seconds(value: Any) -> str:
    """A time in seconds (``runtime_sec``, ``tau_time``, ``t_base``, each timed
    repeat): ``%.4g`` (``0.01234``, ``12.35``, ``inf``); ``none`` for null."""
    if value is None:
        return _NONE
    return format(float(value), SECONDS_FORMAT)


def fmt_value(value: Any) -> str:
    """Any other value of ``report.json`` (metrics, diagnostics, tokens, cost, counts):
    ``true``/``false``; integers as they are; other numbers ``%.6g``; strings as they
    are; ``none`` for null; lists and objects as compact JSON."""
    if value is None:
        return _NONE
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format(value, VALUE_FORMAT)
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


FIELD_FORMATS: dict[str, Callable[[Any], str]] = {
    "error": fmt_error,
    "tau_acc": fmt_error,
    "e_base": fmt_error,
    "repeat_errors": fmt_error,
    "runtime_sec": fmt_seconds,
    "tau_time": fmt_seconds,
    "t_base": fmt_seconds,
    "t_null": fmt_seconds,
    "t_noise": fmt_seconds,
    "runtime_samples": fmt_seconds,
    "compile_time_sec": fmt_seconds,
    "accuracy_run_wall_sec": fmt_seconds,
    "evaluation_wall_sec": fmt_seconds,
    "generation_sec": fmt_seconds,
}
"""The format of each ``data-field`` of a page; every other field (``verdict``,
``reason``, ``metrics``, ``diagnostics``, ``tokens``, ``cost_usd``, ...) uses
:func:`fmt_value`. A field's value is ``report.json`` at the JSON path in the element's
``data-path`` (a JSON list of keys and indices)."""


def field_format(name: str) -> Callable[[Any], str]:
    """The format function of ``data-field`` ``name``."""
    return FIELD_FORMATS.get(name, fmt_value)


# ----------------------------------------------------------------------- pictures

FIELD_CMAP = "cividis"
ERROR_CMAP = "PuOr"
OUTSIDE_COLOUR = "#d9d9d9"
"""Grid points outside the domain (light grey)."""
BAND_COLOUR = "#8c8c8c"
"""Inside the domain but in the unscored band along the boundary (dark grey, hatched)."""
HATCH_COLOUR = "#f2f2f2"
NONFINITE_COLOUR = "#ff00ff"
"""Non-finite values at scored points (magenta, also marked ``x``)."""
PICTURE_INCHES = (6.0, 5.0)
PICTURE_DPI = 80
"""Pictures are ``PICTURE_INCHES * PICTURE_DPI`` = 480 x 400 pixels."""
MAX_CELLS_PER_AXIS = 240
"""Grids with more points along an axis are shown every ``ceil(n / 240)``-th point."""
IMAGE_SUFFIX = ".webp"
"""Pictures are lossless WebP: every colour exact (the marker colours the tests check
pixel by pixel), less than half the bytes of the same PNG (18.1 -> 7.9 kB measured)."""
COLOUR_LEVELS = 128
"""Colours of a picture's colour map: values are drawn in ``COLOUR_LEVELS`` steps
(1/128 of the scale, finer than the eye tells apart), so a picture needs at most 256
colours: these, :data:`GREY_LEVELS` greys for the text's edges, and the mask colours,
each exact. Written as an indexed image: ~2/3 of the bytes."""
GREY_LEVELS = 48


def is_webp(data: bytes) -> bool:
    """``data`` starts like a WebP file (a RIFF container of kind ``WEBP``)."""
    return len(data) > 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP"


@define(frozen=True)
class Picture:
    name: str
    """File stem of the picture (a safe path component: ``u-submission``)."""
    caption: str
    image: bytes
    """The picture: a lossless WebP file."""
    vmin: float | None
    """Lower end of the colour scale (None: no finite scored value to colour)."""
    vmax: float | None


def image_size(data: bytes) -> tuple[int, int]:
    """``(width, height)`` in pixels of a picture; ValueError for anything not WebP."""
    from PIL import Image

    if not is_webp(data):
        raise ValueError("not a WebP image")
    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
    return int(width), int(height)


@define(frozen=True)
class _Plane:
    """One 2-D picture plane of the grid: values and masks as (ny, nx), and the axes."""

    x: NDArray[np.float64]
    y: NDArray[np.float64]
    inside: NDArray[np.bool_]
    scored: NDArray[np.bool_]
    where: str
    """``""`` in 2-D, ``, mid-plane z = 0.5 (k = 12 of nz = 25)`` in 3-D (captions)."""
    stride: int
    title: str = ""
    """``""`` in 2-D, `` (z = 0.5)`` in 3-D (picture titles)."""


def _case_mask(case: Case) -> EvaluationMask:
    from pdeagent.geometry import evaluation_mask, get_geometry  # scipy: imported when drawing

    spec = case.case_spec
    geometry = get_geometry(spec.domain.type, spec.domain.geometry_params)
    return evaluation_mask(spec.eval_grid, geometry)


def _plane_of(
    case: Case, mask: EvaluationMask
) -> tuple[_Plane, Callable[[NDArray[Any]], NDArray[Any]]]:
    """The plane shown and the function cutting a grid-shaped array down to it."""
    from pdeagent.geometry import grid_axes

    grid = case.case_spec.eval_grid
    axes = grid_axes(grid)
    stride = max(1, *(math.ceil(len(a) / MAX_CELLS_PER_AXIS) for a in axes[:2]))
    if grid.dim == 3:
        k = int(grid.shape[0]) // 2
        where = f", mid-plane z = {fmt_sig(axes[2][k])} (k = {k} of nz = {grid.shape[0]})"
        title = f" (z = {fmt_sig(axes[2][k])})"

        def cut(array: NDArray[Any]) -> NDArray[Any]:
            return np.asarray(array)[k, ::stride, ::stride]
    else:
        where = title = ""

        def cut(array: NDArray[Any]) -> NDArray[Any]:
            return np.asarray(array)[::stride, ::stride]

    plane = _Plane(
        x=axes[0][::stride],
        y=axes[1][::stride],
        inside=cut(mask.inside),
        scored=cut(mask.scored),
        where=where,
        stride=stride,
        title=title,
    )
    return plane, cut


def _grid_text(case: Case) -> str:
    grid = case.case_spec.eval_grid
    sizes = [grid.nx, grid.ny] + ([grid.nz] if grid.nz is not None else [])
    return "\u00d7".join(str(n) for n in sizes)


def _finite_scored(values: NDArray[np.float64], scored: NDArray[np.bool_]) -> NDArray[np.float64]:
    picked = values[scored]
    return picked[np.isfinite(picked)]


def _zero_mean(values: NDArray[np.float64], scored: NDArray[np.bool_]) -> NDArray[np.float64]:
    """``values`` minus their mean over the finite scored points (a ``zero_mean``
    pressure as scoring compares it)."""
    finite = _finite_scored(values, scored)
    return values - float(np.mean(finite)) if finite.size else values


def _plain(text: str) -> str:
    """A label matplotlib shows literally (no mathtext)."""
    return text.replace("$", r"\$")


def _band_cells(plane: _Plane, band: NDArray[np.bool_]) -> list[list[tuple[float, float]]]:
    """Rectangles covering the band's cells, one per horizontal run of cells."""
    dx = float(plane.x[1] - plane.x[0]) if plane.x.size > 1 else 1.0
    dy = float(plane.y[1] - plane.y[0]) if plane.y.size > 1 else 1.0
    cells = []
    for j in range(band.shape[0]):
        row = np.concatenate(([False], band[j], [False]))
        edges = np.flatnonzero(np.diff(row.astype(np.int8)))
        for start, stop in zip(edges[::2], edges[1::2], strict=True):
            x0 = float(plane.x[start]) - dx / 2
            x1 = float(plane.x[stop - 1]) + dx / 2
            y0, y1 = float(plane.y[j]) - dy / 2, float(plane.y[j]) + dy / 2
            cells.append([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
    return cells


def _draw(
    plane: _Plane,
    values: NDArray[np.float64],
    *,
    cmap_name: str,
    vmin: float | None,
    vmax: float | None,
    title: str,
    colour_label: str,
) -> bytes:
    """One picture (lossless WebP): scored finite points coloured, the rest in the mask
    colours."""
    from matplotlib import colormaps
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.cm import ScalarMappable
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import Normalize, to_rgba
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    finite = np.isfinite(values)
    coloured = plane.scored & finite
    bad = plane.scored & ~finite
    band = plane.inside & ~plane.scored
    outside = ~plane.inside
    cmap = colormaps[cmap_name].resampled(COLOUR_LEVELS)
    norm = None
    if vmin is not None and vmax is not None:
        low, high = vmin, vmax
        if not high > low:  # a constant field: a scale around it, the caption says so
            pad = abs(low) * 1e-3 or 1.0
            low, high = low - pad, high + pad
        norm = Normalize(vmin=low, vmax=high)
    rgba = np.empty((*values.shape, 4), dtype=np.float64)
    rgba[outside] = to_rgba(OUTSIDE_COLOUR)
    rgba[band] = to_rgba(BAND_COLOUR)
    rgba[bad] = to_rgba(NONFINITE_COLOUR)
    if norm is not None:
        rgba[coloured] = cmap(norm(values[coloured]))
    dx = float(plane.x[1] - plane.x[0]) if plane.x.size > 1 else 1.0
    dy = float(plane.y[1] - plane.y[0]) if plane.y.size > 1 else 1.0
    extent = (
        float(plane.x[0]) - dx / 2,
        float(plane.x[-1]) + dx / 2,
        float(plane.y[0]) - dy / 2,
        float(plane.y[-1]) + dy / 2,
    )
    fig = Figure(figsize=PICTURE_INCHES, dpi=PICTURE_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.imshow(rgba, origin="lower", extent=extent, interpolation="nearest", aspect="equal")
    legend = []
    if outside.any():
        legend.append(Patch(facecolor=OUTSIDE_COLOUR, edgecolor=LEGEND_EDGE, label="outside"))
    if band.any():
        ax.add_collection(
            PolyCollection(
                _band_cells(plane, band),
                facecolors="none",
                edgecolors=HATCH_COLOUR,
                hatchcolor=HATCH_COLOUR,
                linewidths=0,
                hatch="////",
            ),
            autolim=False,
        )
        legend.append(
            Patch(
                facecolor=BAND_COLOUR,
                edgecolor=HATCH_COLOUR,
                hatch="////",
                label="unscored band",
            )
        )
    if bad.any():
        jj, ii = np.nonzero(bad)
        ax.plot(plane.x[ii], plane.y[jj], linestyle="none", marker="x", color="black", ms=4)
        legend.append(Patch(facecolor=NONFINITE_COLOUR, label="non-finite (x)"))
    ax.set_xlim(extent[0], extent[1])
    ax.set_ylim(extent[2], extent[3])
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(_plain(title), fontsize="medium")
    if norm is not None:
        shown = values[coloured]
        below = bool(shown.size) and bool(shown.min() < norm.vmin)
        above = bool(shown.size) and bool(shown.max() > norm.vmax)
        extend = {(True, True): "both", (True, False): "min", (False, True): "max"}
        fig.colorbar(
            ScalarMappable(norm=norm, cmap=cmap), ax=ax, shrink=0.9, label=colour_label,
            extend=extend.get((below, above), "neither"),
        )  # fmt: skip
    if legend:
        fig.legend(handles=legend, loc="outside lower center", ncols=len(legend), fontsize="small")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=PICTURE_DPI, metadata={"Software": None})
    return _lossless_webp(buffer.getvalue(), _palette(cmap))


LEGEND_EDGE = "#666666"
ERROR_SIGN_TEXT = (
    "orange: submission below the reference, purple: above; in grey, darker is a larger |error|"
)
"""What the error picture's colours mean (``PuOr``: orange at the low end, lightness
falling with |value| on both sides of zero, so the shade reads in grey)."""
MASK_COLOURS = (OUTSIDE_COLOUR, BAND_COLOUR, HATCH_COLOUR, NONFINITE_COLOUR, LEGEND_EDGE)


def _palette(cmap: Any) -> list[tuple[int, int, int]]:
    """The colours of a picture drawn with ``cmap`` (already resampled to
    :data:`COLOUR_LEVELS`): the mask colours, the greys from black to white, the map's."""
    from matplotlib.colors import to_rgb

    def rgb(colour: Any) -> tuple[int, int, int]:
        r, g, b = to_rgb(colour)
        return round(255 * r), round(255 * g), round(255 * b)

    greys = [(v, v, v) for v in np.linspace(0, 255, GREY_LEVELS).round().astype(int).tolist()]
    levels = [rgb(c) for c in cmap(np.arange(cmap.N))]
    colours = list(dict.fromkeys([*map(rgb, MASK_COLOURS), *greys, *levels]))
    if len(colours) > 256:
        raise ValueError(f"{len(colours)} colours do not fit a 256-colour palette")
    return colours


def _lossless_webp(png: bytes, palette: Sequence[tuple[int, int, int]]) -> bytes:
    """The PNG matplotlib drew, each pixel in its nearest ``palette`` colour (no
    dithering: a colour of the palette stays exactly itself), as lossless WebP
    (Pillow, which matplotlib brings)."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        pixels = np.asarray(image.convert("RGB"), dtype=np.int32)
    # Pillow's own palette mapping is approximate (white became 250 grey): exact here
    keys = (pixels[..., 0] << 16) | (pixels[..., 1] << 8) | pixels[..., 2]
    seen, where = np.unique(keys.ravel(), return_inverse=True)
    rgb = np.stack([seen >> 16, (seen >> 8) & 255, seen & 255], axis=-1)
    colours = np.asarray(palette, dtype=np.int32)
    distance = ((rgb[:, None, :] - colours[None, :, :]) ** 2).sum(axis=-1)
    index = distance.argmin(axis=1).astype(np.uint8)[where].reshape(keys.shape)
    quantized = Image.frombytes("P", (index.shape[1], index.shape[0]), index.tobytes())
    quantized.putpalette(colours.astype(np.uint8).ravel().tolist())
    out = io.BytesIO()
    quantized.save(out, format="WEBP", lossless=True, method=4)
    return out.getvalue()


def _mask_text(plane: _Plane, values: NDArray[np.float64]) -> str:
    """What the grey and magenta parts of a picture are, and how many non-finite."""
    parts = []
    if (~plane.inside).any():
        parts.append("light grey: outside the domain")
    if (plane.inside & ~plane.scored).any():
        parts.append("hatched dark grey: inside the domain but not scored (boundary band)")
    bad = int(np.count_nonzero(plane.scored & ~np.isfinite(values)))
    if bad:
        parts.append(f"{bad} non-finite scored point{'s' if bad != 1 else ''} in magenta (x)")
    return "; ".join(parts)


def _caption(
    name: str,
    role: str,
    case: Case,
    plane: _Plane,
    values: NDArray[np.float64],
    scale: str,
) -> str:
    spec = case.case_spec
    finite = _finite_scored(values, plane.scored)
    value_range = (
        f"range {fmt_range(float(finite.min()), float(finite.max()))}"
        if finite.size
        else "range: no finite value at a scored point"
    )
    time = spec.pde.time
    when = f", at t_end = {fmt_sig(time.t_end)}" if time is not None else ""
    shown = f", every {plane.stride}th point shown" if plane.stride > 1 else ""
    text = (
        f"{name}, {role}, {_grid_text(case)} grid{plane.where}{when}{shown}, "
        f"scored points coloured, {value_range}; {scale}"
    )
    masks = _mask_text(plane, values)
    return f"{text}; {masks}" if masks else text


def _scale(vmin: float | None, vmax: float | None, cmap_name: str, note: str) -> str:
    if vmin is None or vmax is None:
        return "nothing coloured (no finite value at a scored point)"
    return f"colour scale {fmt_range(vmin, vmax)} ({cmap_name}{note})"


def field_pictures(
    case: Case,
    solution: Mapping[str, NDArray[Any]],
    reference: Mapping[str, NDArray[Any]] | None,
    *,
    draw_reference: bool = True,
) -> list[Picture]:
    """Pictures of every scored array of ``case`` (:attr:`OutputSpec.arrays`) on its
    evaluation grid: the submission's field (when ``solution`` holds the array), the
    reference field (when ``reference`` is given and ``draw_reference``) and the signed
    error submission - reference (when both arrays are given). 3-D grids show the
    mid-plane ``k = nz // 2``; transient cases' arrays are at ``t_end``. A ``zero_mean``
    pressure is shown minus its mean over the scored points (as scoring compares it).

    The reference picture depends on the case alone (a report draws it once per case and
    every model's page shows it): its ``cividis`` scale is the range of the reference's
    finite scored values. The submission is drawn on that same scale, values beyond it
    in the end colours (the colour bar's arrows; the caption gives the submission's own
    range); without a reference, on its own range. The error's ``PuOr`` scale is
    ``+-max|error|`` over the finite scored points. All over the points shown (in 3-D,
    the mid-plane's). Raises ValueError for an array that is not real-valued of the
    grid's shape, :class:`~pdeagent.extras.MissingExtra` without matplotlib."""
    matplotlib = require("report")
    spec = case.case_spec
    shape = spec.eval_grid.shape
    mask = _case_mask(case)
    plane, cut = _plane_of(case, mask)
    pressure = spec.output.pressure
    zero_mean = None
    if pressure is not None and pressure.normalization == "zero_mean":
        zero_mean = pressure.array
    pictures: list[Picture] = []
    with matplotlib.rc_context({"text.usetex": False, "hatch.linewidth": 0.8}):
        for name in spec.output.arrays:
            fields: dict[str, NDArray[np.float64]] = {}
            for role, arrays in (("submission", solution), ("reference", reference)):
                if arrays is None or name not in arrays:
                    continue
                array = np.asarray(arrays[name])
                if array.shape != shape or array.dtype.kind not in "fiu":
                    raise ValueError(
                        f"{role} array {name!r} is {array.dtype} {array.shape}; "
                        f"expected real values of shape {shape}"
                    )
                values = array.astype(np.float64)
                if name == zero_mean:
                    values = _zero_mean(values, mask.scored)
                fields[role] = values
            pictures.extend(
                _array_pictures(case, name, plane, cut, fields, name == zero_mean, draw_reference)
            )
    return pictures


def _array_pictures(
    case: Case,
    name: str,
    plane: _Plane,
    cut: Callable[[NDArray[Any]], NDArray[Any]],
    fields: Mapping[str, NDArray[np.float64]],
    zero_mean: bool,
    draw_reference: bool,
) -> list[Picture]:
    shifted = " minus its mean over the scored points (zero-mean pressure, as scored)"
    shown = {role: cut(values) for role, values in fields.items()}
    scales: dict[str, tuple[float | None, float | None]] = {}
    for role, values in shown.items():
        finite = _finite_scored(values, plane.scored)
        scales[role] = (float(finite.min()), float(finite.max())) if finite.size else (None, None)
    roles = {
        "submission": "submission",
        "reference": "reference"
        + (" (exact solution)" if _exact(case) else " (stored high-fidelity solution)"),
    }
    pictures = []
    for role, values in shown.items():
        if role == "reference" and not draw_reference:
            continue
        note = ""
        vmin, vmax = scales[role]
        if role == "submission" and "reference" in scales:
            vmin, vmax = scales["reference"]
            note = ", the reference's range: values beyond it in the end colours"
        label = roles[role] + (shifted if zero_mean else "")
        caption = _caption(name, label, case, plane, values, _scale(vmin, vmax, FIELD_CMAP, note))
        image = _draw(
            plane, values, cmap_name=FIELD_CMAP, vmin=vmin, vmax=vmax,
            title=f"{name}: {role}{plane.title}", colour_label=name,
        )  # fmt: skip
        pictures.append(Picture(f"{path_component(name)}-{role}", caption, image, vmin, vmax))
    if len(shown) == 2:
        error = shown["submission"] - shown["reference"]
        finite_error = _finite_scored(error, plane.scored)
        if finite_error.size:
            top = float(np.max(np.abs(finite_error)))
            low, high = -top, top
        else:
            low = high = None
        label = "signed error submission \u2212 reference" + (
            " (each" + shifted.removeprefix(" ") + ")" if zero_mean else ""
        )
        scale = _scale(low, high, ERROR_CMAP, ", symmetric about zero: \u00b1max|error|") + (
            f"; {ERROR_SIGN_TEXT}" if low is not None else ""
        )
        caption = _caption(name, label, case, plane, error, scale)
        image = _draw(
            plane, error, cmap_name=ERROR_CMAP, vmin=low, vmax=high,
            title=f"{name}: submission \u2212 reference{plane.title}",
            colour_label=f"error of {name}",
        )  # fmt: skip
        pictures.append(Picture(f"{path_component(name)}-error", caption, image, low, high))
    return pictures


def _exact(case: Case) -> bool:
    return case.evaluation_metadata.construction_method == "manufactured_solution"


# --------------------------------------------------------------------------- page

STAGE_TEXT = {
    "PASS": "passed every stage (generation, execution, accuracy, time)",
    "F-Gen": "generation: no usable program was taken from the reply",
    "F-Exec": "execution: the program did not build, run or leave valid artifacts",
    "F-Acc": "accuracy: the solution ran but was not accurate enough",
    "F-Time": "time: accurate, but slower than tau_time",
    "ERROR": "not graded: the harness or the provider failed (infrastructure)",
}
"""The stage an attempt stopped at, by verdict."""


@define(frozen=True)
class _Number:
    """One number of ``report.json`` on the page: its ``data-field``, its JSON path and
    its text through the field's format."""

    label: str
    field: str
    path: str
    text: str
    present: bool


def _lookup(data: Any, path: Sequence[str | int]) -> tuple[bool, Any]:
    for key in path:
        if isinstance(key, int) and isinstance(data, list) and 0 <= key < len(data):
            data = data[key]
        elif isinstance(key, str) and isinstance(data, Mapping) and key in data:
            data = data[key]
        else:
            return False, None
    return True, data


def _number(report: Mapping[str, Any], label: str, path: Sequence[str | int]) -> _Number:
    field = str(path[-1]) if path[0] == "thresholds" else str(path[0])
    present, value = _lookup(report, path)
    text = field_format(field)(value) if present else "absent"
    return _Number(label, field, json.dumps(list(path)), text, present)


def _rows(report: Mapping[str, Any], top: str) -> list[_Number]:
    """``report[top]`` (metrics, diagnostics) as rows, nested objects flattened."""
    rows: list[_Number] = []

    def walk(value: Any, path: list[str | int]) -> None:
        if isinstance(value, Mapping) and value:
            for key in sorted(value, key=str):
                walk(value[key], [*path, str(key)])
        else:
            label = ".".join(str(p) for p in path[1:])
            rows.append(_Number(label, top, json.dumps(path), fmt_value(value), True))

    data = report.get(top)
    if isinstance(data, Mapping):
        walk(data, [top])
    return rows


def _series(report: Mapping[str, Any], key: str) -> list[_Number]:
    values = report.get(key)
    if not isinstance(values, list):
        return []
    fmt = field_format(key)
    return [
        _Number(str(i + 1), key, json.dumps([key, i]), fmt(v), True) for i, v in enumerate(values)
    ]


def _compare(report: Mapping[str, Any], value_key: str, tau_key: str) -> str:
    """``<=`` or ``>`` between a measured value and its threshold, as the gate compares
    them; ``""`` when either is missing or not a number."""
    value = report.get(value_key)
    thresholds = report.get("thresholds")
    tau = thresholds.get(tau_key) if isinstance(thresholds, Mapping) else None
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (value, tau))
    if not numbers or math.isnan(float(value)) or math.isnan(float(tau)):
        return ""
    return "\u2264" if float(value) <= float(tau) else ">"


CODE_CLASS = "hl"
"""CSS class of the highlighted code block (its styles: :data:`CODE_STYLES`)."""
CODE_STYLES = {
    "k": "color:#0033b3;font-weight:bold",  # keywords
    "s": "color:#067d17",  # strings
    "c": "color:#6e6e6e;font-style:italic",  # comments
    "m": "color:#1750eb",  # numbers
    "b": "color:#871094",  # builtins, preprocessor
    "f": "color:#00627a",  # names of defined functions and classes
}
"""Token kinds that get a span, and their colours (readable without colour too: the
code stays plain text). Everything else is escaped text without markup: one span per
token made a highlighted page ~7 times its code (a 100 kB bundled solver, a 700 kB
page); these few kinds keep it near 1.5 times."""


def _kind(token: Any) -> str | None:
    from pygments import token as t

    for kind, types in (
        ("c", (t.Comment,)),
        ("s", (t.String,)),
        ("k", (t.Keyword, t.Operator.Word)),
        ("m", (t.Number,)),
        ("b", (t.Name.Builtin, t.Comment.Preproc)),
        ("f", (t.Name.Function, t.Name.Class)),
    ):
        if any(token in typ for typ in types):
            return kind
    return None


def code_css() -> Markup:
    """The styles of :func:`highlight_code`'s block, for the page's <style>."""
    rules = [f".{CODE_CLASS} .{k}{{{v}}}" for k, v in CODE_STYLES.items()]
    rules.append(f".{CODE_CLASS}{{display:flex;gap:0.8em}}")
    rules.append(f".{CODE_CLASS} pre{{margin:0}}")
    rules.append(f".{CODE_CLASS} .ln{{color:#999;text-align:right;user-select:none}}")
    return Markup("\n".join(rules))


def highlight_code(code: str, filename: str | None) -> Markup:
    """``code`` as a ``<pre>`` block with line numbers and spans for the token kinds of
    :data:`CODE_STYLES` (pygments' lexers; every piece of text escaped here)."""
    from pygments.lexers import CppLexer, PythonLexer, TextLexer

    lexer: Any
    if filename is not None and filename.endswith(".py"):
        lexer = PythonLexer(stripnl=False, ensurenl=False)
    elif filename is not None and filename.endswith((".cc", ".cpp", ".h")):
        lexer = CppLexer(stripnl=False, ensurenl=False)
    else:
        lexer = TextLexer(stripnl=False, ensurenl=False)
    runs: list[tuple[str | None, str]] = []  # neighbouring tokens of one kind merged
    for token, text in lexer.get_tokens(code):
        kind = _kind(token)
        if runs and runs[-1][0] == kind:
            runs[-1] = (kind, runs[-1][1] + text)
        else:
            runs.append((kind, text))
    out: list[str] = []
    for kind, text in runs:
        for i, piece in enumerate(text.split("\n")):
            if i:
                out.append("\n")  # spans never cross a line: each line stands alone
            if piece:
                escaped = html.escape(piece, quote=False)
                out.append(f'<span class="{kind}">{escaped}</span>' if kind else escaped)
    body = "".join(out).removesuffix("\n")
    count = body.count("\n") + 1
    numbers = "\n".join(str(n) for n in range(1, count + 1))
    return Markup(
        f'<div class="{CODE_CLASS}"><pre class="ln" aria-hidden="true">{numbers}</pre>'
        f"<pre>{body}</pre></div>"
    )


JSON_WIDTH = 88
"""Lines of the agent view on a page: a value whose compact JSON fits stays on one."""


def compact_json(value: Any, level: int = 0, column: int = 0) -> str:
    """``value`` as indented JSON (keys sorted, two spaces a level) in which every
    object or list whose one-line form fits in :data:`JSON_WIDTH` columns from where it
    starts (``column``) stays on one line: the same JSON, a third of the lines."""
    flat = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))
    if not isinstance(value, dict | list) or not value or column + len(flat) <= JSON_WIDTH:
        return flat
    pad = "  " * (level + 1)
    if isinstance(value, dict):
        items = []
        for key in sorted(value):
            name = json.dumps(key, ensure_ascii=False)
            inner = compact_json(value[key], level + 1, len(pad) + len(name) + 2)
            items.append(f"{pad}{name}: {inner}")
        return "{\n" + ",\n".join(items) + "\n" + "  " * level + "}"
    items = [f"{pad}{compact_json(v, level + 1, len(pad))}" for v in value]
    return "[\n" + ",\n".join(items) + "\n" + "  " * level + "]"


def pre_text(text: str) -> Markup:
    """``text`` for the inside of a ``<pre>``: only ``&``, ``<`` and ``>`` escaped (quotes
    need none there, and JSON is full of them)."""
    return Markup(text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def _image_file(name: str) -> str:
    """The ``src`` of a picture: a file name beside the page, or a relative path down
    from ``..`` parts (a shared reference picture); every part URL-quoted."""
    parts = name.split("/")
    while len(parts) > 1 and parts[0] == "..":
        parts = parts[1:]
    if not name or "\\" in name or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"picture file must be a file name or a relative path: {name!r}")
    return "/".join(urllib.parse.quote(part) for part in name.split("/"))


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,
        keep_trailing_newline=True,
    )


_DEFAULT_PAGE = walkthrough_relpath(0, "run", "track", "model", "case", 0)
"""Every walkthrough page is this deep (the default of :func:`render_walkthrough`)."""


def render_walkthrough(
    *,
    case: Case | None,
    track: str,
    attempt_report: AttemptReport,
    code: str | None,
    pictures: list[Picture] | None,
    picture_files: Mapping[str, str],
    report_json: Mapping[str, Any],
    code_file: str | None = None,
    notes: Sequence[str] = (),
    page_relpath: PurePosixPath | None = None,
    code_link: tuple[str, str] | None = None,
) -> str:
    """The walkthrough page of one attempt (static HTML, autoescaped, no scripts).

    ``case``: None when the dataset could not be read (the page says so; the case facts
    come from the report). ``pictures``: None when pictures were not drawn;
    ``picture_files`` maps each picture's name to its file name beside the page.
    ``report_json``: the attempt's ``report.json`` (every number shown comes from it).
    ``code_file``: the source's file name (picks the highlighting). ``notes``: what is
    missing and why, shown at the top. ``page_relpath``: where the page is in the report
    folder (default: a walkthrough page's depth), for the link back to the tables."""
    report = attempt_report
    page = _DEFAULT_PAGE if page_relpath is None else page_relpath
    view_json = None
    view_note = None
    if case is not None:
        try:
            view = agent_view(case, track)
        except ValueError as exc:
            view_note = str(exc)
        else:
            view_json = pre_text(compact_json(view))
    else:
        view_note = "the dataset of the run could not be read; the agent view is not shown"
    images = []
    for picture in pictures or []:
        width, height = image_size(picture.image)
        images.append(
            {
                "name": picture.name,
                "src": _image_file(picture_files[picture.name]),
                "caption": picture.caption,
                "width": width,
                "height": height,
            }
        )
    thresholds = report_json.get("thresholds")
    thresholds = thresholds if isinstance(thresholds, Mapping) else {}
    first = ("e_base", "t_base", "t_null", "t_noise")  # tau_acc, tau_time: with error, runtime
    keys = [k for k in first if k in thresholds] + sorted(
        (k for k in thresholds if isinstance(k, str) and k not in (*first, "tau_acc", "tau_time")),
    )
    threshold_rows = [_number(report_json, key, ["thresholds", key]) for key in keys]
    extra = [
        _number(report_json, label, path)
        for label, path in (
            ("compile time (s)", ["compile_time_sec"]),
            ("accuracy run wall time (s)", ["accuracy_run_wall_sec"]),
            ("evaluation wall time (s)", ["evaluation_wall_sec"]),
            ("generation time (s)", ["generation_sec"]),
            ("timing protocol", ["protocol"]),
            ("input tokens", ["tokens", "input"]),
            ("output tokens", ["tokens", "output"]),
            ("cost (USD)", ["cost_usd"]),
        )
    ]
    root = relative_to_root(page)
    message = report_json.get("message")
    template = _environment().get_template(TEMPLATE)
    return template.render(
        report=report,
        track=track,
        case_id=report.case_id,
        family=_number(report_json, "family", ["family"]),
        geometry=_number(report_json, "geometry", ["geometry"]),
        dimension=_number(report_json, "dimension", ["dimension"]),
        stage=STAGE_TEXT.get(report.verdict, report.verdict),
        verdict=_number(report_json, "verdict", ["verdict"]),
        reason=_number(report_json, "reason", ["reason"]),
        message=message if isinstance(message, str) else "",
        error=_number(report_json, "error", ["error"]),
        tau_acc=_number(report_json, "tau_acc", ["thresholds", "tau_acc"]),
        runtime=_number(report_json, "runtime_sec", ["runtime_sec"]),
        tau_time=_number(report_json, "tau_time", ["thresholds", "tau_time"]),
        acc_compare=_compare(report_json, "error", "tau_acc"),
        time_compare=_compare(report_json, "runtime_sec", "tau_time"),
        thresholds=threshold_rows,
        samples=_series(report_json, "runtime_samples"),
        repeat_errors=_series(report_json, "repeat_errors"),
        metrics=_rows(report_json, "metrics"),
        diagnostics=_rows(report_json, "diagnostics"),
        extra=extra,
        stderr=report_json.get("stderr_excerpt") or "",
        code=None if code is None or code_link else highlight_code(code, code_file),
        code_link=code_link,
        code_css=code_css() if code is not None else "",
        code_file=code_file,
        view_json=view_json,
        view_note=view_note,
        images=images,
        pictures_drawn=pictures is not None,
        notes=list(notes),
        back=f"{root.as_posix()}/{REPORT_PAGE}" if root != PurePosixPath(".") else REPORT_PAGE,
        formats={"error": ERROR_FORMAT, "seconds": SECONDS_FORMAT, "value": VALUE_FORMAT},
    )


# ------------------------------------------------------------------------- files


def _stderr_note(message: str) -> None:
    sys.stderr.write(f"note: {message}\n")


def _read_regular(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of a regular file (not through a symlink) of at most ``max_bytes``;
    None when there is none. OSError/ValueError for one that cannot be read."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{path.name} is not a regular file")
    if info.st_size > max_bytes:
        raise ValueError(f"{path.name} is larger than {max_bytes} bytes")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{path.name} is larger than {max_bytes} bytes")
    return data


def submitted_code(folder: Path) -> tuple[str | None, str | None, str | None]:
    """``(code, file name, problem)`` of an attempt folder: the one regular file among
    :data:`SOURCE_FILES`; ``problem`` names every candidate that could not be read (a
    symlink, a directory, too large, not UTF-8) or says that both exist; None when there
    is nothing to say (an attempt without a program simply has no source)."""
    found: list[tuple[str, bytes]] = []
    problems = []
    for name in SOURCE_FILES:
        try:
            data = _read_regular(folder / name, MAX_SOURCE_BYTES)
        except (OSError, ValueError) as exc:
            problems.append(f"{name} not shown: {exc}")
            continue
        if data is not None:
            found.append((name, data))
    if len(found) > 1:
        names = " and ".join(name for name, _ in found)
        return None, None, f"the attempt folder holds {names}; which one was submitted is unknown"
    if not found:
        return None, None, "; ".join(problems) or None
    name, data = found[0]
    problem = "; ".join(problems) or None
    try:
        return data.decode("utf-8"), name, problem
    except UnicodeDecodeError:
        return None, name, "; ".join([*problems, f"{name} is not UTF-8 text"])


def _report_json(folder: Path, report: AttemptReport) -> tuple[dict[str, Any], str | None]:
    """The attempt's ``report.json`` as saved; when it cannot be read again (changed
    since the run was loaded), the loaded report with a note saying so."""
    try:
        data = _read_regular(folder / REPORT_FILE, MAX_REPORT_BYTES)
        loaded = json.loads(data.decode("utf-8")) if data is not None else None
    except (OSError, ValueError) as exc:
        loaded, problem = None, str(exc)
    else:
        problem = "missing"
    if isinstance(loaded, dict):
        return loaded, None
    return attempt_to_dict(report), (
        f"{REPORT_FILE} could not be read again ({problem}); numbers are from the report "
        "as it was loaded"
    )


def _solution(folder: Path, case: Case) -> tuple[dict[str, NDArray[Any]], list[str]]:
    """The scored arrays of the attempt's ``artifacts/solution.npz`` that can be drawn
    (real values of the grid's shape), and notes on every one that cannot."""
    path = folder / SOLUTION_FILE
    try:
        arrays = load_solution_npz(path, workdir=folder)
    except ArtifactError as exc:
        return {}, [f"no submission pictures: {SOLUTION_FILE}: {exc.message}"]
    shape = case.case_spec.eval_grid.shape
    usable: dict[str, NDArray[Any]] = {}
    notes = []
    for name in case.case_spec.output.arrays:
        array = arrays.get(name)
        if array is None:
            notes.append(f"no submission picture of {name!r}: {SOLUTION_FILE} lacks it")
        elif array.shape != shape or array.dtype.kind not in "fiu":
            notes.append(
                f"no submission picture of {name!r}: it is {array.dtype} {array.shape}, "
                f"the grid is {shape}"
            )
        else:
            usable[name] = array
    return usable, notes


@define
class _Dataset:
    cases: dict[str, Case] | None
    directory: Path | None
    problem: str | None
    tag: str = ""
    """Short name of the dataset file in the report folder (its shared reference
    pictures' folder)."""
    path: str = ""
    """The dataset file (its key in a cache); empty when the run names none."""


def _load_dataset(run: Run, known: Iterable[str], cache: dict[str, _Dataset]) -> _Dataset:
    name = run.config.get("cases_file")
    if not isinstance(name, str) or not name:
        return _Dataset(None, None, f"run {run.run_id}: run.json names no cases_file")
    path = Path(name)
    if not path.is_absolute():
        path = run.path / path
    return _read_dataset(str(path), known, cache)


def _read_dataset(key: str, known: Iterable[str], cache: dict[str, _Dataset]) -> _Dataset:
    from pdeagent.cases.io import load_cases  # sympy: imported when pages are written

    if not key:
        return _Dataset(None, None, "no dataset")
    if key not in cache:
        path = Path(key)
        try:
            cases = load_cases(path, known_libraries=known)
        except (OSError, ValueError) as exc:  # CaseFileError is a ValueError
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            cache[key] = _Dataset(None, None, f"dataset {path} unreadable: {first}", path=key)
        else:
            tag = hashlib.sha256(str(path.resolve()).encode("utf-8", "surrogatepass"))
            cases_by_id = {c.id: c for c in cases}
            cache[key] = _Dataset(cases_by_id, path.parent, None, tag.hexdigest()[:12], key)
    return cache[key]


def write_walkthroughs(
    data: RunData,
    out_dir: Path,
    *,
    pictures: bool = True,
    note: Callable[[str], None] = _stderr_note,
    jobs: int = 1,
) -> dict[tuple[int, str, str, str, int], PurePosixPath]:
    """One page per readable attempt report of every run of ``data``, at ``out_dir /``
    :func:`walkthrough_relpath`, its pictures beside it (``<name>.webp``) but for the
    reference pictures, one file per case (:func:`reference_picture_relpath`); every
    file written atomically.

    The case comes from the run's dataset (``run.json``'s ``cases_file``); the code,
    ``artifacts/solution.npz`` and ``report.json`` from the attempt folder; the
    reference from :func:`~pdeagent.evaluation.reference.reference_fields`. What is
    missing (an unreadable dataset, a failed reference, an unreadable artifact) is a
    note on the page and a call of ``note`` (once per dataset, per case, and one line
    in all for the graded attempts whose solution cannot be drawn), never an error.
    ``pictures=False`` draws none (quick); without matplotlib (the ``report`` extra)
    ``note`` is told once and the pages are written without pictures. More than
    :data:`PROGRESS_MIN_PAGES` pages: a progress bar on stderr.

    The pages of one case (every model's, every attempt's) are one task: its reference
    is computed and drawn once. ``jobs`` > 1 draws that many cases at once in worker
    processes (the pages are the same as with one).

    Returns ``(run index, track, model, case id, attempt)`` -> the page's path relative
    to ``out_dir``."""
    from pdeagent.cases.validate import KNOWN_LIBRARIES

    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    outcomes = case_outcomes(data)
    known = frozenset({*KNOWN_LIBRARIES, *(r.track for run in data.runs for r in run.reports)})
    datasets: dict[str, _Dataset] = {}
    noted: set[str] = set()

    def note_once(message: str) -> None:
        if message not in noted:
            noted.add(message)
            note(message)

    undrawn = None if pictures else "pictures were not drawn (asked for pages without them)"
    if undrawn is None:
        try:
            require("report")
        except MissingExtra as exc:
            undrawn = f"pictures not drawn: {exc}"
            note_once(f"walkthrough {undrawn}")
    written: dict[tuple[int, str, str, str, int], PurePosixPath] = {}
    shown_code: dict[str, PurePosixPath] = {}
    tasks: dict[tuple[str, str], _CaseTask] = {}
    for outcome in outcomes:
        run = data.runs[outcome.run]
        dataset = _load_dataset(run, known, datasets)
        case_notes: list[str] = []
        if dataset.problem is not None:
            note_once(dataset.problem + "; its pages show no case view and no pictures")
            case_notes.append(dataset.problem)
        elif dataset.cases is None or outcome.case_id not in dataset.cases:
            missing = f"case {outcome.case_id} is not in the dataset {run.config['cases_file']}"
            note_once(missing)
            case_notes.append(missing)
        task = tasks.setdefault(
            (dataset.path, outcome.case_id),
            _CaseTask(dataset.path, known, outcome.case_id, undrawn, []),
        )
        for report in outcome.attempts:
            key = (outcome.run, outcome.track, outcome.model, outcome.case_id, report.attempt)
            relpath = walkthrough_relpath(
                outcome.run, run.run_id, outcome.track, outcome.model, outcome.case_id,
                report.attempt,
            )  # fmt: skip
            folder = attempt_dir(run.path, report.track, report.model, report.case_id,
                                 report.attempt)  # fmt: skip
            task.pages.append(
                _PagePlan(relpath, folder, report, list(case_notes),
                          _code_link(folder, relpath, shown_code))
            )  # fmt: skip
            written[key] = relpath
    lost: list[str] = []
    total = sum(len(t.pages) for t in tasks.values())
    with _Progress(total) as advance:
        for result in _run_tasks(list(tasks.values()), out_dir, datasets, jobs):
            for message in result.notes:
                note_once(message)
            lost.extend(result.lost)
            for _ in range(result.pages):
                advance()
    if lost:
        note(
            f"{len(lost)} graded attempt(s) without a solution to draw (their pages say "
            f"why); first: {lost[0]}"
        )
    return written


def auto_jobs(data: RunData) -> int:
    """Worker processes for :func:`write_walkthroughs` when not asked: one per CPU the
    process may use for more than :data:`PROGRESS_MIN_PAGES` pages (a worker costs
    ~1.5 s to start: imports and the dataset), else 1 (drawn in this process)."""
    pages = sum(len(run.reports) for run in data.runs)
    if pages <= PROGRESS_MIN_PAGES:
        return 1
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


@define
class _PagePlan:
    relpath: PurePosixPath
    folder: Path
    report: AttemptReport
    notes: list[str]
    code_link: tuple[str, str] | None


@define
class _CaseTask:
    """The pages of one case of one dataset: what a worker needs to write them."""

    dataset_path: str
    known: frozenset[str]
    case_id: str
    undrawn: str | None
    pages: list[_PagePlan]


@define
class _TaskResult:
    notes: list[str]
    lost: list[str]
    pages: int


def _code_link(
    folder: Path, relpath: PurePosixPath, shown_code: dict[str, PurePosixPath]
) -> tuple[str, str] | None:
    """The link to the page that first showed this attempt's program (by SHA-256), or
    None when this page is the first (a baseline run submits one bundled solver per
    family, ~100 kB each: shown once, linked after)."""
    code, _file, _problem = submitted_code(folder)
    if code is None:
        return None
    digest = hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()
    first = shown_code.setdefault(digest, relpath)
    if first == relpath:
        return None
    return (f"{relative_to_root(relpath).as_posix()}/{first.as_posix()}#code", digest)


def _run_tasks(
    tasks: list[_CaseTask], out_dir: Path, datasets: dict[str, _Dataset], jobs: int
) -> Iterable[_TaskResult]:
    """Each task's result as it finishes: in this process (one job, or nothing to
    draw) or in ``jobs`` worker processes (spawned: this process may hold threads)."""
    drawing = any(t.undrawn is None for t in tasks)
    if jobs == 1 or len(tasks) < 2 or not drawing:
        for task in tasks:
            yield _write_case(task, out_dir, datasets)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context) as pool:
        futures = [pool.submit(_write_case, task, out_dir, None) for task in tasks]
        for future in as_completed(futures):
            yield future.result()


_WORKER_DATASETS: dict[str, _Dataset] = {}
"""A worker process's datasets, read once per process."""


def _write_case(
    task: _CaseTask, out_dir: Path, datasets: dict[str, _Dataset] | None
) -> _TaskResult:
    """Write the pages of one case: its reference computed and drawn once."""
    cache = _WORKER_DATASETS if datasets is None else datasets
    dataset = _read_dataset(task.dataset_path, task.known, cache)
    case = None if dataset.cases is None else dataset.cases.get(task.case_id)
    notes: list[str] = []
    case_notes: list[str] = []
    reference = None
    if task.undrawn is None and case is not None:
        reference, problem = _reference(case, dataset.directory)
        if problem is not None:
            notes.append(problem)
            case_notes.append(problem)
    lost: list[str] = []
    shared: list[Picture] = []  # the case's reference pictures, once the first page drew them
    for plan in task.pages:
        _write_page(
            out_dir, plan.relpath, plan.folder, plan.report, case, reference,
            undrawn=task.undrawn, notes=[*plan.notes, *case_notes], note=notes.append,
            lost=lost, code_link=plan.code_link, dataset_tag=dataset.tag, shared=shared,
        )  # fmt: skip
    return _TaskResult(notes, lost, len(task.pages))


REFERENCE_SUFFIX = "-reference"
_ROLE_ORDER = {"submission": 0, "reference": 1, "error": 2}


def _in_page_order(case: Case, pictures: list[Picture]) -> list[Picture]:
    """Per scored array (in the case's order): submission, reference, error."""
    arrays = {path_component(name): k for k, name in enumerate(case.case_spec.output.arrays)}

    def key(picture: Picture) -> tuple[int, int]:
        array, _, role = picture.name.rpartition("-")
        return arrays.get(array, len(arrays)), _ROLE_ORDER.get(role, len(_ROLE_ORDER))

    return sorted(pictures, key=key)


def _reference(
    case: Case, directory: Path | None
) -> tuple[dict[str, NDArray[Any]] | None, str | None]:
    from pdeagent.evaluation.reference import reference_fields

    try:
        return reference_fields(case, directory), None
    except Exception as exc:  # a dataset problem of one case: a note, not the end
        return None, f"case {case.id}: no reference pictures: {type(exc).__name__}: {exc}"


def _write_page(
    out_dir: Path,
    relpath: PurePosixPath,
    folder: Path,
    report: AttemptReport,
    case: Case | None,
    reference: Mapping[str, NDArray[Any]] | None,
    *,
    undrawn: str | None,
    notes: list[str],
    note: Callable[[str], None],
    lost: list[str],
    code_link: tuple[str, str] | None,
    dataset_tag: str,
    shared: list[Picture],
) -> None:
    """Write the page of one attempt and its pictures. ``undrawn``: why no picture is
    drawn at all (None: draw them). ``lost`` receives a line for an attempt graded with
    an error whose solution cannot be drawn. ``code_link``: the page that first showed
    this program (from :func:`_code_link`): linked, not repeated. ``shared``: the case's
    reference pictures, empty until a page of the case drew them: that page writes them
    under :func:`reference_picture_relpath` and fills it; every page links them."""
    page = out_dir / relpath
    report_json, problem = _report_json(folder, report)
    if problem is not None:
        notes.append(problem)
    code, code_file, problem = submitted_code(folder)
    if problem is not None:
        notes.append(problem)
    drawn: list[Picture] | None = None
    linked: dict[str, str] = {}  # a shared reference picture's name -> its src on the page
    if undrawn is not None:
        notes.append(undrawn)
    elif case is not None:  # without the case, the notes already say why
        solution, solution_notes = _solution(folder, case)
        notes.extend(solution_notes)
        if report.error is not None and not solution:  # an error was measured on it
            lost.append(f"{folder}: {solution_notes[0]}")
        first = not shared
        try:
            drawn = field_pictures(case, solution, reference, draw_reference=first)
        except ValueError as exc:  # a broken case (no scored point, bad geometry)
            notes.append(f"no pictures: {exc}")
            note(f"case {case.id}: no pictures: {exc}")
            drawn = []
        if first:
            shared.extend(p for p in drawn if p.name.endswith(REFERENCE_SUFFIX))
        else:
            drawn = _in_page_order(case, [*drawn, *shared])
        for picture in shared:
            target = reference_picture_relpath(dataset_tag, case.id, picture.name + IMAGE_SUFFIX)
            if first:
                atomic_write_bytes(out_dir / target, picture.image)
            linked[picture.name] = f"{relative_to_root(relpath).as_posix()}/{target.as_posix()}"
    files: dict[str, str] = {}
    for picture in drawn or []:
        files[picture.name] = linked.get(picture.name) or f"{picture.name}{IMAGE_SUFFIX}"
        if picture.name not in linked:
            atomic_write_bytes(page.parent / files[picture.name], picture.image)
    html = render_walkthrough(
        case=case, track=report.track, attempt_report=report, code=code, pictures=drawn,
        picture_files=files, report_json=report_json, code_file=code_file, notes=notes,
        page_relpath=relpath, code_link=code_link,
    )  # fmt: skip
    atomic_write_text(page, html)


class _Progress:
    """A rich progress bar on stderr for more than :data:`PROGRESS_MIN_PAGES` pages;
    the context value advances it by one page."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.bar: Any = None

    def __enter__(self) -> Callable[[], None]:
        if self.total <= PROGRESS_MIN_PAGES:
            return lambda: None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.bar = Progress(
            TextColumn("walkthrough pages"), BarColumn(), MofNCompleteColumn(),
            console=Console(stderr=True), transient=True,
        )  # fmt: skip
        self.bar.__enter__()
        task = self.bar.add_task("pages", total=self.total)
        return lambda: self.bar.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)
