"""Agent-mode tables of ``pdeagent report`` (issue #22).

For every (run, track, model) series whose graded attempts carry an agent episode
(``AttemptReport.agent``): how the episodes ended (submitted, out of budget, no
submission), the median turns, command time and tokens per episode, the cost in all
and per passed case. And one row per case: its verdict and reason, the episode's
status, turns, tool calls, command time, tokens, cost and its transcript (linked from
the HTML report). The pass rates and stage breakdowns of agent series are the general
tables' (the series are labelled with their mode when another run holds the model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attrs import define

from pdeagent.runs.layout import attempt_dir
from pdeagent.runs.report import (
    CaseOutcome,
    Total,
    cost_per_pass,
    finite_number,
    median_of,
    total_of,
)

if TYPE_CHECKING:
    from pdeagent.runs.report import Run

SeriesKey = tuple[int, str, str]
ENDINGS = ("submitted", "budget", "no_submit")
"""Episode statuses with a column of their own (others are counted as ``other``)."""


@define(frozen=True)
class AgentRow:
    track: str
    series: str
    episodes: int
    """Graded cases with an agent episode."""
    endings: dict[str, int]
    """Episodes per status: ``submitted``, ``budget``, ``no_submit``, ``other``."""
    median_turns: float | None
    median_tool_time_sec: float | None
    median_tokens: float | None
    cost_usd: Total
    cost_per_pass_usd: float | None
    """Cost of the series' episodes over its passed cases (None: unknown cost or none
    passed)."""


@define(frozen=True)
class AgentCase:
    track: str
    series: str
    case_id: str
    verdict: str | None
    reason: str | None
    status: str | None
    turns: int | None
    tool_calls: int | None
    tool_time_sec: float | None
    tokens: int | None
    cost_usd: float | None
    transcript: str | None
    """Absolute path of the episode's record file (``transcript.json``, or the external
    agent's record), when the run folder holds it."""


def _tokens(outcome: CaseOutcome) -> int | None:
    r = outcome.final
    if r.tokens.input is None or r.tokens.output is None:
        return None
    return int(r.tokens.input) + int(r.tokens.output)


def agent_tables(
    runs: Sequence[Run],
    keys: Sequence[SeriesKey],
    labels: Sequence[str],
    grouped: Mapping[SeriesKey, Sequence[CaseOutcome]],
) -> tuple[list[AgentRow], list[AgentCase]]:
    """The agent rows and per-case rows of every series that has agent episodes."""
    rows: list[AgentRow] = []
    cases: list[AgentCase] = []
    for key, label in zip(keys, labels, strict=True):
        run_index, track, model = key
        graded = [o for o in grouped[key] if not o.infrastructure and o.final.agent]
        if not graded:
            continue
        endings = dict.fromkeys((*ENDINGS, "other"), 0)
        for o in graded:
            status = str((o.final.agent or {}).get("status"))
            endings[status if status in ENDINGS else "other"] += 1
        cost = total_of([o.final.cost_usd for o in graded])
        passed = sum(o.passed for o in graded)
        rows.append(
            AgentRow(
                track=track,
                series=label,
                episodes=len(graded),
                endings=endings,
                median_turns=median_of((o.final.agent or {}).get("turns") for o in graded),
                median_tool_time_sec=median_of(
                    (o.final.agent or {}).get("tool_time_sec") for o in graded
                ),
                median_tokens=median_of(_tokens(o) for o in graded),
                cost_usd=cost,
                cost_per_pass_usd=cost_per_pass(cost, passed),
            )
        )
        for o in graded:
            cases.append(_case_row(runs[run_index], track, label, model, o))
    return rows, cases


def _case_row(run: Run, track: str, label: str, model: str, o: CaseOutcome) -> AgentCase:
    r = o.final
    agent: dict[str, Any] = r.agent or {}
    record = agent.get("transcript")
    transcript = None
    if isinstance(record, str) and record and "/" not in record and record not in (".", ".."):
        path = attempt_dir(run.path, track, model, o.case_id, r.attempt) / record
        transcript = str(path) if path.is_file() else None
    turns, calls = finite_number(agent.get("turns")), finite_number(agent.get("tool_calls"))
    return AgentCase(
        track=track,
        series=label,
        case_id=o.case_id,
        verdict=r.verdict,
        reason=r.reason,
        status=str(agent["status"]) if agent.get("status") is not None else None,
        turns=int(turns) if turns is not None else None,
        tool_calls=int(calls) if calls is not None else None,
        tool_time_sec=finite_number(agent.get("tool_time_sec")),
        tokens=_tokens(o),
        cost_usd=finite_number(r.cost_usd),
        transcript=transcript,
    )
