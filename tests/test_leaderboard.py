"""The leaderboard page (issue #23): Wilson intervals checked against hand-computed
values, and a leaderboard of the two synthetic runs of ``test_report`` (see its
docstring for every case's verdict), numbers checked by hand.

Wilson 95% intervals (z = 1.959963984540054) used below, computed by hand with
40-digit decimals from ``centre +- halfwidth``::

    0/10  [0,              0.277532799863]     5/10 [0.236593090513, 0.763406909487]
    10/10 [0.722467200137, 1             ]     1/3  [0.061491944720, 0.792340399198]
    2/6   [0.096771411106, 0.700006684862]     3/6  [0.187616306483, 0.812383693517]
    2/4   [0.150038989152, 0.849961010848]     1/2  [0.094531205734, 0.905468794266]
    0/2   [0,              0.657619772493]     1/1  [0.206549314377, 1             ]
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import attrs
import pytest

from pdeagent.runs.layout import attempt_dir
from pdeagent.runs.leaderboard import (
    CIVIDIS_ANCHORS,
    Interval,
    MatrixCell,
    contrast_ratio,
    cost_per_pass,
    format_cost,
    format_interval,
    format_percent,
    format_rate,
    leaderboard,
    leaderboard_dict,
    relative_luminance,
    render_leaderboard,
    scale_colour,
    text_colour,
    wilson_interval,
    write_leaderboard,
)
from pdeagent.runs.records import write_attempt
from pdeagent.runs.report import Rate, Total, load_runs, summarize
from pdeagent.testing import runtime_missing

from .conftest import dom_with_probe
from .test_report import FEEDBACK, SINGLE, TRACK, make_report, make_run

ABS = 1e-11

# ---------------------------------------------------------------------- Wilson


@pytest.mark.parametrize(
    ("count", "total", "low", "high"),
    [
        (0, 10, 0.0, 0.277532799863),
        (10, 10, 0.722467200137, 1.0),
        (5, 10, 0.236593090513, 0.763406909487),
        (1, 3, 0.061491944720, 0.792340399198),
        (2, 6, 0.096771411106, 0.700006684862),
        (0, 2, 0.0, 0.657619772493),
        (1, 1, 0.206549314377, 1.0),
    ],
)
def test_wilson_hand_values(count, total, low, high):
    got = bounds(count, total)
    assert got[0] == pytest.approx(low, abs=ABS) and got[1] == pytest.approx(high, abs=ABS)


def bounds(count: int, total: int, z: float = 1.959963984540054) -> tuple[float, float]:
    got = wilson_interval(count, total, z)
    assert got is not None
    return got


def test_wilson_ends_are_exact_and_symmetric():
    assert bounds(0, 10)[0] == 0.0 and bounds(10, 10)[1] == 1.0
    low, high = bounds(3, 10)
    low2, high2 = bounds(7, 10)
    assert low == pytest.approx(1 - high2, abs=1e-15) and high == pytest.approx(1 - low2)


@pytest.mark.parametrize("z", [0.5, 1.0, 1.959963984540054, 2.576, 5.0])
def test_wilson_always_contains_the_estimate(z):
    for total in range(1, 80):
        for count in range(total + 1):
            low, high = bounds(count, total, z)
            assert 0.0 <= low <= count / total <= high <= 1.0, (count, total, z)
            assert low < high


def test_wilson_narrows_with_more_cases():
    widths = [b - a for a, b in (bounds(n, 2 * n) for n in (1, 5, 50, 500))]
    assert widths == sorted(widths, reverse=True)


def test_wilson_without_cases_and_bad_input():
    assert wilson_interval(0, 0) is None
    for count, total in [(3, 2), (-1, 2), (0, -1)]:
        with pytest.raises(ValueError, match="count <= total"):
            wilson_interval(count, total)
    with pytest.raises(TypeError):
        wilson_interval(True, 2)
    with pytest.raises(TypeError):
        wilson_interval(1.0, 2)
    for z in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="z must be"):
            wilson_interval(1, 2, z)


# ------------------------------------------------------------ colours, formats


def test_scale_colour_interpolates_the_anchors():
    steps = len(CIVIDIS_ANCHORS) - 1
    assert [scale_colour(i / steps) for i in range(steps + 1)] == list(CIVIDIS_ANCHORS)
    between = scale_colour(1 / (2 * steps))
    lo, hi = CIVIDIS_ANCHORS[0], CIVIDIS_ANCHORS[1]
    for k in (1, 3, 5):
        mean = (int(lo[k : k + 2], 16) + int(hi[k : k + 2], 16)) / 2
        assert abs(int(between[k : k + 2], 16) - mean) <= 0.5
    for bad in (-0.01, 1.01, math.nan):
        with pytest.raises(ValueError):
            scale_colour(bad)


def test_scale_reads_in_grey_and_text_contrasts():
    # lightness rises with the value: strictly at 2.5% steps; at 0.1% steps the 8-bit
    # rounding of the channels may dip it by less than a thousandth (invisible)
    coarse = [relative_luminance(scale_colour(i / 40)) for i in range(41)]
    assert all(a < b for a, b in itertools.pairwise(coarse))
    samples = [scale_colour(i / 1000) for i in range(1001)]
    fine = [relative_luminance(c) for c in samples]
    assert all(b > a - 1e-3 for a, b in itertools.pairwise(fine))
    for colour in samples:
        assert text_colour(colour) in ("#000000", "#ffffff")
        assert contrast_ratio(colour, text_colour(colour)) >= 4.5, colour
    assert text_colour(CIVIDIS_ANCHORS[0]) == "#ffffff"
    assert text_colour(CIVIDIS_ANCHORS[-1]) == "#000000"
    assert contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)


def test_formats():
    assert format_percent(None) == "-" and format_percent(1 / 3) == "33.3%"
    assert format_rate(Rate(2, 6)) == "33.3% (2/6)" and format_rate(Rate(0, 0)) == "- (0/0)"
    assert format_interval(None) == "-"
    assert format_interval(Interval(0.0967, 0.70001)) == "[9.7%, 70.0%]"
    assert format_cost(None) == "unknown"
    assert format_cost(0.035) == "$0.0350" and format_cost(0.00012) == "$0.000120"
    assert format_cost(0.0) == "$0"
    assert format_cost(12.5) == "$12.50" and format_cost(1234.5) == "$1,234.50"


def test_cost_per_pass_is_unknown_not_zero():
    assert cost_per_pass(Total(0.07, 0), 2) == pytest.approx(0.035)
    assert cost_per_pass(Total(0.0, 0), 2) == 0.0  # known to be free
    assert cost_per_pass(Total(0.07, 1), 2) is None  # one attempt's cost unknown
    assert cost_per_pass(Total(None, 3), 2) is None
    assert cost_per_pass(Total(0.07, 0), 0) is None  # nothing passed


# ------------------------------------------------------------ the leaderboard

MODEL_B_DIR = "org_model-b-08040d03"
"""``path_component("org/model-b")``."""


@pytest.fixture
def data(tmp_path: Path):
    return load_runs(
        [
            make_run(tmp_path / "single", "run-single", "single", SINGLE),
            make_run(tmp_path / "feedback", "run-feedback", "feedback", FEEDBACK),
        ]
    )


@pytest.fixture
def board(data):
    return leaderboard(summarize(data), data)


def entry(board, label: str):
    (found,) = [e for e in board.entries if e.label == label]
    return found


def test_entries_ranked_with_intervals(board):
    assert board.tracks == [TRACK]
    labels = [e.label for e in board.entries]
    # 3/6 and 2/4 tie at 50%: the one with more graded cases has the higher low end
    assert labels == ["org/model-b", "model-a [feedback]", "model-a [single]"]
    got = {
        e.label: (e.pass_rate, e.graded, e.infrastructure, e.run_id, e.mode) for e in board.entries
    }
    assert got == {
        "org/model-b": (Rate(3, 6), 6, 0, "run-single", "single"),
        "model-a [feedback]": (Rate(2, 4), 4, 0, "run-feedback", "feedback"),
        "model-a [single]": (Rate(2, 6), 6, 2, "run-single", "single"),
    }
    hand = {
        "org/model-b": (0.187616306483, 0.812383693517),
        "model-a [feedback]": (0.150038989152, 0.849961010848),
        "model-a [single]": (0.096771411106, 0.700006684862),
    }
    for label, (low, high) in hand.items():
        interval = entry(board, label).interval
        assert interval.low == pytest.approx(low, abs=ABS)
        assert interval.high == pytest.approx(high, abs=ABS)


def test_stage_shares(board):
    b = entry(board, "org/model-b")
    assert b.counts == {"PASS": 3, "F-Exec": 2, "F-Acc": 1, "F-Time": 0, "F-Gen": 0}
    assert b.shares == pytest.approx(
        {"PASS": 0.5, "F-Exec": 1 / 3, "F-Acc": 1 / 6, "F-Time": 0.0, "F-Gen": 0.0}
    )
    a = entry(board, "model-a [single]")
    assert a.shares == pytest.approx(
        {"PASS": 2 / 6, "F-Exec": 1 / 6, "F-Acc": 1 / 6, "F-Time": 1 / 6, "F-Gen": 1 / 6}
    )
    f = entry(board, "model-a [feedback]")
    assert f.shares == pytest.approx(
        {"PASS": 0.5, "F-Exec": 0.0, "F-Acc": 0.25, "F-Time": 0.25, "F-Gen": 0.0}
    )


def test_cost_per_pass(board):
    # feedback run: 7 readable attempts at $0.01 each, 2 passed
    f = entry(board, "model-a [feedback]")
    assert f.cost_usd.value == pytest.approx(0.07) and f.cost_usd.unknown == 0
    assert f.cost_per_pass_usd == pytest.approx(0.035)
    # single run, model-a: a_p3's cost is unknown, so the cost per pass is too
    a = entry(board, "model-a [single]")
    assert a.cost_usd.value == pytest.approx(0.07) and a.cost_usd.unknown == 1
    assert a.cost_per_pass_usd is None
    # org/model-b reports no cost at all
    assert entry(board, "org/model-b").cost_usd == Total(None, 6)
    assert entry(board, "org/model-b").cost_per_pass_usd is None


def test_family_heatmap(board):
    (heatmap,) = board.heatmaps
    assert heatmap.track == TRACK
    assert heatmap.families == ["poisson", "heat", "wave", "all"]
    got = {
        row.series: [None if c is None else (c.rate.count, c.rate.total) for c in row.cells]
        for row in heatmap.rows
    }
    assert got == {
        "org/model-b": [(1, 2), (2, 2), (0, 2), (3, 6)],
        "model-a [feedback]": [(1, 2), (1, 2), None, (2, 4)],
        "model-a [single]": [(1, 3), (0, 2), (1, 1), (2, 6)],
    }
    assert [r.series for r in heatmap.rows] == [e.label for e in board.entries]
    wave = heatmap.rows[0].cells[2]
    assert wave.family == "wave" and wave.interval.low == 0.0
    assert wave.interval.high == pytest.approx(0.657619772493, abs=ABS)


def single_cell(verdict, reason, case, attempt=0, *, model="model-a", run="0-run-single",
                infrastructure=False, interrupted=False) -> MatrixCell:  # fmt: skip
    href = f"cases/{run}/{TRACK}/{model}/{case}/attempt-{attempt}/index.html"
    return MatrixCell(verdict, reason, attempt, href, infrastructure, interrupted)


def test_case_matrix(board):
    (matrix,) = board.matrices
    assert matrix.track == TRACK
    assert matrix.series == ["org/model-b", "model-a [feedback]", "model-a [single]"]
    case_ids = [r.case_id for r in matrix.rows]
    assert case_ids == sorted({s["case"] for s in [*SINGLE, *FEEDBACK]})
    assert len(case_ids) == 18
    cells = {r.case_id: r.cells for r in matrix.rows}
    b, fb = dict(model=MODEL_B_DIR), dict(run="1-run-feedback")
    assert cells["b_p2"] == [single_cell("F-Exec", "timeout", "b_p2", **b), None, None]
    assert cells["b_h2"] == [single_cell("PASS", None, "b_h2", **b), None, None]
    # feedback: the first PASS (attempt 1); the last graded attempt (2); attempt 1 of
    # fa_h2 is unreadable, so it ends at attempt 0
    assert cells["fa_p1"] == [None, single_cell("PASS", None, "fa_p1", 1, **fb), None]
    assert cells["fa_p2"] == [None, single_cell("F-Time", None, "fa_p2", 2, **fb), None]
    assert cells["fa_h2"] == [None, single_cell("F-Acc", None, "fa_h2", 0, **fb), None]
    assert cells["a_h2"] == [None, None, single_cell("F-Exec", "runtime_error", "a_h2")]
    assert cells["a_p3"] == [
        None, None, single_cell("F-Gen", "provider_error", "a_p3", infrastructure=True)
    ]  # fmt: skip
    assert cells["a_w2"] == [None, None, single_cell("ERROR", None, "a_w2", infrastructure=True)]
    assert cells["a_p4"][2].verdict == "F-Gen" and not cells["a_p4"][2].infrastructure
    assert all(sum(c is not None for c in r.cells) == 1 for r in matrix.rows)


def test_summary_of_other_runs_is_refused(data, tmp_path):
    other = load_runs([data.runs[0].path])
    with pytest.raises(ValueError, match="does not belong to these runs"):
        leaderboard(summarize(other), data)


def test_dict_is_strict_json(board):
    data = json.loads(json.dumps(leaderboard_dict(board), allow_nan=False))
    assert next(iter(data)) == "schema_version"
    first = data["entries"][0]
    assert first["label"] == "org/model-b"
    assert first["pass_rate"] == {"count": 3, "total": 6, "rate": 0.5}
    assert first["interval"]["low"] == pytest.approx(0.187616306483, abs=ABS)
    assert first["cost_usd"] == {"value": None, "unknown": 6}
    assert first["cost_per_pass_usd"] is None
    assert data["entries"][1]["cost_per_pass_usd"] == pytest.approx(0.035)
    assert data["heatmaps"][0]["rows"][1]["cells"][2] is None
    row = data["matrices"][0]["rows"][0]
    assert row["case_id"] == "a_h1" and row["cells"][:2] == [None, None]
    assert row["cells"][2] == {
        "verdict": "F-Time",
        "reason": "runtime_above_tau",
        "attempt": 0,
        "href": f"cases/0-run-single/{TRACK}/model-a/a_h1/attempt-0/index.html",
        "infrastructure": False,
        "interrupted": False,
    }
    assert data["confidence"] == 0.95


# ----------------------------------------------------------------------- HTML


class Elements(HTMLParser):
    """Start tags with their attributes, and the links and text of matrix cells."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Elements:
    parser = Elements()
    parser.feed(html)
    parser.close()
    return parser


def with_attr(page: Elements, name: str) -> list[dict[str, str]]:
    return [a for _, a in page.tags if name in a]


def test_html_is_static_and_shows_every_number(board):
    html = render_leaderboard(board)
    assert "<script" not in html.lower()
    assert "http://" not in html and "https://" not in html
    assert "<img" not in html and "<link" not in html and "@import" not in html
    for text in ["50.0% (3/6)", "[18.8%, 81.2%]", "50.0% (2/4)", "[15.0%, 85.0%]",
                 "33.3% (2/6)", "[9.7%, 70.0%]", "$0.0350", "$0.0700",
                 "$0.0700 (+1 unknown)", "Wilson score interval", "cividis"]:  # fmt: skip
        assert text in html, text
    for e in board.entries:
        assert format_rate(e.pass_rate) in html and format_interval(e.interval) in html
        assert format_cost(e.cost_per_pass_usd) in html
        for stage in e.shares:
            assert f"{format_percent(e.shares[stage])} ({e.counts[stage]})" in html
    page = parse(html)
    text = "".join(page.text)
    for verdict in ("PASS", "F-Exec", "F-Acc", "F-Time", "F-Gen", "ERROR"):
        assert verdict in text


def test_html_data_attributes_match_the_dict(board):
    page = parse(render_leaderboard(board))
    data = leaderboard_dict(board)
    overview = {a["data-series"]: a for a in with_attr(page, "data-ci-low") if "data-graded" in a}
    assert set(overview) == {e["label"] for e in data["entries"]}
    for e in data["entries"]:
        attrs_ = overview[e["label"]]
        assert json.loads(attrs_["data-pass-rate"]) == e["pass_rate"]["rate"]
        assert json.loads(attrs_["data-ci-low"]) == e["interval"]["low"]
        assert json.loads(attrs_["data-ci-high"]) == e["interval"]["high"]
        assert int(attrs_["data-graded"]) == e["graded"]
        assert int(attrs_["data-infrastructure"]) == e["infrastructure"]
        assert attrs_["data-track"] == e["track"]
    per_pass = [json.loads(a["data-cost-per-pass"]) for a in with_attr(page, "data-cost-per-pass")]
    assert per_pass == [e["cost_per_pass_usd"] for e in data["entries"]]
    heat = {(a["data-series"], a["data-family"]): a for a in with_attr(page, "data-family")}
    expected = {
        (row.series, cell.family): cell
        for row in board.heatmaps[0].rows
        for cell in row.cells
        if cell is not None
    }
    assert set(heat) == set(expected)
    for key, cell in expected.items():
        attrs_ = heat[key]
        assert json.loads(attrs_["data-pass-rate"]) == cell.rate.value
        assert json.loads(attrs_["data-ci-low"]) == cell.interval.low
        background = scale_colour(cell.rate.value)
        assert (
            f"background-color: {background}; color: {text_colour(background)}" == (attrs_["style"])
        )
    # 3/6 is 50.0%, the midpoint anchor
    assert heat[("org/model-b", "all")]["style"].startswith("background-color: #7d7c78;")


def test_html_links_every_matrix_cell(board):
    page = parse(render_leaderboard(board))
    links = [a["href"] for tag, a in page.tags if tag == "a" and a["href"].startswith("cases/")]
    expected = [c.href for row in board.matrices[0].rows for c in row.cells if c is not None]
    assert links == expected and len(links) == 18
    assert f"cases/0-run-single/{TRACK}/{MODEL_B_DIR}/b_w1/attempt-0/index.html" in links
    titles = {a["href"]: a["title"] for tag, a in page.tags if tag == "a" and "title" in a}
    assert titles[f"cases/1-run-feedback/{TRACK}/model-a/fa_p2/attempt-2/index.html"] == (
        "reason: none; attempt 2"
    )
    assert titles[f"cases/0-run-single/{TRACK}/model-a/a_p3/attempt-0/index.html"] == (
        "reason: provider_error; attempt 0; infrastructure failure: not graded, "
        "not in the pass rate"
    )
    # the other anchors: the link to report.html beside it
    others = [a["href"] for tag, a in page.tags if tag == "a" and a["href"] not in links]
    assert others == ["report.html"]
    verdicts = [a["data-verdict"] for a in with_attr(page, "data-verdict")]
    assert len(verdicts) == 18


def test_write_leaderboard(data, tmp_path):
    summary = summarize(data)
    out = tmp_path / "report"
    path = write_leaderboard(summary, data, out)
    assert path == out / "leaderboard.html"
    assert path.read_text(encoding="utf-8") == render_leaderboard(leaderboard(summary, data))
    assert [p.name for p in out.iterdir()] == ["leaderboard.html"]


# ------------------------------------------------- two tracks, nothing passed


def write_run(root: Path, run_id: str, mode: str, reports: list[Any]) -> Path:
    """A run folder of ready-made reports (``make_run`` writes one track only)."""
    tracks = sorted({r.track for r in reports})
    models = sorted({r.model for r in reports})
    manifest = {"schema_version": 1, "run_id": run_id,
                "config": {"tracks": tracks, "provider": "fake", "models": models,
                           "mode": mode, "attempts": 2}}  # fmt: skip
    root.mkdir(parents=True)
    (root / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    for r in reports:
        write_attempt(attempt_dir(root, r.track, r.model, r.case_id, r.attempt) / "report.json", r)
    return root


def test_two_tracks_nothing_passed_and_hostile_names(tmp_path):
    hostile = '<script>alert("x")</script>'

    def rep(track: str, model: str, case: str, verdict: str, **extra: Any):
        spec = dict(model=model, case=case, family="poisson", verdict=verdict, cost=0.25)
        return attrs.evolve(make_report(spec, "feedback"), track=track, **extra)

    reports = [
        rep("dolfinx", "m1", "p1", "F-Acc", reason="error_above_tau"),
        rep("dolfinx", "m1", "p2", "F-Exec", reason="timeout"),
        # interrupted: graded at attempt 0, attempt 1 failed on infrastructure
        rep("dolfinx", "m1", "p3", "F-Acc"),
        rep("dolfinx", "m1", "p3", "ERROR", attempt=1, infrastructure=True),
        rep("firedrake", "m1", "p1", "PASS"),
        rep("firedrake", hostile, "p1", "ERROR", infrastructure=True),
    ]
    run = write_run(tmp_path / "run", "r1", "feedback", reports)
    data = load_runs([run])
    board = leaderboard(summarize(data), data)
    assert board.tracks == ["dolfinx", "firedrake"]
    assert [(e.track, e.label) for e in board.entries] == [
        ("dolfinx", "m1"), ("firedrake", "m1"), ("firedrake", hostile)
    ]  # fmt: skip
    d_m1, f_m1, f_hostile = board.entries
    assert d_m1.pass_rate == Rate(0, 3) and d_m1.cost_usd == Total(1.0, 0)
    assert d_m1.cost_per_pass_usd is None  # known cost, nothing passed: unknown, not 0
    assert d_m1.interval.low == 0.0
    assert f_m1.cost_per_pass_usd == pytest.approx(0.25)
    assert f_hostile.graded == 0 and f_hostile.infrastructure == 1
    assert f_hostile.pass_rate == Rate(0, 0) and f_hostile.interval is None
    assert [m.track for m in board.matrices] == ["dolfinx", "firedrake"]
    p3 = board.matrices[0].rows[2]
    assert p3.case_id == "p3"
    assert p3.cells == [
        MatrixCell("F-Acc", None, 0, "cases/0-r1/dolfinx/m1/p3/attempt-0/index.html", False, True)
    ]
    hostile_cell = board.matrices[1].rows[0].cells[1]
    assert hostile_cell.infrastructure and hostile_cell.verdict == "ERROR"
    assert hostile_cell.href.startswith("cases/0-r1/firedrake/_script_alert__x____script_-")
    # the hostile series has no graded case: its "all" cell is 0/0, uncoloured
    all_cell = board.heatmaps[1].rows[1].cells[-1]
    assert all_cell.family == "all" and all_cell.rate == Rate(0, 0) and all_cell.interval is None

    html = render_leaderboard(board)
    assert hostile not in html and "<script" not in html.lower()
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    page = parse(html)
    overview = [a for a in with_attr(page, "data-graded") if "data-ci-low" in a]
    # models x tracks: a row per label (sorted), a cell per track it has
    assert [(a["data-track"], a["data-series"]) for a in overview] == [
        ("firedrake", hostile), ("dolfinx", "m1"), ("firedrake", "m1")
    ]  # fmt: skip
    assert json.loads(overview[0]["data-pass-rate"]) is None
    assert json.loads(overview[0]["data-ci-low"]) is None
    empty = next(a for a in with_attr(page, "data-family") if a["data-series"] == hostile)
    assert empty["style"] == "background-color: #ffffff; color: #000000"
    assert "- (0/0)" in html and "no case passed" in html
    assert "a later attempt failed on infrastructure" in html
    rows = [r for _, r in page.tags if "data-cost-per-pass" in r]
    assert [json.loads(r["data-cost-per-pass"]) for r in rows] == [None, 0.25, None]


def test_empty_runs_render(tmp_path):
    run = write_run(tmp_path / "run", "r0", "single", [])
    data = load_runs([run])
    board = leaderboard(summarize(data), data)
    assert board.entries == [] and board.matrices == [] and board.heatmaps == []
    html = render_leaderboard(board)
    assert "No readable attempt reports" in html


# ---------------------------------------------------------------- real browser


@pytest.mark.slow
def test_leaderboard_colours_apply_in_headless_chromium(board, tmp_path):
    """The page's inline styles survive its Content-Security-Policy: a checking copy
    (one inline script allowed) records each heatmap cell's computed colours."""
    chromium = shutil.which("chromium")
    if chromium is None:
        runtime_missing("chromium not installed")
    html = render_leaderboard(board)
    probe = (
        "<script>window.addEventListener('load', () => {"
        "for (const td of document.querySelectorAll('td.heat')) {"
        "const s = getComputedStyle(td);"
        "td.dataset.seen = s.backgroundColor + '|' + s.color; } });</script>"
    )
    dom = dom_with_probe(chromium, html, probe, tmp_path / "checked.html", tmp_path / "profile")
    cells = [a for _, a in parse(dom).tags if "data-seen" in a]
    assert len(cells) == 11

    def rgb(hex_colour: str) -> str:
        r, g, b = (int(hex_colour[k : k + 2], 16) for k in (1, 3, 5))
        return f"rgb({r}, {g}, {b})"

    for cell in cells:
        background = scale_colour(json.loads(cell["data-pass-rate"]))
        assert cell["data-seen"] == f"{rgb(background)}|{rgb(text_colour(background))}"
