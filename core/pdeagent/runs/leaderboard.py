"""The leaderboard page of ``pdeagent report`` (issue #23): every series of the given
runs side by side, written as ``leaderboard.html`` beside ``report.html``.

Built from a :class:`~pdeagent.runs.report.Summary` and the runs it summarises
(nothing is graded again):

- per series (one run, track and model) its pass rate with a 95% Wilson score
  interval, graded and infrastructure counts, the shares of each stage and the cost
  per passed case (unknown, never 0, when any attempt's cost is unknown or no case
  passed);
- per track a heatmap of the pass rate by family (series x family);
- per track the case x series matrix: each case's final verdict (the attempt it came
  from, see :attr:`~pdeagent.runs.report.CaseOutcome.final`) linked to its walkthrough
  page (:func:`~pdeagent.runs.walkthrough.walkthrough_relpath`).

The page is static: no scripts, no external resources, inline CSS. Heatmap colours
follow a cividis-like sequential map (colour-blind safe, lightness rising with the
value, so it reads in grey too) and every coloured cell shows its number. Numbers carry
``data-*`` attributes holding the exact values (JSON) of :func:`leaderboard_dict`.
"""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cattrs
import jinja2
from attrs import define

from pdeagent.fileio import atomic_write_text
from pdeagent.prompts.builder import templates_dir
from pdeagent.runs.report import (
    STAGES,
    CaseOutcome,
    Rate,
    RunData,
    Summary,
    Total,
    case_outcomes,
    cost_per_pass,
    family_order,
)
from pdeagent.runs.walkthrough import walkthrough_relpath

LEADERBOARD_FILE = "leaderboard.html"
LEADERBOARD_TEMPLATE = "leaderboard.html.j2"
LEADERBOARD_SCHEMA_VERSION = 1
Z_95 = 1.959963984540054
"""The standard normal quantile of 0.975: a two-sided 95% interval."""
CONFIDENCE = 0.95

CIVIDIS_ANCHORS = (
    "#00224e", "#1a386f", "#434e6c", "#61656f", "#7d7c78",
    "#9b9476", "#bcae6c", "#dec958", "#fee838",
)  # fmt: skip
"""Nine evenly spaced samples of the cividis colour map (0 to 1): blue to yellow,
lightness rising monotonically. :func:`scale_colour` interpolates between them."""
NO_VALUE_COLOUR = "#ffffff"
"""Background of a heatmap cell without a rate (no graded case)."""
VERDICT_CLASSES = {
    "PASS": "v-pass",
    "F-Exec": "v-fexec",
    "F-Acc": "v-facc",
    "F-Time": "v-ftime",
    "F-Gen": "v-fgen",
    "ERROR": "v-error",
}
VERDICT_CODES = {
    "PASS": "passed: ran, accurate enough and fast enough",
    "F-Exec": "failed to build or run (crash, timeout, no output)",
    "F-Acc": "ran, but the error is above the accuracy threshold",
    "F-Time": "accurate, but slower than the time threshold",
    "F-Gen": "no usable program was generated (no code, context length, filtered, ...)",
    "ERROR": "the harness could not grade (infrastructure failure)",
}
"""The verdicts shown in the matrix, explained in the page's legend."""


# ------------------------------------------------------------------ statistics


def wilson_interval(count: int, total: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of ``count`` successes out of ``total`` trials at the
    two-sided level of the normal quantile ``z`` (95% by default), from scipy's
    ``binomtest(...).proportion_ci(method="wilson")``; None when ``total`` is 0. It
    always contains ``count / total``, starts at 0 when ``count`` is 0 and ends at 1
    when ``count`` is ``total``."""
    from scipy.stats import binomtest, norm

    for name, value in (("count", count), ("total", total)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {value!r}")
    if total < 0 or count < 0 or count > total:
        raise ValueError(f"need 0 <= count <= total, got {count}/{total}")
    if not (math.isfinite(z) and z > 0):
        raise ValueError(f"z must be a positive finite number, got {z!r}")
    if total == 0:
        return None
    level = 2 * float(norm.cdf(z)) - 1
    ci = binomtest(count, total).proportion_ci(confidence_level=level, method="wilson")
    p = count / total
    low = 0.0 if count == 0 else min(p, max(0.0, float(ci.low)))
    high = 1.0 if count == total else max(p, min(1.0, float(ci.high)))
    return low, high


# ----------------------------------------------------------------------- model


@define(frozen=True)
class Interval:
    low: float
    high: float


@define(frozen=True)
class Entry:
    """One series (run, track, model): a row of the leaderboard."""

    label: str
    track: str
    model: str
    run_id: str
    mode: str | None
    provider: str
    pass_rate: Rate
    """PASS cases / graded cases."""
    interval: Interval | None
    """95% Wilson interval of the pass rate; None without graded cases."""
    graded: int
    infrastructure: int
    """Cases none of whose attempts was graded (not in the denominator)."""
    counts: dict[str, int]
    """Graded cases per verdict (:data:`~pdeagent.runs.report.STAGES`)."""
    shares: dict[str, float | None]
    """``counts`` / graded cases."""
    cost_usd: Total
    """Cost of all the series' attempts (``unknown``: attempts without a cost)."""
    cost_per_pass_usd: float | None
    """``cost_usd`` / PASS cases; None (unknown) when any attempt's cost is unknown or
    no case passed."""


@define(frozen=True)
class HeatCell:
    family: str
    rate: Rate
    interval: Interval | None


@define(frozen=True)
class HeatRow:
    series: str
    cells: list[HeatCell | None]
    """One per family of the heatmap; None where the series has no graded case of it."""


@define(frozen=True)
class Heatmap:
    """Pass rate by family of one track's series."""

    track: str
    families: list[str]
    """The families found, in SPEC order, then others, then ``all``."""
    rows: list[HeatRow]


@define(frozen=True)
class MatrixCell:
    verdict: str
    """The case's final verdict (:attr:`~pdeagent.runs.report.CaseOutcome.final`)."""
    reason: str | None
    attempt: int
    """The attempt the verdict came from."""
    href: str
    """Its walkthrough page, relative to the report folder."""
    infrastructure: bool
    """No attempt was graded (not counted in the pass rate)."""
    interrupted: bool
    """Graded, but a later attempt failed on infrastructure."""


@define(frozen=True)
class MatrixRow:
    case_id: str
    cells: list[MatrixCell | None]
    """One per series of the matrix; None where the series has no such case."""


@define(frozen=True)
class Matrix:
    """The case x series verdicts of one track."""

    track: str
    series: list[str]
    """Column labels, in leaderboard order."""
    rows: list[MatrixRow]
    """One per case id of the track, sorted."""


@define(frozen=True)
class Leaderboard:
    tracks: list[str]
    entries: list[Entry]
    """Grouped by track (sorted); within a track by pass rate, highest first (ties:
    higher interval low end first, then label); series without graded cases last."""
    heatmaps: list[Heatmap]
    matrices: list[Matrix]
    confidence: float = CONFIDENCE
    z: float = Z_95
    schema_version: int = LEADERBOARD_SCHEMA_VERSION

    def entries_of(self, track: str) -> list[Entry]:
        return [e for e in self.entries if e.track == track]


# ------------------------------------------------------------------- building


def _interval(rate: Rate) -> Interval | None:
    bounds = wilson_interval(rate.count, rate.total)
    return None if bounds is None else Interval(*bounds)


def _series_keys(
    summary: Summary, outcomes: Sequence[CaseOutcome], data: RunData
) -> dict[tuple[int, str, str], str]:
    """``(run index, track, model)`` -> series label, matching :func:`summarize`'s
    order of series; ValueError when the summary is not of these runs."""
    keys = sorted({(o.run, o.track, o.model) for o in outcomes})
    found = [(t, m, data.runs[r].run_id) for r, t, m in keys]
    expected = [(s.track, s.model, s.run_id) for s in summary.series]
    if found != expected:
        raise ValueError(
            f"the summary does not belong to these runs: its series {expected} vs the runs' {found}"
        )
    return {key: s.label for key, s in zip(keys, summary.series, strict=True)}


def _row_of(rows: Sequence[Any], track: str, label: str) -> Any:
    """The one :class:`StageRow` or :class:`UsageRow` of a series."""
    found = [r for r in rows if (r.track, r.series) == (track, label)]
    if len(found) != 1:
        kind = type(rows[0]).__name__ if rows else "row"
        raise ValueError(f"summary has {len(found)} {kind}s for series {label!r} ({track})")
    return found[0]


def _entry_key(entry: Entry) -> tuple[Any, ...]:
    rate = entry.pass_rate.value
    low = entry.interval.low if entry.interval is not None else 0.0
    return (rate is None, -(rate or 0.0), -low, entry.label)


def leaderboard(summary: Summary, data: RunData) -> Leaderboard:
    """The leaderboard of ``summary`` (:func:`~pdeagent.runs.report.summarize` of
    ``data``): its series ranked per track, the family heatmaps and the case matrices."""
    outcomes = case_outcomes(data)
    labels = _series_keys(summary, outcomes, data)
    entries: list[Entry] = []
    for series in summary.series:
        stage = _row_of(summary.stages, series.track, series.label)
        usage = _row_of(summary.usage, series.track, series.label)
        entries.append(
            Entry(
                label=series.label,
                track=series.track,
                model=series.model,
                run_id=series.run_id,
                mode=series.mode,
                provider=series.provider,
                pass_rate=stage.pass_rate,
                interval=_interval(stage.pass_rate),
                graded=stage.graded,
                infrastructure=stage.infrastructure,
                counts={s: stage.counts[s] for s in STAGES},
                shares={s: stage.shares[s] for s in STAGES},
                cost_usd=usage.cost_usd,
                cost_per_pass_usd=cost_per_pass(usage.cost_usd, stage.pass_rate.count),
            )
        )
    tracks = summary.tracks
    entries.sort(key=lambda e: (tracks.index(e.track), *_entry_key(e)))

    heatmaps: list[Heatmap] = []
    matrices: list[Matrix] = []
    for track in tracks:
        order = [e.label for e in entries if e.track == track]
        rates = {(r.series, r.family): r.rate for r in summary.pass_rates if r.track == track}
        families = sorted({family for _, family in rates}, key=family_order)
        rows = []
        for label in order:
            found = [(f, rates.get((label, f))) for f in families]
            cells_of = [None if r is None else HeatCell(f, r, _interval(r)) for f, r in found]
            rows.append(HeatRow(label, cells_of))
        heatmaps.append(Heatmap(track, families, rows))

        cells: dict[tuple[str, str], MatrixCell] = {}
        for outcome in outcomes:
            if outcome.track != track:
                continue
            final = outcome.final
            run = data.runs[outcome.run]
            href = walkthrough_relpath(
                outcome.run, run.run_id, track, outcome.model, outcome.case_id, final.attempt
            )
            label = labels[(outcome.run, outcome.track, outcome.model)]
            cells[(outcome.case_id, label)] = MatrixCell(
                verdict=final.verdict,
                reason=final.reason,
                attempt=final.attempt,
                href=href.as_posix(),
                infrastructure=outcome.infrastructure,
                interrupted=outcome.interrupted,
            )
        case_ids = sorted({case_id for case_id, _ in cells})
        matrix_rows = [MatrixRow(c, [cells.get((c, label)) for label in order]) for c in case_ids]
        matrices.append(Matrix(track, order, matrix_rows))
    return Leaderboard(tracks=tracks, entries=entries, heatmaps=heatmaps, matrices=matrices)


_converter = cattrs.Converter()
_converter.register_unstructure_hook(
    Rate, lambda r: {"count": r.count, "total": r.total, "rate": r.value}
)


def leaderboard_dict(board: Leaderboard) -> dict[str, Any]:
    """The leaderboard as JSON-able data (for ``report.json``): rates as
    ``{count, total, rate}``, intervals as ``{low, high}`` or null, unknown costs null."""
    data = _converter.unstructure(board)
    return {"schema_version": data.pop("schema_version"), **data}


# ------------------------------------------------------------------- colours


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16)


def scale_colour(value: float) -> str:
    """The cividis-like colour of ``value`` in [0, 1] (``#rrggbb``), linearly
    interpolated between :data:`CIVIDIS_ANCHORS`."""
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"colour scale value must be in [0, 1], got {value!r}")
    position = value * (len(CIVIDIS_ANCHORS) - 1)
    index = min(int(position), len(CIVIDIS_ANCHORS) - 2)
    t = position - index
    lo, hi = _rgb(CIVIDIS_ANCHORS[index]), _rgb(CIVIDIS_ANCHORS[index + 1])
    r, g, b = (round(a + (c - a) * t) for a, c in zip(lo, hi, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def relative_luminance(hex_colour: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb`` (0 black, 1 white)."""

    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in _rgb(hex_colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(first: str, second: str) -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours (1 to 21)."""
    a, b = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def text_colour(background: str) -> str:
    """Black or white, whichever contrasts more with ``background``."""
    black, white = "#000000", "#ffffff"
    on_black, on_white = contrast_ratio(background, black), contrast_ratio(background, white)
    return black if on_black >= on_white else white


# -------------------------------------------------------------------- formats


def format_percent(value: float | None) -> str:
    """``33.3%``; ``-`` without a value."""
    return "-" if value is None else f"{100 * value:.1f}%"


def format_rate(rate: Rate) -> str:
    """``33.3% (2/6)``; ``- (0/0)`` without graded cases."""
    return f"{format_percent(rate.value)} ({rate.count}/{rate.total})"


def format_interval(interval: Interval | None) -> str:
    """``[9.7%, 70.0%]``; ``-`` without graded cases."""
    if interval is None:
        return "-"
    return f"[{format_percent(interval.low)}, {format_percent(interval.high)}]"


def format_cost(value: float | None) -> str:
    """Dollars: ``$1.23`` (``$1,234.50``) from a dollar on, else three significant
    digits (``$0.0350``, ``$0.000120``); ``$0`` for a known zero; ``unknown`` for None."""
    if value is None:
        return "unknown"
    if value >= 1:
        return f"${value:,.2f}"
    if value == 0:
        return "$0"
    return f"${value:#.3g}"


def format_total_cost(total: Total) -> str:
    """The series' cost: ``$0.0700``, ``$0.0700 (+1 unknown)`` or ``unknown``."""
    if total.value is None:
        return "unknown"
    text = format_cost(total.value)
    return f"{text} (+{total.unknown} unknown)" if total.unknown else text


# ----------------------------------------------------------------------- HTML


def _json(value: Any) -> str:
    """A ``data-*`` value: the exact number as JSON (``null`` for None)."""
    return json.dumps(value, allow_nan=False)


def _cost_note(entry: Entry) -> str:
    if entry.cost_per_pass_usd is not None:
        return f"{format_total_cost(entry.cost_usd)} over {entry.pass_rate.count} passed case(s)"
    if entry.pass_rate.count == 0:
        return "no case passed"
    return f"cost unknown for {entry.cost_usd.unknown} attempt(s)"


def _confidence_text(confidence: float) -> str:
    return f"{100 * confidence:g}%"


def _heat_view(cell: HeatCell | None, confidence: str) -> dict[str, Any] | None:
    if cell is None:
        return None
    value = cell.rate.value
    background = NO_VALUE_COLOUR if value is None else scale_colour(value)
    return {
        "family": cell.family,
        "text": format_percent(value),
        "counts": f"{cell.rate.count}/{cell.rate.total}",
        "title": f"{format_rate(cell.rate)}; {confidence} interval "
        f"{format_interval(cell.interval)}",
        "background": background,
        "colour": text_colour(background),
        "rate": _json(value),
        "count": cell.rate.count,
        "total": cell.rate.total,
        "low": _json(None if cell.interval is None else cell.interval.low),
        "high": _json(None if cell.interval is None else cell.interval.high),
    }


def _matrix_view(cell: MatrixCell | None) -> dict[str, Any] | None:
    if cell is None:
        return None
    notes = [f"reason: {cell.reason or 'none'}", f"attempt {cell.attempt}"]
    if cell.infrastructure:
        notes.append("infrastructure failure: not graded, not in the pass rate")
    if cell.interrupted:
        notes.append("a later attempt failed on infrastructure (--resume continues it)")
    return {
        "verdict": cell.verdict,
        "css": VERDICT_CLASSES.get(cell.verdict, "v-other")
        + (" infra" if cell.infrastructure else ""),
        "href": urllib.parse.quote(cell.href),
        "title": "; ".join(notes),
        "attempt": cell.attempt,
        "reason": cell.reason,
    }


def _entry_view(entry: Entry) -> dict[str, Any]:
    interval = entry.interval
    return {
        "entry": entry,
        "rate_text": format_rate(entry.pass_rate),
        "interval_text": format_interval(interval),
        "rate": _json(entry.pass_rate.value),
        "low": _json(None if interval is None else interval.low),
        "high": _json(None if interval is None else interval.high),
        "shares": [
            (stage, format_percent(share), entry.counts[stage], _json(share))
            for stage, share in entry.shares.items()
        ],
        "cost_text": format_total_cost(entry.cost_usd),
        "cost": _json(entry.cost_usd.value),
        "cost_unknown": entry.cost_usd.unknown,
        "per_pass_text": format_cost(entry.cost_per_pass_usd),
        "per_pass": _json(entry.cost_per_pass_usd),
        "per_pass_note": _cost_note(entry),
    }


def _overview(board: Leaderboard) -> list[tuple[str, list[dict[str, Any] | None]]]:
    """Models x tracks: a row per series label (sorted), a cell per track."""
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    labels: dict[str, None] = {}
    for entry in board.entries:
        by_key[(entry.label, entry.track)] = _entry_view(entry)
        labels[entry.label] = None
    return [(label, [by_key.get((label, t)) for t in board.tracks]) for label in sorted(labels)]


def _legend_swatches() -> list[dict[str, str]]:
    swatches = []
    steps = len(CIVIDIS_ANCHORS) - 1
    for i in range(steps + 1):
        colour = scale_colour(i / steps)
        swatches.append(
            {"text": format_percent(i / steps), "background": colour, "colour": text_colour(colour)}
        )
    return swatches


def render_leaderboard(board: Leaderboard) -> str:
    """The static page (``leaderboard.html.j2``): no scripts, no external resources."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,
    )
    confidence = _confidence_text(board.confidence)
    tracks = []
    for track, heatmap, matrix in zip(board.tracks, board.heatmaps, board.matrices, strict=True):
        if (heatmap.track, matrix.track) != (track, track):
            raise ValueError(f"leaderboard sections out of order for track {track!r}")
        heat_rows = [(r.series, [_heat_view(c, confidence) for c in r.cells]) for r in heatmap.rows]
        matrix_rows = [(r.case_id, [_matrix_view(c) for c in r.cells]) for r in matrix.rows]
        tracks.append(
            {
                "name": track,
                "entries": [_entry_view(e) for e in board.entries_of(track)],
                "families": heatmap.families,
                "heat_rows": heat_rows,
                "matrix_series": matrix.series,
                "matrix_rows": matrix_rows,
            }
        )
    return env.get_template(LEADERBOARD_TEMPLATE).render(
        confidence=confidence,
        z=f"{board.z:.2f}",
        stages=list(STAGES),
        track_names=board.tracks,
        overview=_overview(board),
        tracks=tracks,
        swatches=_legend_swatches(),
        no_value_colour=NO_VALUE_COLOUR,
        verdict_codes=[(code, VERDICT_CLASSES[code], text) for code, text in VERDICT_CODES.items()],
    )


def write_leaderboard(summary: Summary, data: RunData, out_dir: Path) -> Path:
    """Write ``out_dir/leaderboard.html`` (atomically) and return its path."""
    path = out_dir / LEADERBOARD_FILE
    atomic_write_text(path, render_leaderboard(leaderboard(summary, data)))
    return path
