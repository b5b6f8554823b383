"""How a :class:`~pdeagent.runs.report.Summary` is shown: console tables, CSV files,
PNG figures and one self-contained HTML page.

Every table is built once (:func:`build_tables`) and then written in each format.
Names in the runs (models, cases, reasons, paths) are untrusted: console cells are
plain :class:`rich.text.Text` (no markup), CSV text cells cannot start a
spreadsheet formula, figure labels cannot start mathtext, and the HTML template
autoescapes everything and forbids scripts (Content-Security-Policy).
"""

from __future__ import annotations

import base64
import csv
import io
import os
import sys
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
from attrs import define
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from pdeagent.extras import MissingExtra, require
from pdeagent.fileio import atomic_write_bytes, atomic_write_json, atomic_write_text
from pdeagent.prompts.builder import templates_dir
from pdeagent.runs.layout import path_component
from pdeagent.runs.report import (
    ALPHA_ACC_GRID,
    ALPHA_TIME_GRID,
    DIAGNOSTIC_KEYS,
    METRIC_KEYS,
    STAGES,
    CalibrationInfo,
    Rate,
    Summary,
    Total,
    family_order,
)
from pdeagent.runs.report_agent import ENDINGS
from pdeagent.runs.report_attempts import (
    ATTEMPT_TABLE_TITLE,
    attempt_caption,
    attempt_columns,
    attempt_figure,
)

HTML_TEMPLATE = "report.html.j2"
STAGE_COLOURS = {
    "PASS": "#2ca02c",
    "F-Exec": "#d62728",
    "F-Acc": "#ff7f0e",
    "F-Time": "#9467bd",
    "F-Gen": "#7f7f7f",
}
AUX_COLUMNS = {
    "error": "error",
    "runtime_sec": "runtime (s)",
    "error_over_tau_acc": "error/tau_acc",
    "runtime_over_tau_time": "runtime/tau_time",
}
"""Auxiliary medians (keys of :attr:`AuxRow.medians`) and their column titles."""
_DASH = "-"
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@define(frozen=True)
class Money:
    """A :class:`Total` of US dollars (shown as ``$``; unknown costs stay unknown)."""

    total: Total


@define(frozen=True)
class Table:
    name: str
    """File stem of the CSV (``stages`` -> ``stages.csv``)."""
    title: str
    columns: list[str]
    rows: list[list[Any]]
    """Cells: str, int, float, :class:`Rate`, :class:`Total`, :class:`Money` or None."""


@define(frozen=True)
class Link:
    """A cell linking a file of a run folder: ``text`` on the console, the path in the
    CSV, a link relative to the report's folder in the HTML page."""

    text: str
    path: str


@define(frozen=True)
class FigureImage:
    name: str
    """File stem of the PNG."""
    title: str
    png: bytes


# ------------------------------------------------------------------------- cells


def cell_text(value: Any) -> str:
    """A cell as shown on the console and in HTML."""
    if value is None:
        return _DASH
    if isinstance(value, Rate):
        rate = value.value
        return _DASH if rate is None else f"{100 * rate:.1f}% ({value.count}/{value.total})"
    if isinstance(value, Money):
        return _total_text(value.total, lambda v: f"${v:.4f}")
    if isinstance(value, Link):
        return value.text
    if isinstance(value, Total):
        return _total_text(value, lambda v: f"{v:,.0f}")
    if isinstance(value, float):
        return f"{value:,.0f}" if 1e3 <= abs(value) < 1e9 else f"{value:.3g}"
    return str(value)


def _total_text(total: Total, fmt: Any) -> str:
    if total.value is None:
        return "unknown" if total.unknown else _DASH
    text = fmt(total.value)
    return f"{text} (+{total.unknown} unknown)" if total.unknown else text


def _is_numeric(value: Any) -> bool:
    return isinstance(value, int | float | Rate | Total | Money) and not isinstance(value, bool)


def _numeric_columns(table: Table) -> list[bool]:
    return [
        all(_is_numeric(row[i]) or row[i] is None for row in table.rows)
        and any(row[i] is not None for row in table.rows)
        for i in range(len(table.columns))
    ]


def _csv_cells(column: str, values: Sequence[Any]) -> tuple[list[str], list[list[Any]]]:
    """One table column as CSV columns: a rate expands to rate, count and total; a
    total to value and unknown count."""
    kinds = {type(v) for v in values if v is not None}
    if kinds == {Rate}:
        header = [column, f"{column} count", f"{column} total"]
        cells = [[None, None, None] if v is None else [v.value, v.count, v.total] for v in values]
    elif kinds in ({Total}, {Money}):
        header = [column, f"{column} unknown"]
        totals = [v.total if isinstance(v, Money) else v for v in values]
        cells = [[None, None] if t is None else [t.value, t.unknown] for t in totals]
    else:
        header = [column]
        cells = [[_csv_safe(v)] for v in values]
    return header, cells


def _csv_safe(value: Any) -> Any:
    if isinstance(value, Link):
        value = value.path
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def table_csv(table: Table) -> str:
    header: list[str] = []
    columns: list[list[list[Any]]] = []
    for i, column in enumerate(table.columns):
        names, cells = _csv_cells(column, [row[i] for row in table.rows])
        header.extend(names)
        columns.append(cells)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for r in range(len(table.rows)):
        writer.writerow(["" if v is None else v for col in columns for v in col[r]])
    return buffer.getvalue()


# ------------------------------------------------------------------------ tables


def _runs_table(summary: Summary) -> Table:
    rows = [
        [
            run.run_id,
            run.mode,
            run.provider,
            ", ".join(run.tracks) or None,
            ", ".join(run.models) or None,
            run.attempts,
            "; ".join(run.grading) or None,
            "; ".join(_calibration_text(c) for c in run.calibrations) or None,
            run.created,
            run.reports,
            len(run.unreadable),
        ]
        for run in summary.runs
    ]
    columns = ["run", "mode", "provider", "tracks", "models", "attempts", "graded with"]
    columns.append("thresholds calibrated on")
    return Table("runs", "Runs", [*columns, "created", "reports", "unreadable reports"], rows)


def _calibration_text(info: CalibrationInfo) -> str:
    """``local backend, this machine (12 attempts)`` or ``bwrap backend, OTHER machine``."""
    backend = info.backend if info.backend.startswith("backend") else f"{info.backend} backend"
    where = {True: "this machine", False: "OTHER machine", None: "grading machine unknown"}
    moved = f", {info.calibration}" if info.calibration else ""
    return f"{backend}, {where[info.same_machine]}{moved} ({info.attempts} attempts)"


def _family_tables(summary: Summary) -> list[Table]:
    tables = []
    for track in summary.tracks:
        labels = [s.label for s in summary.series if s.track == track]
        cells = {(r.family, r.series): r.rate for r in summary.pass_rates if r.track == track}
        families = sorted({family for family, _ in cells}, key=family_order)
        rows = [[family, *(cells.get((family, label)) for label in labels)] for family in families]
        name = f"pass_rates_{path_component(track)}"
        tables.append(Table(name, f"Pass rate by family: {track}", ["family", *labels], rows))
    return tables


def _per_series(
    name: str, title: str, columns: list[str], rows: Sequence[Any], cells: Callable[[Any], list]
) -> Table:
    """A table with a row per summary row, led by its track and series."""
    return Table(
        name, title, ["track", "model", *columns], [[r.track, r.series, *cells(r)] for r in rows]
    )


def build_tables(summary: Summary) -> list[Table]:
    """Every table of the report, in the order shown."""
    stages = summary.stages
    present = {k for row in summary.diagnostics for k in row.medians}
    diag_keys = [k for k in DIAGNOSTIC_KEYS if k in present]
    tables = [
        _runs_table(summary),
        *_family_tables(summary),
        _per_series(
            "stages",
            "Failure stages (shares of graded cases; infrastructure failures apart)",
            ["graded", *STAGES, "infrastructure", "interrupted"],
            stages,
            lambda s: [s.graded, *s.stage_rates(), s.infrastructure, s.interrupted],
        ),
        Table(
            "fgen_reasons",
            "F-Gen reasons (generation failures, counted in the denominator)",
            ["track", "model", "reason", "cases"],
            [[s.track, s.series, k, n] for s in stages for k, n in s.fgen_reasons.items()],
        ),
        Table(
            "fexec_reasons",
            "F-Exec reasons",
            ["track", "model", "reason", "cases"],
            [[s.track, s.series, k, n] for s in stages for k, n in s.fexec_reasons.items()],
        ),
        _per_series(
            "stage_rates",
            "Stage pass rates (executed / graded, accurate / executed, fast / accurate)",
            ["executability", "accuracy", "time", "pass rate"],
            stages,
            lambda s: [s.executability, s.accuracy, s.time, s.pass_rate],
        ),
        _per_series(
            "auxiliary",
            "Auxiliary metrics over passed cases (medians)",
            ["passed", *AUX_COLUMNS.values(), *METRIC_KEYS],
            summary.auxiliary,
            lambda a: [a.passed, *(a.medians[k] for k in [*AUX_COLUMNS, *METRIC_KEYS])],
        ),
        _per_series(
            "diagnostics",
            "Solver diagnostics by math type (medians over cases that reported them)",
            ["math type", "cases", *diag_keys],
            summary.diagnostics,
            lambda d: [d.math_type, d.cases, *(d.medians.get(k) for k in diag_keys)],
        ),
        _per_series(
            "sensitivity",
            "Threshold sensitivity (other alpha as run; unknown = accurate but never timed)",
            ["parameter", "alpha", "pass rate", "unknown", "no baseline"],
            summary.sensitivity,
            lambda r: [r.parameter, r.alpha, r.rate, r.unknown, r.no_baseline],
        ),
        _per_series(
            "usage",
            "Tokens and cost (all attempts)",
            ["attempts", "input tokens", "output tokens", "cost (USD)"],
            summary.usage,
            lambda u: [u.attempts, u.input_tokens, u.output_tokens, Money(u.cost_usd)],
        ),
    ]
    if summary.feedback:
        tables.append(
            _per_series(
                "feedback",
                "Single-shot vs feedback (pass at attempt 0 vs final)",
                ["mode", "max attempts", "graded", "pass@attempt-0", "final"],
                summary.feedback,
                lambda f: [f.mode, f.max_attempts, f.graded, f.pass_at_first, f.final],
            )
        )
    if summary.agent:
        endings = [*ENDINGS, "other"]
        tables.append(
            _per_series(
                "agent",
                "Agent episodes (graded cases): how they ended, medians per episode, cost",
                [
                    "episodes",
                    *endings,
                    "turns",
                    "command time (s)",
                    "tokens",
                    "cost (USD)",
                    "cost per pass (USD)",
                ],
                summary.agent,
                lambda a: [
                    a.episodes,
                    *(a.endings.get(k, 0) for k in endings),
                    a.median_turns,
                    a.median_tool_time_sec,
                    a.median_tokens,
                    Money(a.cost_usd),
                    a.cost_per_pass_usd,
                ],
            )
        )
        tables.append(
            _per_series(
                "agent_cases",
                "Agent episodes by case (the transcript of each is linked)",
                [
                    "case",
                    "verdict",
                    "reason",
                    "status",
                    "turns",
                    "tool calls",
                    "command time (s)",
                    "tokens",
                    "cost (USD)",
                    "transcript",
                ],
                summary.agent_cases,
                lambda c: [
                    c.case_id,
                    c.verdict,
                    c.reason,
                    c.status,
                    c.turns,
                    c.tool_calls,
                    c.tool_time_sec,
                    c.tokens,
                    c.cost_usd,
                    Link("transcript", c.transcript) if c.transcript else None,
                ],
            )
        )
    if summary.pass_rate_by_attempt:
        columns, cells = attempt_columns(summary)
        tables.append(
            _per_series(
                "pass_rate_by_attempt",
                ATTEMPT_TABLE_TITLE,
                columns,
                summary.pass_rate_by_attempt,
                cells,
            )
        )
    return tables


# ----------------------------------------------------------------------- console


def print_report(summary: Summary, console: Console) -> None:
    """All tables on the console; unreadable reports are named first."""
    for run in summary.runs:
        for warning in run.warnings:
            console.print(Text(f"warning: {warning}", style="yellow"))
        if run.unreadable:
            console.print(
                Text(
                    f"warning: run {run.run_id}: {len(run.unreadable)} unreadable report(s), "
                    f"not counted: {', '.join(run.unreadable)}",
                    style="yellow",
                )
            )
    if not summary.series:
        console.print(Text("no readable attempt reports in the given runs"))
    for table in build_tables(summary):
        if not table.rows:
            continue
        rich_table = RichTable(title=Text(table.title), title_justify="left")
        for column, numeric in zip(table.columns, _numeric_columns(table), strict=True):
            rich_table.add_column(Text(column), justify="right" if numeric else "left")
        for row in table.rows:
            rich_table.add_row(*(Text(cell_text(v)) for v in row))
        console.print(rich_table)


# ----------------------------------------------------------------------- figures


def _plain(text: str) -> str:
    """A label matplotlib shows literally (no mathtext)."""
    return text.replace("$", r"\$")


def _series_names(summary: Summary) -> dict[tuple[str, str], str]:
    several = len(summary.tracks) > 1
    return {
        (s.track, s.label): _plain(f"{s.label} ({s.track})" if several else s.label)
        for s in summary.series
    }


def _percent(rate: Rate | None) -> float:
    value = None if rate is None else rate.value
    return float("nan") if value is None else 100 * value


def _png(fig: Any) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def _family_figure(summary: Summary, track: str) -> Any:
    from matplotlib.figure import Figure

    labels = [s.label for s in summary.series if s.track == track]
    cells = {(r.family, r.series): r.rate for r in summary.pass_rates if r.track == track}
    families = sorted({family for family, _ in cells}, key=family_order)
    fig = Figure(figsize=(max(6.0, 0.9 * len(families) * max(1, len(labels)) ** 0.5), 4.0))
    ax = fig.subplots()
    width = 0.8 / max(1, len(labels))
    for i, label in enumerate(labels):
        xs = [j + (i - (len(labels) - 1) / 2) * width for j in range(len(families))]
        heights = [_percent(cells.get((family, label))) for family in families]
        ax.bar(xs, heights, width, label=_plain(label))
    ax.set_xticks(range(len(families)), [_plain(f) for f in families], rotation=30, ha="right")
    ax.set_ylim(0, 100)
    ax.set_ylabel("pass rate (%)")
    ax.set_title(_plain(f"Pass rate by family: {track}"))
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def _stage_figure(summary: Summary) -> Any:
    from matplotlib.figure import Figure

    names = _series_names(summary)
    rows = summary.stages
    fig = Figure(figsize=(max(6.0, 1.2 * len(rows) + 2), 4.0))
    ax = fig.subplots()
    bottoms = [0.0] * len(rows)
    for stage in STAGES:
        heights = [100 * (r.shares[stage] or 0.0) for r in rows]
        positions = list(range(len(rows)))
        ax.bar(positions, heights, 0.6, bottom=bottoms, label=stage, color=STAGE_COLOURS[stage])
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    ax.set_xticks(
        range(len(rows)), [names[(r.track, r.series)] for r in rows], rotation=30, ha="right"
    )
    ax.set_ylim(0, 100)
    ax.set_ylabel("share of graded cases (%)")
    ax.set_title("Failure stages")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def _sensitivity_figure(summary: Summary) -> Any:
    from matplotlib.figure import Figure

    names = _series_names(summary)
    fig = Figure(figsize=(10.0, 4.0))
    axes = fig.subplots(1, 2)
    for ax, parameter, grid in zip(
        axes, ("alpha_acc", "alpha_time"), (ALPHA_ACC_GRID, ALPHA_TIME_GRID), strict=True
    ):
        for series in summary.series:
            rates = {
                r.alpha: r.rate
                for r in summary.sensitivity
                if (r.track, r.series, r.parameter) == (series.track, series.label, parameter)
            }
            ax.plot(
                list(grid),
                [_percent(rates.get(a)) for a in grid],
                marker="o",
                label=names[(series.track, series.label)],
            )
        if parameter == "alpha_acc":
            ax.set_xscale("log")
        ax.set_xticks(list(grid), [f"{a:g}" for a in grid])
        ax.set_ylim(0, 100)
        ax.set_xlabel(parameter)
        ax.set_ylabel("pass rate (%)")
        ax.legend(fontsize="small")
    fig.suptitle("Threshold sensitivity")
    fig.tight_layout()
    return fig


def make_figures(summary: Summary) -> list[FigureImage]:
    """The report's figures as PNG (matplotlib's Agg canvas, no pyplot state).

    Raises :class:`~pdeagent.extras.MissingExtra` without matplotlib (the ``report``
    extra) when there is something to draw."""
    if not summary.series:
        return []
    matplotlib = require("report")

    with matplotlib.rc_context({"text.usetex": False}):
        figures = [
            FigureImage(
                f"pass_rates_{path_component(track)}",
                f"Pass rate by family: {track}",
                _png(_family_figure(summary, track)),
            )
            for track in summary.tracks
        ]
        figures.append(FigureImage("stages", "Failure stages", _png(_stage_figure(summary))))
        figures.append(
            FigureImage("sensitivity", "Threshold sensitivity", _png(_sensitivity_figure(summary)))
        )
        if summary.pass_rate_by_attempt:
            figure = attempt_figure(summary, _series_names(summary))
            caption = attempt_caption(summary)
            figures.append(FigureImage("pass_rate_by_attempt", caption, _png(figure)))
    return figures


# -------------------------------------------------------------------------- HTML


def _href(value: Any, base: Path | None) -> str | None:
    """The link of a :class:`Link` cell, relative to ``base`` (the report's folder) and
    URL-quoted; None for other cells."""
    if not isinstance(value, Link):
        return None
    path = Path(value.path)
    if base is not None:
        path = Path(os.path.relpath(path, base.resolve()))
    return urllib.parse.quote(path.as_posix())


def render_html(
    summary: Summary,
    tables: Sequence[Table],
    figures: Sequence[FigureImage],
    base: Path | None = None,
    pages: bool = False,
) -> str:
    """One self-contained page: inline CSS, figures as data URIs, no scripts; links to
    run files relative to ``base`` (the report's folder; absolute without it); ``pages``:
    link the leaderboard and its walkthrough pages (written beside it by the CLI)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,
    )
    html_tables = []
    for table in tables:
        numeric = _numeric_columns(table)
        html_tables.append(
            {
                "name": table.name,
                "title": table.title,
                "columns": list(zip(table.columns, numeric, strict=True)),
                "rows": [
                    [(cell_text(v), n, _href(v, base)) for v, n in zip(row, numeric, strict=True)]
                    for row in table.rows
                ],
            }
        )
    images = [
        {
            "name": f.name,
            "title": f.title,
            "uri": "data:image/png;base64," + base64.b64encode(f.png).decode("ascii"),
        }
        for f in figures
    ]
    return env.get_template(HTML_TEMPLATE).render(
        runs=summary.runs, tables=html_tables, figures=images, pages=pages
    )


# ------------------------------------------------------------------------- files


def _stderr_note(message: str) -> None:
    sys.stderr.write(f"note: {message}\n")


def write_outputs(
    summary: Summary,
    out_dir: Path,
    *,
    figures: bool = True,
    note: Callable[[str], None] = _stderr_note,
    extra: Mapping[str, Any] | None = None,
    pages: bool = False,
) -> list[Path]:
    """``report.json``, one CSV per table, ``figures/*.png`` and ``report.html``.

    ``figures``: draw the PNG figures when matplotlib (the ``report`` extra) is
    installed. Without it the tables and the HTML page are still written, without
    figures, and ``note`` is told once, in one line, which extra draws them; it is not
    a failure (:func:`make_figures` itself raises :class:`MissingExtra`). ``extra``:
    more top-level keys of ``report.json`` (``pdeagent report`` adds the leaderboard);
    ``pages``: the page links the leaderboard (written beside it by the caller)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "report.json"]
    atomic_write_json(written[0], {**summary.to_dict(), **(extra or {})})
    tables = build_tables(summary)
    for table in tables:
        path = out_dir / f"{table.name}.csv"
        atomic_write_text(path, table_csv(table))
        written.append(path)
    images: list[FigureImage] = []
    if figures:
        try:
            images = make_figures(summary)
        except MissingExtra as exc:
            note(f"figures not drawn: {exc}")
    for image in images:
        path = out_dir / "figures" / f"{image.name}.png"
        atomic_write_bytes(path, image.png)
        written.append(path)
    html = out_dir / "report.html"
    atomic_write_text(html, render_html(summary, tables, images, base=out_dir, pages=pages))
    written.append(html)
    return written
