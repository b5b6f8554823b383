"""Single-shot vs feedback, attempt by attempt (``pdeagent report``; the paper's
Figure 5 shape).

For every feedback-mode (run, track, model) series: the cumulative pass rate after
attempt 1, 2, ..., N, where attempt k is the record ``attempt-<k-1>`` and a case
counts as passed after attempt k when one of its attempts 1..k passed. The rules
are :mod:`pdeagent.runs.report`'s, unchanged:

- the denominator is the series' graded cases, the same for every k (a case none of
  whose attempts was graded is an infrastructure failure and is left out; a case
  whose later attempt failed on infrastructure counts with its graded attempts);
- so the rate after attempt 1 is the feedback table's pass@attempt-0 and the rate
  after attempt N is the series' pass rate;
- unreadable ``report.json`` files are not there (an attempt after one still counts
  at its own number).

N is the run's ``attempts`` setting (the highest attempt found, when higher): a case
that passed stops its attempts, so later columns repeat its pass.

Next to each row: the single-shot pass rate (PASS / graded cases) of the same
(track, model) in a ``single``-mode run among the loaded runs, the first one given
when several are, else nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attrs import define

from pdeagent.runs.report import CaseOutcome, Rate

if TYPE_CHECKING:
    from pdeagent.runs.report import Run, Summary

FEEDBACK_MODE = "feedback"
SINGLE_MODE = "single"
ATTEMPT_TITLE = "Pass rate by attempt: feedback (cumulative) vs single-shot"
ATTEMPT_TABLE_TITLE = (
    "Pass rate by attempt: feedback runs, cumulative (passed after attempt k = one of "
    "attempts 1..k passed; of graded cases) vs the single-shot run of the same model"
)

SeriesKey = tuple[int, str, str]
"""(run index, track, model), as :func:`pdeagent.runs.report.summarize` groups cases."""


@define(frozen=True)
class SingleShot:
    """The pass rate of a single-mode run's series of the same (track, model)."""

    series: str
    run_id: str
    rate: Rate


@define(frozen=True)
class AttemptRateRow:
    track: str
    series: str
    model: str
    run_id: str
    max_attempts: int
    graded: int
    infrastructure: int
    cumulative: list[Rate]
    """Item k-1: cases passed after attempt k / graded cases, k = 1..max_attempts."""
    single_shot: SingleShot | None = None


def passed_at(outcome: CaseOutcome) -> int | None:
    """The 1-based number of the case's first passing attempt, or None."""
    passing = [r.attempt for r in outcome.attempts if r.passed]
    return min(passing) + 1 if passing else None


def _pass_rate(outcomes: Sequence[CaseOutcome]) -> Rate:
    graded = [o for o in outcomes if not o.infrastructure]
    return Rate(sum(o.passed for o in graded), len(graded))


def pass_rate_by_attempt(
    runs: Sequence[Run],
    keys: Sequence[SeriesKey],
    labels: Sequence[str],
    grouped: Mapping[SeriesKey, Sequence[CaseOutcome]],
) -> list[AttemptRateRow]:
    """A row per feedback-mode series (in ``keys`` order, ``labels`` their labels)."""
    label = dict(zip(keys, labels, strict=True))
    rows: list[AttemptRateRow] = []
    for key in keys:
        run_index, track, model = key
        run = runs[run_index]
        if run.mode != FEEDBACK_MODE:
            continue
        group = grouped[key]
        graded = [o for o in group if not o.infrastructure]
        configured = run.config.get("attempts")
        highest = max(r.attempt for o in group for r in o.attempts) + 1
        if isinstance(configured, int) and not isinstance(configured, bool):
            highest = max(highest, configured)
        first_pass = [passed_at(o) for o in graded]
        cumulative = [
            Rate(sum(1 for k in first_pass if k is not None and k <= attempt), len(graded))
            for attempt in range(1, highest + 1)
        ]
        single = next(
            (
                other
                for other in keys
                if other[1:] == (track, model) and runs[other[0]].mode == SINGLE_MODE
            ),
            None,
        )
        rows.append(
            AttemptRateRow(
                track=track,
                series=label[key],
                model=model,
                run_id=run.run_id,
                max_attempts=highest,
                graded=len(graded),
                infrastructure=len(group) - len(graded),
                cumulative=cumulative,
                single_shot=None
                if single is None
                else SingleShot(label[single], runs[single[0]].run_id, _pass_rate(grouped[single])),
            )
        )
    return rows


# ---------------------------------------------------------------- presentation


def attempt_columns(summary: Summary) -> tuple[list[str], Callable[[AttemptRateRow], list]]:
    """The table's columns after track and model, and the cells of a row."""
    width = max((r.max_attempts for r in summary.pass_rate_by_attempt), default=0)

    def cells(row: AttemptRateRow) -> list[Any]:
        by_attempt = [row.cumulative[k] if k < len(row.cumulative) else None for k in range(width)]
        single = row.single_shot
        return [
            row.run_id,
            row.graded,
            row.infrastructure,
            *by_attempt,
            None if single is None else single.rate,
            None if single is None else single.run_id,
        ]

    after = [f"after attempt {k}" for k in range(1, width + 1)]
    return ["run", "graded", "infrastructure", *after, "single-shot", "single-shot run"], cells


def attempt_caption(summary: Summary) -> str:
    """One line: each feedback series' first and last cumulative rate, and its
    single-shot rate (the figure's caption in the HTML page)."""
    parts = []
    for row in summary.pass_rate_by_attempt:
        first, last = row.cumulative[0], row.cumulative[-1]
        text = (
            f"{row.series} ({row.track}): {_rate_text(first)} after attempt 1, "
            f"{_rate_text(last)} after attempt {len(row.cumulative)}"
        )
        if row.single_shot is not None:
            text += f"; single-shot {_rate_text(row.single_shot.rate)}"
        parts.append(text)
    return f"{ATTEMPT_TITLE}. " + ". ".join(parts)


def _rate_text(rate: Rate) -> str:
    value = rate.value
    percent = "-" if value is None else f"{100 * value:.1f}%"
    return f"{percent} ({rate.count}/{rate.total})"


def _percent(rate: Rate) -> float:
    value = rate.value
    return float("nan") if value is None else 100 * value


def attempt_figure(summary: Summary, names: Mapping[tuple[str, str], str]) -> Any:
    """Cumulative pass rate (%) against the attempt, a line per feedback series; the
    single-shot rate of the same model as a dashed level in the same colour.
    ``names``: (track, series label) -> a legend label safe for matplotlib."""
    from matplotlib.figure import Figure

    rows = summary.pass_rate_by_attempt
    width = max(r.max_attempts for r in rows)
    fig = Figure(figsize=(max(6.0, 1.2 * width + 4), 4.0))
    ax = fig.subplots()
    drawn: set[tuple[str, str]] = set()
    for row in rows:
        attempts = range(1, len(row.cumulative) + 1)
        heights = [_percent(rate) for rate in row.cumulative]
        (line,) = ax.plot(attempts, heights, marker="o", label=names[(row.track, row.series)])
        single = row.single_shot
        if single is not None and (row.track, single.series) not in drawn:
            drawn.add((row.track, single.series))
            ax.axhline(
                _percent(single.rate),
                color=line.get_color(),
                linestyle="--",
                label=f"{names[(row.track, single.series)]} (single-shot)",
            )
    ax.set_xticks(list(range(1, width + 1)))
    ax.set_xlim(0.7, width + 0.3)
    ax.set_ylim(0, 100)
    ax.set_xlabel("attempt")
    ax.set_ylabel("pass rate after attempt (%)")
    ax.set_title(ATTEMPT_TITLE)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig
