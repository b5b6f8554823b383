"""``pdeagent report`` on agent runs (issue #22): the agent table (how episodes ended,
medians per episode, cost per pass) and the per-case table with each transcript linked
from the HTML page, from two real agent runs of the sample track."""

from __future__ import annotations

import csv
import json
import os
import urllib.parse

import pytest

from pdeagent.agent.protocol import AgentReply, ToolCall
from pdeagent.runs.report import load_runs, summarize
from pdeagent.runs.report_render import write_outputs

from .test_agent_loop import CID, ScriptedAgent, folder, run_agent
from .test_run import BASELINE

pytestmark = pytest.mark.sandbox


def tool(cid: str, name: str, **args: str) -> AgentReply:
    return AgentReply("", (ToolCall(cid, name, dict(args)),), "tool_use", 1000, 100)


def test_agent_tables_and_transcript_links(host, tmp_path):
    passing = ScriptedAgent(
        tool("a", "write_file", path="solver.py", content=BASELINE),
        tool("b", "run", command="python pdeagent_runner.py solver.py"),
        tool("c", "submit", path="solver.py"),
    )
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    run_a = run_agent(host, tmp_path / "a", passing)
    spending = ScriptedAgent(*[tool(f"r{i}", "run", command="true") for i in range(2)])
    run_b = run_agent(host, tmp_path / "b", spending, agent_turns=2)

    summary = summarize(load_runs([run_a, run_b]))
    rows = {r.series: r for r in summary.agent}
    assert len(rows) == 2
    a, b = (rows[s.label] for s in summary.series)
    assert (a.episodes, a.endings) == (1, {"submitted": 1, "budget": 0, "no_submit": 0, "other": 0})
    assert (a.median_turns, a.median_tokens) == (3, 3300)
    assert a.median_tool_time_sec is not None and a.median_tool_time_sec > 0
    assert a.cost_usd.value == 0.0 and a.cost_per_pass_usd == 0.0  # a free provider
    assert b.endings["budget"] == 1 and b.median_turns == 2 and b.cost_per_pass_usd is None
    by_series = {c.series: c for c in summary.agent_cases}
    case_a = by_series[a.series]
    assert (case_a.case_id, case_a.verdict, case_a.status) == (CID, "PASS", "submitted")
    assert (case_a.turns, case_a.tool_calls, case_a.tokens) == (3, 3, 3300)
    assert case_a.transcript == str(folder(run_a) / "transcript.json")
    case_b = by_series[b.series]
    assert (case_b.verdict, case_b.reason, case_b.status) == ("F-Gen", "agent_budget", "budget")

    out = tmp_path / "report"
    write_outputs(summary, out, figures=False)
    with (out / "agent_cases.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert {row["transcript"] for row in table} == {
        str(folder(run_a) / "transcript.json"), str(folder(run_b) / "transcript.json")}  # fmt: skip
    html = (out / "report.html").read_text()
    rel = os.path.relpath(folder(run_a) / "transcript.json", out)
    assert f'<a href="{urllib.parse.quote(rel)}">transcript</a>' in html
    assert (out / urllib.parse.unquote(urllib.parse.quote(rel))).resolve().is_file()
    data = json.loads((out / "report.json").read_text())
    assert [r["episodes"] for r in data["agent"]] == [1, 1]
