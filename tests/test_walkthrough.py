"""Walkthrough pages (issue #23): field pictures on the evaluation grid, the page of one
attempt, and every page of a run. Numbers, not looks: colour scales against the scored
points, captions against the format functions, pages against report.json."""

from __future__ import annotations

import html
import html.parser
import io
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pytest

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import case_from_dict, case_to_dict
from pdeagent.evaluation.reference import reference_fields
from pdeagent.geometry import evaluation_mask, get_geometry, grid_axes
from pdeagent.runs import walkthrough
from pdeagent.runs.layout import REPORT_FILE, attempt_dir
from pdeagent.runs.records import AttemptReport, attempt_to_dict, write_attempt
from pdeagent.runs.report import load_runs
from pdeagent.runs.walkthrough import (
    COLOUR_LEVELS,
    ERROR_CMAP,
    ERROR_SIGN_TEXT,
    FIELD_CMAP,
    IMAGE_SUFFIX,
    JSON_WIDTH,
    NONFINITE_COLOUR,
    OUTSIDE_COLOUR,
    Picture,
    compact_json,
    field_format,
    field_pictures,
    fmt_error,
    fmt_range,
    fmt_seconds,
    fmt_sig,
    fmt_value,
    image_size,
    is_webp,
    relative_to_root,
    render_walkthrough,
    walkthrough_relpath,
    write_walkthroughs,
)

from .conftest import SAMPLE_CASE_ID, SAMPLE_CASES

pytest.importorskip("matplotlib")
PIL = pytest.importorskip("PIL.Image")

REPO = Path(__file__).resolve().parents[1]
DATASET = REPO / "cases" / "pdeagent-v1.jsonl"
MAX_PICTURE_BYTES = 60_000


def _scored(case) -> np.ndarray:
    spec = case.case_spec
    geometry = get_geometry(spec.domain.type, spec.domain.geometry_params)
    return evaluation_mask(spec.eval_grid, geometry).scored


def _by_name(pictures: list[Picture]) -> dict[str, Picture]:
    return {p.name: p for p in pictures}


def _decode(data: bytes) -> np.ndarray:
    with PIL.open(io.BytesIO(data)) as image:
        image.load()
        return np.asarray(image.convert("RGB"))


def _magenta(data: bytes) -> int:
    return int(np.all(_decode(data) == [255, 0, 255], axis=-1).sum())


def _dataset_record(predicate) -> dict[str, Any]:
    with DATASET.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                record = json.loads(line)
                if predicate(record):
                    return record
    raise AssertionError("no such case in the dataset")


# ----------------------------------------------------------------------- formats


def test_the_formats_are_the_stated_ones():
    assert fmt_range(-0.03121, 1.0249) == "[-0.0312, 1.02]"
    assert fmt_sig(2.5e-7) == "2.5e-07" and fmt_sig(0.5) == "0.5"
    assert fmt_error(1.23456e-3) == "1.235e-03" and fmt_error(None) == "none"
    assert fmt_error(float("nan")) == "nan" and fmt_error(float("inf")) == "inf"
    assert fmt_seconds(0.0123456) == "0.01235" and fmt_seconds(12.0) == "12"
    assert fmt_value(True) == "true" and fmt_value(1681) == "1681" and fmt_value(None) == "none"
    assert fmt_value(1.0 / 3.0) == "0.333333"
    assert fmt_value({"b": 1, "a": [2]}) == '{"a": [2], "b": 1}'
    assert field_format("tau_acc") is fmt_error and field_format("runtime_samples") is fmt_seconds
    assert field_format("diagnostics") is fmt_value


def test_relative_to_root_follows_the_page_depth():
    page = walkthrough_relpath(3, "run/1", "numpy_fd", "Qwen/Qwen2.5", "case a", 2)
    assert len(page.parts) == 7 and page.parts[0] == "cases" and page.name == "index.html"
    assert relative_to_root(page) == PurePosixPath("../../../../../..")
    assert str(relative_to_root(page) / "report.html") == "../../../../../../report.html"
    assert relative_to_root(PurePosixPath("a/index.html")) == PurePosixPath("..")
    assert relative_to_root("index.html") == PurePosixPath(".")
    for bad in ("/abs/index.html", "../x/index.html", "a/./b.html"):
        with pytest.raises(ValueError):
            relative_to_root(bad)


# ---------------------------------------------------------------------- pictures


def test_pictures_of_a_perturbed_field_use_the_scored_points_only(case):
    reference = reference_fields(case)
    scored = _scored(case)
    ny, nx = case.case_spec.eval_grid.shape
    jj, ii = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
    perturbation = 1e-3 * np.sin(0.7 * ii + 0.3 * jj) + 2e-4
    perturbation[~scored] = 1e6  # unscored points must not move any scale
    solution = {"u": reference["u"] + perturbation}

    pictures = _by_name(field_pictures(case, solution, reference))
    assert sorted(pictures) == ["u-error", "u-reference", "u-submission"]

    top = float(np.max(np.abs(perturbation[scored])))
    assert 9e-4 < top < 1.3e-3
    error = pictures["u-error"]
    assert error.vmin == pytest.approx(-top, rel=1e-9)
    assert error.vmax == pytest.approx(top, rel=1e-9)
    assert fmt_range(error.vmin, error.vmax) in error.caption
    difference = (solution["u"] - reference["u"])[scored]
    assert f"range {fmt_range(difference.min(), difference.max())}" in error.caption
    assert "signed error submission \u2212 reference" in error.caption

    sub, ref = pictures["u-submission"], pictures["u-reference"]
    truth = reference["u"][scored]
    # the reference on its own range (one file for every model), the submission on it
    assert (sub.vmin, sub.vmax) == (ref.vmin, ref.vmax)
    assert ref.vmin == pytest.approx(float(truth.min()), rel=1e-12)
    assert ref.vmax == pytest.approx(float(truth.max()), rel=1e-12)
    assert float(solution["u"][scored].max()) > ref.vmax  # this submission goes beyond
    assert "the reference's range: values beyond it in the end colours" in sub.caption
    assert "values beyond" not in ref.caption
    assert sub.vmax < 10  # not the 1e6 of the unscored band
    assert sub.caption.startswith("u, submission, 41\u00d741 grid, scored points coloured, range ")
    values = solution["u"][scored]
    assert f"range {fmt_range(values.min(), values.max())}" in sub.caption
    assert f"colour scale {fmt_range(sub.vmin, sub.vmax)}" in sub.caption
    assert "reference (exact solution)" in ref.caption
    for picture in pictures.values():
        assert "hatched dark grey: inside the domain but not scored" in picture.caption
        assert "outside the domain" not in picture.caption  # the unit square has no outside
        assert "non-finite" not in picture.caption
        assert is_webp(picture.image)
        assert len(picture.image) < MAX_PICTURE_BYTES, (picture.name, len(picture.image))
        pixels = _decode(picture.image)
        height, width = pixels.shape[:2]
        assert (width, height) == image_size(picture.image)
        assert width <= 600 and height <= 600


def test_the_submission_is_drawn_on_the_reference_scale_beyond_it_in_the_end_colour(case):
    from matplotlib import colormaps

    reference = reference_fields(case)
    scored = _scored(case)
    truth = reference["u"][scored]
    top = tuple(round(255 * c) for c in colormaps[FIELD_CMAP](1.0)[:3])

    def top_pixels(picture: Picture) -> int:
        return int(np.all(_decode(picture.image) == top, axis=-1).sum())

    exact = _by_name(field_pictures(case, {"u": reference["u"]}, reference))
    above = {"u": reference["u"] + 10.0 * float(truth.max() - truth.min())}
    pictures = _by_name(field_pictures(case, above, reference, draw_reference=False))
    assert sorted(pictures) == ["u-error", "u-submission"]  # the case's one file is reused
    sub = pictures["u-submission"]
    assert (sub.vmin, sub.vmax) == (exact["u-reference"].vmin, exact["u-reference"].vmax)
    # every scored cell in the top colour: far more of it than the colour bar's end alone
    assert top_pixels(sub) > 20 * top_pixels(exact["u-submission"])
    assert "values beyond it in the end colours" in sub.caption
    values = above["u"][scored]
    assert f"range {fmt_range(values.min(), values.max())}" in sub.caption  # its own range
    (alone,) = field_pictures(case, above, None)  # no reference: its own range
    assert alone.vmin == pytest.approx(float(values.min()), rel=1e-12)
    assert "values beyond" not in alone.caption


def _luminance(rgba: np.ndarray) -> np.ndarray:
    """WCAG relative luminance of sRGB colours (what a grey rendering keeps)."""
    c = np.asarray(rgba)[..., :3]
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def test_the_colour_maps_read_in_grey_and_the_error_caption_says_the_sign():
    from matplotlib import colormaps

    field = colormaps[FIELD_CMAP].resampled(COLOUR_LEVELS)
    assert np.all(np.diff(_luminance(field(np.arange(COLOUR_LEVELS)))) > 0)  # value -> shade
    error = colormaps[ERROR_CMAP].resampled(COLOUR_LEVELS)
    shade = _luminance(error(np.arange(COLOUR_LEVELS)))
    half = COLOUR_LEVELS // 2
    assert np.all(np.diff(shade[:half]) > 0) and np.all(np.diff(shade[half:]) < 0)  # |error|
    low, high = error(0.0), error(1.0)
    assert low[0] > low[2] and high[2] > high[1]  # orange below zero, purple above
    assert ERROR_SIGN_TEXT.startswith("orange: submission below the reference, purple: above")


def test_a_picture_keeps_every_palette_colour_exactly_and_maps_others_to_the_nearest():
    from matplotlib import colormaps

    cmap = colormaps[FIELD_CMAP].resampled(COLOUR_LEVELS)
    palette = walkthrough._palette(cmap)
    assert len(palette) <= 256 and (255, 255, 255) in palette and (0, 0, 0) in palette
    assert (0xFF, 0x00, 0xFF) in palette and (0xD9, 0xD9, 0xD9) in palette
    rng = np.random.default_rng(7)
    exact = np.asarray(palette, dtype=np.uint8)[rng.integers(0, len(palette), (60, 80))]
    off = exact.astype(int).copy()
    off[::2] = np.clip(off[::2] + rng.integers(-1, 2, off[::2].shape), 0, 255)  # a step off
    for pixels in (exact, off.astype(np.uint8)):
        buffer = io.BytesIO()
        PIL.fromarray(pixels, "RGB").save(buffer, format="PNG")
        image = walkthrough._lossless_webp(buffer.getvalue(), palette)
        assert is_webp(image)
        decoded = _decode(image).astype(int)
        colours = np.asarray(palette)
        nearest = colours[((pixels.astype(int)[..., None, :] - colours) ** 2).sum(-1).argmin(-1)]
        assert np.array_equal(decoded, nearest)
    buffer = io.BytesIO()
    PIL.fromarray(exact, "RGB").save(buffer, format="PNG")
    assert np.array_equal(_decode(walkthrough._lossless_webp(buffer.getvalue(), palette)), exact)


def test_points_outside_the_domain_are_named_in_the_caption():
    record = _dataset_record(
        lambda r: (
            r["case_spec"]["domain"]["type"] == "annulus"
            and r["evaluation_metadata"]["construction_method"] == "manufactured_solution"
        )
    )
    case = case_from_dict(record)
    reference = reference_fields(case)
    pictures = field_pictures(case, {}, reference)
    assert [p.name for p in pictures] == ["u-reference"]  # no submission: no error either
    (picture,) = pictures
    assert "light grey: outside the domain" in picture.caption
    scored = _scored(case)
    assert picture.vmin == pytest.approx(float(reference["u"][scored].min()), rel=1e-12)
    assert len(picture.image) < MAX_PICTURE_BYTES
    grey = np.all(_decode(picture.image) == [0xD9, 0xD9, 0xD9], axis=-1).sum()
    assert OUTSIDE_COLOUR == "#d9d9d9" and grey > 5000  # the hole and the corners


def test_non_finite_scored_values_are_counted_and_drawn_in_magenta(case):
    reference = reference_fields(case)
    scored = _scored(case)
    solution = reference["u"].copy()
    points = np.argwhere(scored)[[5, 50, 500]]
    for (j, i), bad in zip(points, (np.nan, np.inf, -np.inf), strict=True):
        solution[j, i] = bad
    solution[0, 0] = np.nan  # unscored: not counted

    pictures = _by_name(field_pictures(case, {"u": solution}, reference))
    for name in ("u-submission", "u-error"):
        picture = pictures[name]
        assert "3 non-finite scored points in magenta" in picture.caption, picture.caption
        assert picture.vmin is not None and math.isfinite(picture.vmin)
        assert picture.vmax is not None and math.isfinite(picture.vmax)
    one = reference["u"].copy()
    one[tuple(points[0])] = np.nan
    single = _by_name(field_pictures(case, {"u": one}, reference))
    assert "1 non-finite scored point in magenta" in single["u-submission"].caption
    for name in ("u-submission", "u-error"):  # two more cells drawn magenta (the legend aside)
        assert _magenta(pictures[name].image) > _magenta(single[name].image) + 20, name
    assert "non-finite" not in pictures["u-reference"].caption
    assert _magenta(pictures["u-reference"].image) == 0
    assert NONFINITE_COLOUR == "#ff00ff"
    finite = reference["u"][scored]
    assert pictures["u-submission"].vmax == pytest.approx(float(finite.max()), rel=1e-12)
    assert pictures["u-error"].vmax == pytest.approx(0.0, abs=1e-15)

    nothing = solution.copy()
    nothing[scored] = np.nan
    (sub,) = field_pictures(case, {"u": nothing}, None)
    assert sub.vmin is None and sub.vmax is None
    assert "range: no finite value at a scored point" in sub.caption
    assert f"{int(scored.sum())} non-finite scored points" in sub.caption


def test_a_wrong_array_is_refused_not_drawn(case):
    with pytest.raises(ValueError, match="shape"):
        field_pictures(case, {"u": np.zeros((3, 3))}, None)


def test_a_3d_case_shows_its_mid_plane():
    record = _dataset_record(lambda r: r["case_spec"]["domain"]["type"] == "unit_cube")
    case = case_from_dict(record)
    grid = case.case_spec.eval_grid
    assert grid.nz is not None and grid.nz % 2 == 1
    reference = reference_fields(case)
    solution = {"u": 1.01 * reference["u"]}
    pictures = _by_name(field_pictures(case, solution, reference))
    assert sorted(pictures) == ["u-error", "u-reference", "u-submission"]
    k = grid.nz // 2
    z = grid_axes(grid)[2][k]
    scored = _scored(case)
    plane = reference["u"][k][scored[k]]
    assert not math.isclose(plane.max(), reference["u"][scored].max())  # the slice matters
    for picture in pictures.values():
        assert f"mid-plane z = {fmt_sig(z)} (k = {k} of nz = {grid.nz})" in picture.caption
        assert f"{grid.nx}\u00d7{grid.ny}\u00d7{grid.nz} grid" in picture.caption
        assert len(picture.image) < MAX_PICTURE_BYTES
    assert pictures["u-reference"].vmin == pytest.approx(float(plane.min()), rel=1e-12)
    assert pictures["u-submission"].vmax == pytest.approx(float(plane.max()), rel=1e-12)
    assert f"range {fmt_range(1.01 * plane.min(), 1.01 * plane.max())}" in (
        pictures["u-submission"].caption
    )
    assert pictures["u-error"].vmax == pytest.approx(0.01 * float(np.abs(plane).max()), rel=1e-9)


def test_a_transient_case_says_t_end():
    record = _dataset_record(
        lambda r: (
            r["case_spec"]["pde"]["time"] is not None
            and r["case_spec"]["output"].get("components")
            and r["evaluation_metadata"]["construction_method"] == "manufactured_solution"
        )
    )
    case = case_from_dict(record)
    t_end = case.case_spec.pde.time.t_end
    reference = reference_fields(case)
    pictures = field_pictures(case, {}, reference)
    assert [p.name for p in pictures] == [f"{c}-reference" for c in case.case_spec.output.arrays]
    assert len(pictures) >= 2
    for picture in pictures:
        assert f", at t_end = {fmt_sig(t_end)}," in picture.caption


def test_a_zero_mean_pressure_is_compared_as_scored(case):
    record = case_to_dict(case)
    record["case_spec"]["output"]["pressure"] = {"array": "p", "normalization": "zero_mean"}
    record["evaluation_metadata"]["manufactured_solution"]["p"] = "x - y"
    flow = case_from_dict(record)
    reference = reference_fields(flow)
    solution = {"u": reference["u"], "p": reference["p"] + 5.0}  # another constant
    pictures = _by_name(field_pictures(flow, solution, reference))
    assert abs(pictures["p-error"].vmax) < 1e-12  # the constant does not count
    assert pictures["u-error"].vmax == pytest.approx(0.0, abs=1e-15)
    assert "minus its mean over the scored points" in pictures["p-submission"].caption
    assert pictures["p-submission"].vmax == pictures["p-reference"].vmax


# -------------------------------------------------------------------------- pages


class _Page(html.parser.HTMLParser):
    """The facts of a page a test checks: data-field elements, links, images, the code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.fields: list[tuple[str, list[Any], str]] = []
        self.links: list[str] = []
        self.images: list[dict[str, str]] = []
        self.figcaptions: list[str] = []
        self.code = ""
        self.tags: set[str] = set()
        self._stack: list[tuple[str, dict[str, str], list[str]]] = []
        self._in_code = 0

    def handle_starttag(self, tag, attrs):
        attributes = {k: v or "" for k, v in attrs}
        self.tags.add(tag)
        if tag == "img":
            self.images.append(attributes)
            self.links.append(attributes.get("src", ""))
            return
        for key in ("href", "src", "action"):
            if key in attributes:
                self.links.append(attributes[key])
        if tag in ("br", "meta", "link", "input", "hr"):
            return
        if tag == "div" and "code" in attributes.get("class", "").split():
            self._in_code = 1
        elif self._in_code:
            self._in_code += 1 if tag == "div" else 0
        self._stack.append((tag, attributes, []))

    def handle_endtag(self, tag):
        if tag in ("img", "br", "meta", "link", "input", "hr"):
            return
        while self._stack:
            open_tag, attributes, text = self._stack.pop()
            content = "".join(text)
            if self._stack:
                self._stack[-1][2].append(content)
            if "data-field" in attributes and "data-path" in attributes:
                path = json.loads(attributes["data-path"])
                self.fields.append((attributes["data-field"], path, content))
            if open_tag == "figcaption":
                self.figcaptions.append(content)
            if open_tag == "div" and self._in_code:
                self._in_code -= 1
                if not self._in_code:
                    self.code = content
            if open_tag == tag:
                break

    def handle_data(self, data):
        if self._stack:
            self._stack[-1][2].append(data)


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


def _lookup(data: Any, path: list[Any]) -> Any:
    for key in path:
        data = data[key]
    return data


def _check_fields(page: _Page, report: dict[str, Any]) -> dict[str, list[str]]:
    """Every data-field's text is report.json's value at its path through its format."""
    seen: dict[str, list[str]] = {}
    for field, path, text in page.fields:
        assert text == field_format(field)(_lookup(report, path)), (field, path, text)
        seen.setdefault(field, []).append(text)
    return seen


def _report(**changes: Any) -> AttemptReport:
    values: dict[str, Any] = dict(
        track="numpy_fd", provider="baseline", model="m", case_id=SAMPLE_CASE_ID, attempt=1,
        mode="feedback", verdict="F-Time", reason="runtime_above_tau", message="too slow",
        family="poisson", geometry="unit_square", math_type=["elliptic"], dimension=2,
        error=1.2345e-4, runtime_sec=12.5, runtime_samples=[12.25, 12.5, 13.125],
        repeat_errors=[1.25e-4, 1.5e-4, 1.0e-4],
        thresholds={"tau_acc": 1e-2, "tau_time": 10.0, "e_base": 1e-3, "t_base": 3.0,
                    "t_null": None, "time_rule": "solve", "protocol": 2, "source": "dataset"},
        metrics={"rmse": 1e-5, "rel_l2_groups": {"u": 1.2345e-4}},
        diagnostics={"dofs": 1681, "solver_info": {"ksp": "cg", "iterations": 12}},
        stderr_excerpt="warning: <b>slow</b>",
    )  # fmt: skip
    values.update(changes)
    return AttemptReport(**values)


def test_the_page_shows_report_json_through_the_formats(case):
    report = _report(model="<script>alert(1)</script>")
    data = attempt_to_dict(report)
    picture = field_pictures(case, {}, reference_fields(case))[0]
    relpath = walkthrough_relpath(0, "r", report.track, report.model, report.case_id, 1)
    text = render_walkthrough(
        case=case, track="numpy_fd", attempt_report=report, code="import numpy as np\nx = '<y>'\n",
        pictures=[picture], picture_files={picture.name: "u-reference.webp"}, report_json=data,
        code_file="solver.py", notes=["a <note>"], page_relpath=relpath,
    )  # fmt: skip
    assert "<script" not in text and "&lt;script&gt;" in text
    assert "<note>" not in text and "<b>slow</b>" not in text
    page = _parse(text)
    seen = _check_fields(page, data)
    assert seen["verdict"] == ["F-Time"] and seen["reason"] == ["runtime_above_tau"]
    assert (seen["family"], seen["geometry"], seen["dimension"]) == (
        ["poisson"],
        ["unit_square"],
        ["2"],
    )
    assert seen["error"] == [fmt_error(1.2345e-4)]
    assert seen["tau_acc"] == ["1.000e-02"] and seen["tau_time"] == ["10"]
    assert seen["runtime_sec"] == ["12.5"]
    assert seen["runtime_samples"] == ["12.25", "12.5", "13.12"]
    assert seen["repeat_errors"] == ["1.250e-04", "1.500e-04", "1.000e-04"]
    assert sorted(seen["diagnostics"]) == ["12", "1681", "cg"]
    assert "script" not in page.tags and "iframe" not in page.tags
    assert page.images == [
        {"src": "u-reference.webp", "loading": "lazy", "width": "480", "height": "400",
         "alt": picture.caption}
    ]  # fmt: skip
    assert page.figcaptions == [picture.caption]
    assert "../../../../../../report.html" in page.links
    assert "x = '<y>'" in page.code
    assert "import numpy as np" in page.code
    assert "Stopped at" in text and "time: accurate, but slower than tau_time" in text
    assert "agent-view" in text and '"eval_grid": {' in text  # the case_spec, compact
    shown = re.search(r'<details id="agent-view">.*?<pre>(.*?)</pre>', text, re.S)
    assert shown is not None
    assert json.loads(html.unescape(shown.group(1))) == agent_view(case, "numpy_fd")

    bare = render_walkthrough(
        case=None, track="numpy_fd", attempt_report=_report(verdict="F-Gen", reason="no_code",
        error=None, runtime_sec=None, runtime_samples=[], repeat_errors=[], thresholds=None,
        metrics={}, diagnostics={}), code=None, pictures=None, picture_files={},
        report_json=attempt_to_dict(_report(verdict="F-Gen", reason="no_code", error=None,
        runtime_sec=None, runtime_samples=[], repeat_errors=[], thresholds=None)),
    )  # fmt: skip
    bare_page = _parse(bare)
    assert dict((f, t) for f, _, t in bare_page.fields)["error"] == "none"
    assert "Pictures were not drawn" in bare and "dataset of the run could not be read" in bare
    assert not bare_page.images


def test_a_picture_src_is_a_relative_path_inside_the_report(case):
    picture = field_pictures(case, {}, reference_fields(case))[0]

    def page(src: str) -> str:
        return render_walkthrough(
            case=case, track="numpy_fd", attempt_report=_report(), code=None,
            pictures=[picture], picture_files={picture.name: src},
            report_json=attempt_to_dict(_report()),
        )  # fmt: skip

    for bad in ("/tmp/x.webp", "a/../b.webp", "./x.webp", "a//b.webp", "x\\y.webp", "", "..",
                "https://example.org/x.webp"):  # fmt: skip
        with pytest.raises(ValueError, match="relative path"):
            page(bad)
    shared = "../../../../../../cases/references/0123abcd/case a/u-reference.webp"
    assert _parse(page(shared)).images[0]["src"] == shared.replace(" ", "%20")
    assert _parse(page("u:x.webp")).images[0]["src"] == "u%3Ax.webp"  # never a URL scheme


def test_compact_json_is_the_same_json_on_fewer_lines(case):
    view = agent_view(case, "numpy_fd")
    text = compact_json(view)
    assert json.loads(text) == view
    lines = text.splitlines()
    assert len(lines) < 0.6 * len(json.dumps(view, indent=2).splitlines())
    assert all(len(line) <= JSON_WIDTH for line in lines if '": "' not in line)
    assert compact_json({"a": [1, 2]}) == '{"a": [1, 2]}'
    wide = {"b": ["x" * 50, "y" * 50], "a": {"c": 1}}
    assert compact_json(wide) == (
        '{\n  "a": {"c": 1},\n  "b": [\n    "' + "x" * 50 + '",\n    "' + "y" * 50 + '"\n  ]\n}'
    )


# ------------------------------------------------------------------ a run's pages


def _fake_run(root: Path, cases_file: str, reports: list[AttemptReport]) -> Path:
    """A run folder written by hand (no sandbox): run.json and the attempts' files."""
    root.mkdir(parents=True)
    manifest = {"schema_version": 1, "run_id": "fake",
                "config": {"cases_file": cases_file, "mode": "single"}}  # fmt: skip
    (root / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    for report in reports:
        folder = attempt_dir(root, report.track, report.model, report.case_id, report.attempt)
        folder.mkdir(parents=True)
        write_attempt(folder / REPORT_FILE, report)
    return root


def test_an_unreadable_dataset_is_noted_once_and_pages_are_still_written(tmp_path):
    reports = [_report(attempt=0), _report(attempt=1, model="n")]
    run = _fake_run(tmp_path / "run", str(tmp_path / "missing.jsonl"), reports)
    folder = attempt_dir(run, "numpy_fd", "m", SAMPLE_CASE_ID, 0)
    (folder / "solver.py").write_text("print('first line')\n", encoding="utf-8")
    (folder / "solver.cc").symlink_to("/etc/hostname")  # not a regular file: never read
    notes: list[str] = []
    out = tmp_path / "report"
    pages = write_walkthroughs(load_runs([run]), out, pictures=True, note=notes.append)
    assert set(pages) == {(0, "numpy_fd", "m", SAMPLE_CASE_ID, 0),
                          (0, "numpy_fd", "n", SAMPLE_CASE_ID, 1)}  # fmt: skip
    assert len(notes) == 1 and "missing.jsonl" in notes[0] and "unreadable" in notes[0]
    assert not list(out.rglob("*" + IMAGE_SUFFIX))
    first = (out / pages[(0, "numpy_fd", "m", SAMPLE_CASE_ID, 0)]).read_text(encoding="utf-8")
    assert "missing.jsonl" in first and "print(" in _parse(first).code
    assert "solver.cc not shown: solver.cc is not a regular file" in first
    _check_fields(_parse(first), attempt_to_dict(reports[0]))


def test_worker_processes_write_the_same_pages_and_one_reference_per_case(tmp_path, monkeypatch):
    from .test_run import make_cases

    cases_file = make_cases(tmp_path, n=3)
    records = [json.loads(line) for line in cases_file.read_text().splitlines()]
    reference = reference_fields(case_from_dict(records[0]))  # one spec under three ids
    reports = [
        _report(case_id=r["id"], model=model, attempt=0, verdict="F-Acc",
                reason="error_above_tau", error=0.01)
        for r in records for model in ("m1", "m2")
    ]  # fmt: skip
    run = _fake_run(tmp_path / "run", str(cases_file), reports)
    for i, report in enumerate(reports):
        folder = attempt_dir(run, report.track, report.model, report.case_id, 0)
        (folder / "artifacts").mkdir()
        np.savez(folder / "artifacts" / "solution.npz", u=reference["u"] * (1 + 0.01 * (i + 1)))
        (folder / "solver.py").write_text(f"print({i})\n" if i % 2 else "print('same')\n")
    data = load_runs([run])
    notes: list[str] = []
    drawn_references: list[str] = []
    real_field_pictures = walkthrough.field_pictures

    def counting(case, solution, reference, *, draw_reference=True):
        if draw_reference:
            drawn_references.append(case.id)
        return real_field_pictures(case, solution, reference, draw_reference=draw_reference)

    monkeypatch.setattr(walkthrough, "field_pictures", counting)  # this process's pages only
    serial = write_walkthroughs(data, tmp_path / "serial", note=notes.append, jobs=1)
    assert sorted(drawn_references) == sorted(r["id"] for r in records)  # once per case
    parallel = write_walkthroughs(data, tmp_path / "parallel", note=notes.append, jobs=2)
    assert serial == parallel and len(serial) == 6 and notes == []

    def files(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
                if p.is_file()}  # fmt: skip

    written = files(tmp_path / "serial")
    assert written == files(tmp_path / "parallel")  # byte for byte
    references = [name for name in written if name.startswith("cases/references/")]
    assert len(references) == 3 and all(n.endswith("/u-reference.webp") for n in references)
    assert sum(name.endswith("/u-submission.webp") for name in written) == 6
    pages = [written[relpath.as_posix()].decode() for relpath in serial.values()]
    assert sum("The same program (SHA-256" in page for page in pages) == 2  # 3 equal: 1 shown
    with pytest.raises(ValueError, match="jobs"):
        write_walkthroughs(data, tmp_path / "none", jobs=0)


def test_a_hostile_solution_file_is_a_note_not_a_crash(tmp_path):
    report = _report(attempt=0, verdict="F-Acc", reason="error_above_tau", error=0.5)
    run = _fake_run(tmp_path / "run", str(SAMPLE_CASES), [report])
    folder = attempt_dir(run, "numpy_fd", "m", SAMPLE_CASE_ID, 0)
    (folder / "artifacts").mkdir()
    buffer = io.BytesIO()
    np.savez(buffer, u=np.array([object()], dtype=object), x=np.zeros(3))  # a pickle inside
    (folder / "artifacts" / "solution.npz").write_bytes(buffer.getvalue())
    notes: list[str] = []
    out = tmp_path / "report"
    pages = write_walkthroughs(load_runs([run]), out, note=notes.append)
    page = out / pages[(0, "numpy_fd", "m", SAMPLE_CASE_ID, 0)]
    text = page.read_text(encoding="utf-8")
    assert "no submission pictures: artifacts/solution.npz" in text
    assert len(notes) == 1 and notes[0].startswith("1 graded attempt(s) without a solution")
    assert "no submission pictures: artifacts/solution.npz" in notes[0]
    assert not list(page.parent.glob("*" + IMAGE_SUFFIX))  # no submission, no error picture
    (reference,) = (out / "cases" / "references").rglob("*" + IMAGE_SUFFIX)
    assert reference.name == "u-reference.webp" and "u-reference.webp" in text


def test_without_matplotlib_the_pages_say_why_there_are_no_pictures(tmp_path, monkeypatch):
    from pdeagent import extras
    from pdeagent.runs import walkthrough

    def missing(name):
        raise extras.MissingExtra(extras.EXTRAS[name])

    monkeypatch.setattr(walkthrough, "require", missing)
    run = _fake_run(tmp_path / "run", str(SAMPLE_CASES), [_report(attempt=0), _report(attempt=1)])
    notes: list[str] = []
    pages = write_walkthroughs(load_runs([run]), tmp_path / "out", note=notes.append)
    assert len(pages) == 2 and not list((tmp_path / "out").rglob("*" + IMAGE_SUFFIX))
    assert notes == [f"walkthrough pictures not drawn: {extras.missing_message('report')}"]
    for relpath in pages.values():
        text = (tmp_path / "out" / relpath).read_text(encoding="utf-8")
        assert "pip install &#39;pdeagent[report]&#39;" in text


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory) -> Path:
    """A real run of the sample track's baseline (one case, one attempt)."""
    out = tmp_path_factory.mktemp("walkthrough") / "run"
    run = subprocess.run(
        [sys.executable, "-m", "pdeagent.cli.main", "run", "--track", "numpy_fd",
         "--provider", "baseline", "--cases-file", str(SAMPLE_CASES), "--no-cache",
         "--out", str(out)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if run.returncode != 0:
        pytest.fail(f"pdeagent run failed ({run.returncode}):\n{run.stderr[-3000:]}")
    return out


def _inside(base: Path, target: Path) -> bool:
    return target.resolve().is_relative_to(base.resolve())


@pytest.mark.sandbox
def test_the_pages_of_a_real_run(sample_run, tmp_path):
    data = load_runs([sample_run])
    (run,) = data.runs
    assert len(run.reports) == 1
    notes: list[str] = []
    out = tmp_path / "report"
    pages = write_walkthroughs(data, out, pictures=True, note=notes.append)
    assert notes == []
    key = (0, "numpy_fd", "baseline", SAMPLE_CASE_ID, 0)
    assert pages == {key: walkthrough_relpath(0, run.run_id, *key[1:])}
    folder = attempt_dir(sample_run, "numpy_fd", "baseline", SAMPLE_CASE_ID, 0)
    report = json.loads((folder / REPORT_FILE).read_text(encoding="utf-8"))
    assert report["verdict"] == "PASS"
    assert len(report["runtime_samples"]) >= 2

    page_path = out / pages[key]
    text = page_path.read_text(encoding="utf-8")
    page = _parse(text)
    seen = _check_fields(page, report)
    assert seen["verdict"] == ["PASS"]
    assert seen["error"] == [fmt_error(report["error"])]
    assert seen["tau_acc"] == [fmt_error(report["thresholds"]["tau_acc"])]
    assert seen["runtime_sec"] == [fmt_seconds(report["runtime_sec"])]
    assert seen["tau_time"] == [fmt_seconds(report["thresholds"]["tau_time"])]
    assert seen["runtime_samples"] == [fmt_seconds(v) for v in report["runtime_samples"]]

    source = (folder / "solver.py").read_text(encoding="utf-8")
    first_line = next(line for line in source.splitlines() if line.strip())
    assert first_line.strip() in page.code

    assert "script" not in page.tags and "http://" not in text and "https://" not in text
    srcs = [img["src"] for img in page.images]
    assert srcs[0] == "u-submission.webp" and srcs[2] == "u-error.webp"
    shared = out / "cases" / "references"
    (reference_file,) = shared.rglob("*" + IMAGE_SUFFIX)  # one per case, beside no page
    assert reference_file.name == "u-reference.webp"
    assert (page_path.parent / srcs[1]).resolve() == reference_file.resolve()
    for link in page.links:
        assert link and not link.startswith(("/", "//")) and ":" not in link, link
        assert _inside(out, page_path.parent / link), link
    assert "../../../../../../report.html" in page.links
    for image in page.images:
        picture_bytes = (page_path.parent / image["src"]).read_bytes()
        assert is_webp(picture_bytes) and len(picture_bytes) < MAX_PICTURE_BYTES
        assert image_size(picture_bytes) == (int(image["width"]), int(image["height"]))
        assert image["loading"] == "lazy" and image["alt"] in page.figcaptions
    error_caption = next(c for c in page.figcaptions if "signed error" in c)
    assert "range [" in error_caption and "41\u00d741 grid" in error_caption

    copy = tmp_path / "copy"
    shutil.copytree(sample_run, copy, symlinks=True)
    twice = load_runs([sample_run, copy])  # two runs of one dataset: one reference picture
    both = write_walkthroughs(twice, tmp_path / "twice", pictures=True, note=notes.append)
    assert len(both) == 2 and notes == []
    shown = set()
    for relpath in both.values():
        second = _parse((tmp_path / "twice" / relpath).read_text(encoding="utf-8"))
        src = next(img["src"] for img in second.images if img["src"].endswith("u-reference.webp"))
        shown.add(((tmp_path / "twice" / relpath).parent / src).resolve())
    assert len(shown) == 1 and len(list((tmp_path / "twice").rglob("u-reference.webp"))) == 1

    quick = tmp_path / "quick"
    assert write_walkthroughs(data, quick, pictures=False, note=notes.append) == pages
    assert not list(quick.rglob("*" + IMAGE_SUFFIX)) and notes == []
    quick_text = (quick / pages[key]).read_text(encoding="utf-8")
    assert "pictures were not drawn (asked for pages without them)" in quick_text
    quick_page = _parse(quick_text)
    assert not quick_page.images
    _check_fields(quick_page, report)
