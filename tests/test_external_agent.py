"""External agents (issue #22, ``--provider command``) on the sample track, through the
real runner, the real command provider and the real sandbox: a shell command stands in
for an agent CLI. It finds the task in ``prompt.md`` beside ``case_spec.json``; the
file it leaves is graded; a hang is killed at the wall budget with every process it
started; an exit without a file, or a symlink in its place, is F-Gen; everything is in
``external_agent.json``; a finished episode is never run again; the network is off
unless the provider allows it."""

from __future__ import annotations

import hashlib
import json
import secrets
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import pdeagent_provider_command
from pdeagent.agent.external import EXTERNAL_RECORD_FILE, ExternalAgent, ExternalEpisode
from pdeagent.agent.loop import Budgets
from pdeagent.agent.session import AgentSession
from pdeagent.calls import ProviderCaller
from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import load_cases
from pdeagent.providers import GenerationRequest, ProviderError, ProviderSettings
from pdeagent.runs.executors import LocalExecutor
from pdeagent.runs.runner import Run, RunConfig, RunError
from pdeagent.sandbox.select import get_sandbox, resolve_backend
from pdeagent_provider_command import CommandProvider

from .test_agent_loop import (
    _no_local_calibration,  # noqa: F401 (autouse)
    run_agent,
)
from .test_agent_loop import folder as agent_folder
from .test_agent_loop import report as agent_report
from .test_run import BASELINE, make_cases

pytestmark = pytest.mark.sandbox

MODEL = "command"
CID = "sample_poisson_copy_000"
END = "PDEAGENT_TEST_SOLVER_END"
assert END not in BASELINE
WRITE_BASELINE = f"cat > solver.py <<'{END}'\n{BASELINE}{END}\n"


def run_external(
    host, tmp_path: Path, cmd: str, *, resume: bool = False, **options: Any
) -> tuple[Path, float]:
    """Run the one sample case with the command provider running ``cmd``; returns the
    run folder and the seconds the attempt took."""
    provider_options = {"cmd": cmd, **options.pop("provider_options", {})}
    t0 = time.monotonic()
    out = run_agent(
        host, tmp_path, CommandProvider(), resume=resume,
        settings=ProviderSettings(options=provider_options), model=MODEL,
        provider_options=provider_options, **{"agent_tool_time_sec": 120.0, **options},
    )  # fmt: skip
    return out, time.monotonic() - t0


def folder(out: Path) -> Path:
    return agent_folder(out, MODEL)


def record(out: Path) -> dict[str, Any]:
    return json.loads((folder(out) / EXTERNAL_RECORD_FILE).read_text())


def report(out: Path):
    return agent_report(out, MODEL)


def test_an_agent_that_leaves_a_passing_solver_passes(host, tmp_path):
    cmd = (
        "set -e\ntest -s prompt.md && test -s case_spec.json\n"
        "echo listing: $(ls -A)\nsha256sum prompt.md\n"
        f"{WRITE_BASELINE}"
        "python pdeagent_runner.py solver.py && test -s solution.npz\n"
        "echo agent-done; echo agent-err >&2\n"
    )
    out, _ = run_external(host, tmp_path, cmd)
    r = report(out)
    assert (r.verdict, r.reason, r.mode, r.provider) == ("PASS", None, "agent", "command")
    assert r.agent is not None
    assert r.agent["status"] == "submitted" and r.agent["submitted_path"] == "solver.py"
    assert (r.agent["turns"], r.agent["tool_calls"]) == (0, 0)
    assert r.agent["transcript"] == EXTERNAL_RECORD_FILE and r.agent["tool_time_sec"] > 0
    assert (r.tokens.input, r.tokens.output, r.cost_usd) == (None, None, None)
    prompt = (folder(out) / "prompt.md").read_text()
    assert "## 7. Working as an external agent" in prompt and "`./solver.py`" in prompt
    assert "120 s of wall time" in prompt
    assert (folder(out) / "solver.py").read_text() == BASELINE
    rec = record(out)
    assert rec["status"] == "submitted" and rec["command"] == cmd and rec["network"] is False
    assert rec["starts"] == 1 and rec["result"]["status"] == "submitted"
    assert rec["result"]["submitted_path"] == "solver.py" and "source" not in rec["result"]
    ex = rec["execution"]
    assert (ex["exit_code"], ex["signal"], ex["timed_out"]) == (0, None, False)
    assert 0 < ex["wall_sec"] < 120 and ex["wall_limit_sec"] == 120.0
    assert ex["backend"] == resolve_backend(None)
    assert ex["stdout"].rstrip().endswith("agent-done") and ex["stderr"].strip() == "agent-err"
    # the agent read the very prompt the attempt folder keeps, beside the case and helpers
    digest = hashlib.sha256(prompt.encode()).hexdigest()
    assert f"{digest}  prompt.md" in ex["stdout"]
    listing = ex["stdout"].split("listing:", 1)[1].split("\n", 1)[0].split()
    assert {"prompt.md", "case_spec.json", "pdeagent_runner.py"} <= set(listing)
    assert "solver.py" not in listing


def test_a_hanging_agent_is_killed_at_the_wall_budget_with_its_processes(host, tmp_path):
    token = str(600 + secrets.randbelow(300))
    cmd = f"(setsid sleep {token}.5 &) ; echo started; sleep {token}"
    out, took = run_external(host, tmp_path, cmd, agent_tool_time_sec=2.0)
    r = report(out)
    assert (r.verdict, r.reason, r.infrastructure) == ("F-Gen", "agent_budget", False)
    assert "killed after 2 s" in r.message and "solver.py" in r.message
    assert r.agent["status"] == "budget" and r.agent["submitted_path"] is None
    ex = record(out)["execution"]
    assert ex["timed_out"] is True and ex["exit_code"] is None
    assert 1.5 < ex["wall_sec"] < 10 and ex["stdout"].strip() == "started"
    assert 1.5 < r.agent["tool_time_sec"] < 10
    assert took < 60  # killed at the budget, not after the sleep
    time.sleep(0.5)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert f"sleep {token}" not in ps
    assert not (folder(out) / "solver.py").exists()


def test_an_agent_that_exits_without_a_file_is_agent_no_submit(host, tmp_path):
    out, _ = run_external(host, tmp_path, "echo 'no idea' >&2; exit 3")
    r = report(out)
    assert (r.verdict, r.reason, r.infrastructure) == ("F-Gen", "agent_no_submit", False)
    assert r.message == "the agent exited with code 3 without leaving solver.py"
    rec = record(out)
    assert rec["status"] == "no_submit" and rec["result"]["reason"] == "agent_no_submit"
    assert rec["execution"]["exit_code"] == 3 and rec["execution"]["stderr"] == "no idea\n"


def test_a_symlink_left_as_the_program_is_not_followed(host, tmp_path):
    target = Path("/var/tmp") / f"pdeagent-external-target-{secrets.token_hex(6)}.py"
    target.write_text(BASELINE)  # a passing solver on the host: following the link would PASS
    target.chmod(0o644)
    try:
        out, _ = run_external(host, tmp_path, f"ln -s {target} solver.py && ls -l solver.py")
    finally:
        target.unlink()
    r = report(out)
    assert (r.verdict, r.reason) == ("F-Gen", "agent_no_submit")
    assert "exited with code 0" in r.message and "symlink: not followed" in r.message
    assert record(out)["execution"]["stdout"].startswith("l")  # it was a link in the work dir
    assert not (folder(out) / "solver.py").exists()


def test_a_finished_episode_is_regraded_without_running_the_agent_again(host, tmp_path):
    out, _ = run_external(host, tmp_path, WRITE_BASELINE)
    assert report(out).verdict == "PASS"
    saved = (folder(out) / EXTERNAL_RECORD_FILE).read_bytes()
    (folder(out) / "report.json").unlink()  # lost before the grade was written
    out, _ = run_external(host, tmp_path, "exit 99", resume=True)  # would be no_submit if run
    r = report(out)
    assert r.verdict == "PASS" and r.agent["status"] == "submitted"
    assert r.generation_sec == 0.0
    assert (folder(out) / EXTERNAL_RECORD_FILE).read_bytes() == saved


def test_an_unfinished_episode_runs_again(host, tmp_path):
    make_cases(tmp_path, n=1)
    directory = folder(tmp_path / "run")
    directory.mkdir(parents=True)
    (directory / EXTERNAL_RECORD_FILE).write_text(
        json.dumps({"schema_version": 1, "status": "running", "starts": 1})
    )  # the harness stopped while the agent ran
    out, _ = run_external(host, tmp_path, WRITE_BASELINE)
    assert report(out).verdict == "PASS"
    assert record(out)["starts"] == 2 and record(out)["status"] == "submitted"


def test_a_sandbox_that_cannot_run_the_agent_is_an_infrastructure_failure(
    host, track, case, tmp_path
):
    def episode(hide: list[Path], work: str) -> ExternalEpisode:
        session = AgentSession(
            host=host, track=track, case_view=agent_view(case, track.name),
            sandbox=get_sandbox(resolve_backend(None)), workdir=tmp_path / work, hide=hide,
        )  # fmt: skip
        session.start()
        return ExternalEpisode(
            session=session, directory=tmp_path / "attempt", agent=ExternalAgent(WRITE_BASELINE),
            prompt="the task", source_filename="solver.py", budgets=Budgets(tool_time_sec=60.0),
        )  # fmt: skip

    (tmp_path / "attempt").mkdir()
    broken = episode([Path("/")], "w1").run()  # the sandbox refuses to hide /
    assert (broken.status, broken.reason, broken.infrastructure) == (
        "sandbox_failure", "harness_error", True,
    )  # fmt: skip
    assert "refusing to hide /" in broken.message and broken.source is None
    saved = json.loads((tmp_path / "attempt" / EXTERNAL_RECORD_FILE).read_text())
    assert saved["status"] == "sandbox_failure" and "execution" not in saved
    again = episode([], "w2").run()  # not final: run again (--rerun-errors)
    assert again.status == "submitted" and again.source == BASELINE
    saved = json.loads((tmp_path / "attempt" / EXTERNAL_RECORD_FILE).read_text())
    assert saved["starts"] == 2 and saved["execution"]["exit_code"] == 0
    assert (tmp_path / "attempt" / "solver.py").read_text() == BASELINE


@pytest.mark.parametrize("network", ["none", "allow"])
def test_the_network_is_off_unless_the_provider_allows_it(host, tmp_path, network):
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(2.0)
    port = listener.getsockname()[1]
    cmd = (
        "python -c \"import socket; s = socket.create_connection(('127.0.0.1', "
        f"{port}), timeout=5); s.sendall(b'agent'); print('CONNECTED')\"; exit 4"
    )
    try:
        out, _ = run_external(host, tmp_path, cmd, provider_options={"network": network})
        rec = record(out)
        assert rec["network"] is (network == "allow")
        if network == "allow":
            assert rec["execution"]["stdout"].strip() == "CONNECTED"
            conn, _ = listener.accept()
            with conn:
                assert conn.recv(10) == b"agent"
        else:
            assert "CONNECTED" not in rec["execution"]["stdout"]
            err = rec["execution"]["stderr"]  # a loopback of its own, or none at all
            assert "Connection refused" in err or "Network is unreachable" in err, err
            with pytest.raises(TimeoutError):
                listener.accept()
    finally:
        listener.close()
    assert report(out).reason == "agent_no_submit"


def test_the_command_provider_refuses_other_modes(host, tmp_path):
    make_cases(tmp_path, n=1)
    cases = load_cases(tmp_path / "cases.jsonl", known_libraries={"numpy_fd"})
    cfg = RunConfig(
        track="numpy_fd", provider="command", models=[MODEL],
        cases_file=str(tmp_path / "cases.jsonl"), case_ids=[CID], mode="single",
        provider_options={"cmd": "true"},
    )  # fmt: skip
    caller = ProviderCaller(CommandProvider(), ProviderSettings(options={"cmd": "true"}))
    executor = LocalExecutor(1)
    try:
        with pytest.raises(RunError, match="runs an external agent: use --mode agent"):
            Run(host, cfg, cases, tmp_path / "run", caller=caller, executor=executor)
    finally:
        executor.shutdown()


def test_an_agent_with_the_network_runs_only_on_the_local_executor(host, tmp_path):
    """With the host's network an agent could reach a dask scheduler, which runs code as
    the harness: refused before anything starts."""
    make_cases(tmp_path, n=1)
    cases = load_cases(tmp_path / "cases.jsonl", known_libraries={"numpy_fd"})
    options = {"cmd": "true", "network": "allow"}
    cfg = RunConfig(
        track="numpy_fd", provider="command", models=[MODEL],
        cases_file=str(tmp_path / "cases.jsonl"), case_ids=[CID], mode="agent",
        provider_options=options,
    )  # fmt: skip
    caller = ProviderCaller(CommandProvider(), ProviderSettings(options=options))

    class RemoteExecutor:
        name = "dask"

    with pytest.raises(RunError, match="only with the local executor"):
        Run(host, cfg, cases, tmp_path / "run", caller=caller, executor=RemoteExecutor())


def test_the_command_provider_options():
    provider = CommandProvider()
    missing = provider.status(ProviderSettings())
    assert not missing.ready and "--provider-option cmd=" in missing.problem
    ready = provider.status(ProviderSettings(options={"cmd": "./agent.sh"}))
    assert ready.ready and ready.problem is None
    bad = provider.status(ProviderSettings(options={"cmd": "x", "network": "yes"}))
    assert not bad.ready and "'allow' or 'none'" in bad.problem
    typo = provider.status(ProviderSettings(options={"cmd": "x", "netwrk": "allow"}))
    assert not typo.ready and "netwrk" in typo.problem
    assert provider.external_agent(ProviderSettings(options={"cmd": "a b"})) == ExternalAgent(
        "a b", network=False
    )
    allowed = provider.external_agent(ProviderSettings(options={"cmd": "a", "network": "allow"}))
    assert allowed.network is True
    with pytest.raises(ProviderError, match="cannot run"):
        provider.external_agent(ProviderSettings(options={"cmd": "  "}))
    with pytest.raises(ProviderError, match="use --mode agent"):
        provider.generate(GenerationRequest(prompt="p", model="m"))
    assert (provider.name, provider.free, provider.cacheable) == ("command", True, False)
    with pytest.raises(ValueError, match="non-empty"):
        ExternalAgent("")


def test_the_command_provider_registers_through_the_hook():
    registered: list[Any] = []
    pdeagent_provider_command.pdeagent_register_providers(registered.append)
    assert [type(p) for p in registered] == [CommandProvider]
