"""Agent mode (issue #22) on the sample track with a scripted tool-using model, through
the real runner and the real sandbox: an episode writes, runs, fixes and submits a
solver that PASSes; budgets and idle replies end it as F-Gen; everything is in the
transcript; ``--resume`` continues an interrupted episode (its files restored) and
never runs a finished one again."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pdeagent.agent.loop import RESUME_NOTE, TRANSCRIPT_FILE
from pdeagent.agent.protocol import AgentReply, AgentRequest, ToolCall
from pdeagent.calls import CallPolicy, ProviderCaller, RetryableError
from pdeagent.cases.io import load_cases
from pdeagent.providers import Provider, ProviderSettings, ProviderStatus
from pdeagent.runs.executors import LocalExecutor
from pdeagent.runs.layout import attempt_dir
from pdeagent.runs.records import read_attempt
from pdeagent.runs.runner import Run, RunConfig, RunError
from pdeagent.sandbox.select import resolve_backend

from .test_run import BASELINE, RAISES, make_cases, run_one_task

pytestmark = pytest.mark.sandbox

MODEL = "agent-m"
CID = "sample_poisson_copy_000"
RUN_IT = "python pdeagent_runner.py solver.py"

Item = AgentReply | BaseException | Callable[[AgentRequest], AgentReply]


class ScriptedAgent(Provider):
    """A tool-using provider answering each step with the next item of its script."""

    name = "scripted-agent"
    description = "test"
    cacheable = False
    free = True
    agent_steps = True

    def __init__(self, *script: Item) -> None:
        self.script = list(script)
        self.requests: list[AgentRequest] = []

    def status(self, settings: ProviderSettings) -> ProviderStatus:
        return ProviderStatus(ready=True, package="-", key="-", endpoint="mem://")

    def generate(self, request: Any) -> Any:
        raise AssertionError("agent mode never calls generate")

    def agent_step(self, request: AgentRequest) -> AgentReply:
        self.requests.append(request)
        if not self.script:
            raise AssertionError("the script is exhausted: the loop asked for one step more")
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item(request) if callable(item) else item


def calls(*specs: tuple[str, dict[str, Any]], text: str = "") -> AgentReply:
    n = calls.counter = getattr(calls, "counter", 0) + len(specs)
    first = n - len(specs)
    tool_calls = [ToolCall(f"c{first + i}", name, args) for i, (name, args) in enumerate(specs)]
    return AgentReply(text, tool_calls, "tool_use", input_tokens=100, output_tokens=20)


def last_results(request: AgentRequest) -> list[str]:
    """The contents of the tool results the model got in this request."""
    tool_msgs = [m for m in request.messages if m.role == "tool"]
    return [r.content for r in tool_msgs[-1].tool_results] if tool_msgs else []


def run_agent(
    host, tmp_path: Path, provider: Any, *, resume: bool = False,
    settings: ProviderSettings | None = None, model: str = MODEL, **config: Any,
) -> Path:  # fmt: skip
    """One agent-mode task of the sample case through ``provider``; the run folder."""
    cases_file = tmp_path / "cases.jsonl"
    if not cases_file.exists():
        make_cases(tmp_path, n=1)
    out = tmp_path / "run"
    cases = load_cases(cases_file, known_libraries={"numpy_fd", "dolfinx", "firedrake", "dealii"})
    cfg = RunConfig(
        track="numpy_fd", provider=provider.name, models=[model], cases_file=str(cases_file),
        case_ids=[CID], mode="agent", response_cache=False, sandbox=resolve_backend(None),
        **{"agent_command_sec": 30.0, **config},
    )  # fmt: skip
    cfg.check()
    caller = ProviderCaller(
        provider, settings or ProviderSettings(), policy=CallPolicy(max_retries=1),
        sleep=lambda s: None,
    )  # fmt: skip
    return run_one_task(host, cfg, cases, out, caller, model, resume=resume)


def folder(out: Path, model: str = MODEL) -> Path:
    return attempt_dir(out, "numpy_fd", model, CID, 0)


def transcript(out: Path) -> dict[str, Any]:
    return json.loads((folder(out) / TRANSCRIPT_FILE).read_text())


def report(out: Path, model: str = MODEL):
    r = read_attempt(folder(out, model) / "report.json")
    assert r is not None
    return r


@pytest.fixture(autouse=True)
def _no_local_calibration(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))


def test_an_episode_writes_runs_fixes_and_submits_a_passing_solver(host, tmp_path):
    seen: dict[str, Any] = {}

    def after_first_run(request: AgentRequest) -> AgentReply:
        seen["first run"] = last_results(request)
        return calls(("write_file", {"path": "solver.py", "content": BASELINE}),
                     ("run", {"command": RUN_IT + " && ls"}))  # fmt: skip

    def after_fix(request: AgentRequest) -> AgentReply:
        seen["second run"] = last_results(request)
        return calls(("submit", {"path": "solver.py"}))

    agent = ScriptedAgent(
        calls(
            ("read_file", {"path": "case_spec.json"}),
            ("write_file", {"path": "solver.py", "content": RAISES}),
            ("run", {"command": RUN_IT}),
        ),
        after_first_run,
        after_fix,
    )
    out = run_agent(host, tmp_path, agent)
    r = report(out)
    assert (r.verdict, r.reason, r.mode) == ("PASS", None, "agent")
    assert r.agent is not None
    assert r.agent["status"] == "submitted" and r.agent["turns"] == 3
    assert r.agent["tool_calls"] == 6 and r.agent["submitted_path"] == "solver.py"
    assert r.agent["tool_time_sec"] > 0
    assert (r.tokens.input, r.tokens.output) == (300, 60)
    # the model saw its own failure, then its fix working
    read, wrote, ran = seen["first run"]
    assert '"eval_grid"' in read and wrote.startswith("wrote ")
    assert ran.startswith("exit code ") and "the model forgot the mesh" in ran
    wrote, ran = seen["second run"]
    assert ran.startswith("exit code 0") and "solution.npz" in ran
    # the first request: the task prompt with the agent section, and the four tools
    first = agent.requests[0]
    assert [t.name for t in first.tools] == ["write_file", "read_file", "run", "submit"]
    task = first.messages[0].text
    assert "## 7. Working as an agent" in task and "pdeagent_runner.py solver.py" in task
    assert (folder(out) / "prompt.md").read_text() == task
    assert (folder(out) / "solver.py").read_text() == BASELINE
    t = transcript(out)
    assert t["status"] == "submitted" and t["result"]["submitted_path"] == "solver.py"
    roles = ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    assert [m["role"] for m in t["messages"]] == roles
    names = ["read_file", "write_file", "run", "write_file", "run", "submit"]
    assert [r["name"] for r in t["tool_runs"]] == names
    assert t["tool_runs"][2]["exit_code"] != 0 and t["tool_runs"][4]["exit_code"] == 0


def test_the_turn_budget_ends_the_episode_as_f_gen_agent_budget(host, tmp_path):
    agent = ScriptedAgent(*[calls(("run", {"command": "true"})) for _ in range(3)])
    out = run_agent(host, tmp_path, agent, agent_turns=3)
    r = report(out)
    assert (r.verdict, r.reason, r.infrastructure) == ("F-Gen", "agent_budget", False)
    assert "turn budget (3 model steps)" in r.message
    assert r.agent["status"] == "budget" and r.agent["turns"] == 3
    assert len(agent.requests) == 3
    # the model was warned before the end
    assert "Budget left: 1 model turn(s)" in agent.requests[2].messages[-1].text


def test_the_tool_time_budget_stops_commands(host, tmp_path):
    agent = ScriptedAgent(
        calls(("run", {"command": "sleep 3"})),
        lambda req: calls(("run", {"command": "echo never"})),
    )
    out = run_agent(host, tmp_path, agent, agent_tool_time_sec=2.0)
    r = report(out)
    assert (r.verdict, r.reason) == ("F-Gen", "agent_budget")
    t = transcript(out)
    first = t["tool_runs"][0]
    assert first["timed_out"] and 1.5 < first["wall_sec"] < 10
    assert "tool-time budget" in r.message
    assert len(agent.requests) == 1  # no step after the time ran out


def test_replies_without_a_tool_call_end_as_agent_no_submit(host, tmp_path):
    idle = AgentReply("I think I am done.", (), "stop", input_tokens=5, output_tokens=5)
    agent = ScriptedAgent(idle, idle, idle)
    out = run_agent(host, tmp_path, agent)
    r = report(out)
    assert (r.verdict, r.reason) == ("F-Gen", "agent_no_submit")
    assert "No tool was called" in agent.requests[1].messages[-1].text


def test_tool_errors_go_back_to_the_model(host, tmp_path):
    seen: list[list[str]] = []

    def look(request: AgentRequest) -> AgentReply:
        seen.append(last_results(request))
        return calls(("submit", {"path": "missing.py"}))

    def final(request: AgentRequest) -> AgentReply:
        seen.append(last_results(request))
        return AgentReply("giving up", (), "stop")

    agent = ScriptedAgent(
        calls(
            ("write_file", {"path": "../escape.py", "content": "x"}),
            ("write_file", {"path": "/etc/x", "content": "x"}),
            ("read_file", {"path": "nothere.txt"}),
            ("frobnicate", {}),
            ("run", {"_unparsed": "{not json"}),
            ("write_file", {"path": "a.py"}),
        ),
        look,
        final,
        AgentReply("", (), "stop"),
        AgentReply("", (), "stop"),
    )
    out = run_agent(host, tmp_path, agent)
    assert report(out).reason == "agent_no_submit"
    errors = seen[0]
    assert "'..' is not allowed" in errors[0]
    assert "relative to your work directory" in errors[1]
    assert "no file 'nothere.txt'" in errors[2]
    assert "unknown tool 'frobnicate'" in errors[3]
    assert "not a JSON object" in errors[4]
    assert "needs the argument 'content'" in errors[5]
    assert "no file 'missing.py'" in seen[1][0]
    assert not (tmp_path / "escape.py").exists()


def test_resume_continues_an_interrupted_episode_with_its_files(host, tmp_path):
    transient = RetryableError("HTTP 529 overloaded")
    first = ScriptedAgent(
        calls(
            ("write_file", {"path": "solver.py", "content": BASELINE}),
            ("run", {"command": "echo made > built.txt"}),
        ),
        transient,
        transient,
    )
    out = run_agent(host, tmp_path, first)
    r = report(out)
    assert (r.verdict, r.reason, r.infrastructure) == ("F-Gen", "provider_transient", True)
    assert transcript(out)["status"] == "provider_failure"

    seen: dict[str, Any] = {}

    def check(request: AgentRequest) -> AgentReply:
        seen["note"] = request.messages[-1].text
        seen["history"] = [m.role for m in request.messages]
        return calls(("run", {"command": "cat solver.py | head -c 20; ls"}))

    def submit(request: AgentRequest) -> AgentReply:
        seen["ls"] = last_results(request)[0]
        return calls(("submit", {"path": "solver.py"}))

    second = ScriptedAgent(check, submit)
    (folder(out) / "report.json").unlink()  # as the runner does for a transient failure
    out = run_agent(host, tmp_path, second, resume=True)
    r = report(out)
    assert r.verdict == "PASS", r.message
    assert RESUME_NOTE in seen["note"]
    assert seen["history"] == ["user", "assistant", "tool", "user"]
    assert "built.txt" not in seen["ls"] and "solver.py" in seen["ls"]
    assert r.agent["turns"] == 3  # the turns of both sessions


def test_a_finished_episode_is_regraded_without_calling_the_model(host, tmp_path):
    agent = ScriptedAgent(
        calls(("write_file", {"path": "s.py", "content": BASELINE}), ("submit", {"path": "s.py"}))
    )
    out = run_agent(host, tmp_path, agent)
    assert report(out).verdict == "PASS"
    (folder(out) / "report.json").unlink()  # lost before the grade was written
    silent = ScriptedAgent()  # any step would fail the test
    out = run_agent(host, tmp_path, silent, resume=True)
    r = report(out)
    assert r.verdict == "PASS" and silent.requests == []
    assert r.generation_sec == 0.0


def test_a_provider_without_tool_use_is_refused(host, tmp_path):
    class Plain(Provider):
        name = "plain"
        description = "test"

        def status(self, settings):
            return ProviderStatus(ready=True, package="-", key="-")

        def generate(self, request):
            raise AssertionError

    make_cases(tmp_path, n=1)
    cases = load_cases(tmp_path / "cases.jsonl", known_libraries={"numpy_fd"})
    cfg = RunConfig(
        track="numpy_fd", provider="plain", models=["m"],
        cases_file=str(tmp_path / "cases.jsonl"), case_ids=[CID], mode="agent",
    )  # fmt: skip
    caller = ProviderCaller(Plain(), ProviderSettings())
    with pytest.raises(RunError, match="does not support tool use"):
        Run(host, cfg, cases, tmp_path / "run", caller=caller, executor=LocalExecutor(1))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("agent_turns", 0, "budgets must be positive"),
     ("agent_tool_time_sec", -1.0, "budgets must be positive"),
     ("agent_cost_usd", 0.0, "cost budget must be positive"),
     ("agent_command_sec", 0.0, "--agent-command-sec must be > 0")],
)  # fmt: skip
def test_bad_budgets_are_refused(field, value, message):
    cfg = RunConfig(
        track="t", provider="p", models=["m"], cases_file="c", case_ids=["x"], mode="agent",
        **{field: value},
    )  # fmt: skip
    with pytest.raises(RunError, match=message):
        cfg.check()


def test_a_sandbox_failure_is_the_harness_error_and_resume_runs_the_call_again(
    host, tmp_path, monkeypatch
):
    from pdeagent.sandbox import select
    from pdeagent.sandbox.base import SandboxError

    real = select.make_sandbox

    class Broken:
        name = "broken"

        def run(self, request):
            raise SandboxError("bubblewrap: cannot create namespace")

    monkeypatch.setattr(select, "make_sandbox", lambda name: Broken())
    first = ScriptedAgent(calls(("run", {"command": "echo hello"})))
    out = run_agent(host, tmp_path, first)
    r = report(out)
    assert (r.verdict, r.reason, r.infrastructure) == ("ERROR", "harness_error", True)
    assert "cannot create namespace" in r.message
    assert transcript(out)["status"] == "sandbox_failure"

    monkeypatch.setattr(select, "make_sandbox", real)
    seen: list[str] = []

    def after(request: AgentRequest) -> AgentReply:
        seen.extend(last_results(request))
        roles = [m.role for m in request.messages]
        assert roles == ["user", "assistant", "tool", "user"], roles  # answered, then noted
        assert RESUME_NOTE in request.messages[-1].text
        return calls(("write_file", {"path": "s.py", "content": BASELINE}),
                     ("submit", {"path": "s.py"}))  # fmt: skip

    (folder(out) / "report.json").unlink()  # as --resume --rerun-errors does
    out = run_agent(host, tmp_path, ScriptedAgent(after), resume=True)
    assert report(out).verdict == "PASS"
    assert len(seen) == 1 and seen[0].startswith("exit code 0") and "hello" in seen[0]


def test_an_unreadable_transcript_is_this_attempts_harness_error(host, tmp_path):
    agent = ScriptedAgent(calls(("run", {"command": "true"})), RetryableError("overloaded"),
                          RetryableError("overloaded"))  # fmt: skip
    out = run_agent(host, tmp_path, agent)
    (folder(out) / "report.json").unlink()
    (folder(out) / TRANSCRIPT_FILE).write_text("{not json")  # damaged, never started over
    out = run_agent(host, tmp_path, ScriptedAgent(), resume=True)
    r = report(out)
    assert (r.verdict, r.reason, r.infrastructure) == ("ERROR", "harness_error", True)
    assert "unreadable agent transcript" in r.message
    assert (folder(out) / TRANSCRIPT_FILE).read_text() == "{not json"
