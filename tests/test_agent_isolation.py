"""The agent's tools are held like a graded submission (issue #22), on every sandbox
backend: through ``run`` an agent cannot read the dataset, the references, the run
folder, the harness source or the harness's environment, cannot connect to the
harness, cannot leave a process behind or write outside its work dir (its files
persist between commands); ``read_file`` and ``write_file`` (which run in the harness)
never follow a symlink the agent planted."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import time
from pathlib import Path

import pytest

from pdeagent.agent.session import AgentSession, SessionLimits, ToolError
from pdeagent.cases.agent_view import agent_view
from pdeagent.sandbox.launched import source_checkout
from pdeagent.sandbox.select import get_sandbox

pytestmark = pytest.mark.sandbox

SECRET_VAR = "PDEAGENT_AGENT_TEST_SECRET"


@pytest.fixture
def world(tmp_path_factory, monkeypatch, host, track, case, sandbox_backend):
    token = "agentsecret" + secrets.token_hex(8)
    monkeypatch.setenv(SECRET_VAR, token)
    base = Path("/var/tmp") / f"pdeagent-agent-test-{secrets.token_hex(6)}"
    dataset = base / "dataset"
    (dataset / "references").mkdir(parents=True)
    (dataset / "cases.jsonl").write_text(f'{{"id": "{token}"}}\n')
    (dataset / "references" / "ref.npy").write_text(token)
    run_dir = base / "run" / f"attempt-{token}"
    run_dir.mkdir(parents=True)
    (run_dir / "report.json").write_text(token)
    for d in (base, base / "run", dataset, dataset / "references"):
        os.chmod(d, 0o755)  # readable by anyone on the host: only the sandbox may hide them
    for f in (dataset / "cases.jsonl", dataset / "references" / "ref.npy", run_dir / "report.json"):
        os.chmod(f, 0o644)
    session = AgentSession(
        host=host, track=track, case_view=agent_view(case, track.name),
        sandbox=get_sandbox(sandbox_backend), workdir=base / "scratch" / "work",
        hide=[dataset, base / "run"], limits=SessionLimits(command_wall_sec=20.0),
    )  # fmt: skip
    session.start()
    yield session, token, dataset, base / "run"
    subprocess.run(["rm", "-rf", str(base)], check=False)


def test_run_cannot_read_evaluator_data_or_the_harness(world):
    session, token, dataset, run_dir = world
    _pkg, repo = source_checkout()
    repo_cases = repo / "cases" / "pdeagent-v1.jsonl" if repo else Path("/nonexistent")
    out = session.run(
        f"cat {dataset}/cases.jsonl {dataset}/references/ref.npy; ls -R {dataset} {run_dir}; "
        f"head -c 300 {repo_cases}; env; cat /proc/*/environ | tr '\\0' '\\n'; "
        "ls /proc | head -50; echo DONE"
    )
    assert "DONE" in out.text
    assert token not in out.text
    assert '"family"' not in out.text and '"evaluation_metadata"' not in out.text
    if repo_cases.is_file():  # the first case id of the real dataset
        first_id = json.loads(repo_cases.read_text().split("\n", 1)[0])["id"]
        assert first_id not in out.text
    assert SECRET_VAR not in out.text


def test_run_cannot_connect_to_the_harness(world):
    session, _token, _dataset, _run = world
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        out = session.run(
            'python -c "import socket; s = socket.socket(); s.settimeout(3); '
            f"s.connect(('127.0.0.1', {port})); print('CONNECTED')\"; echo rc=$?"
        )
        assert "CONNECTED" not in out.text and "rc=1" in out.text, out.text
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


def test_run_leaves_no_process_and_writes_nothing_outside(world):
    session, token, _dataset, _run = world
    marker = Path("/var/tmp") / f"agent-escape-{token}"
    out = session.run(
        f"(setsid sleep 31.{token[-4:].translate(str.maketrans('abcdef', '123456'))} &) ; "
        f"echo x > {marker}; echo x > /tmp/inside; echo rc=$?"
    )
    assert "rc=0" in out.text  # its private /tmp is writable
    time.sleep(0.5)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 31." not in ps
    assert not marker.exists()
    assert not Path("/tmp/inside").exists() or Path("/tmp/inside").read_text() != "x\n"


def test_files_persist_between_commands(world):
    session, *_ = world
    session.write_file("a/b.txt", "hello\n")
    out = session.run("cat a/b.txt; echo more >> a/b.txt; mkdir -p c && echo made > c/d")
    assert out.exit_code == 0 and "hello" in out.text
    assert session.read_file("a/b.txt") == "hello\nmore\n"
    assert session.read_file("c/d") == "made\n"
    assert "made" in session.run("cat c/d").text


def test_planted_symlinks_are_never_followed_by_the_file_tools(world):
    session, token, dataset, _run = world
    out = session.run(
        f"ln -s {dataset}/cases.jsonl leak.txt; ln -s {dataset} dir; ln -s /etc/passwd pw; "
        f"ln {dataset}/cases.jsonl hard.txt; mkfifo fifo; echo rc=$?"
    )
    assert "rc=0" in out.text
    for path in ("leak.txt", "pw"):
        with pytest.raises(ToolError, match="symlink"):
            session.read_file(path)
    with pytest.raises(ToolError, match="not a directory"):
        session.read_file("dir/cases.jsonl")
    with pytest.raises(ToolError, match="not a directory"):
        session.write_file("dir/new.txt", "x")
    with pytest.raises(ToolError, match=r"no file 'hard\.txt'"):  # the link could not be made
        session.read_file("hard.txt")
    with pytest.raises(ToolError, match="not a regular file"):
        session.read_file("fifo")  # returns at once: never blocks on a FIFO
    with pytest.raises(ToolError, match="not a regular file"):
        session.write_file("fifo", "x")
    session.write_file("leak.txt", "replaced\n")  # the link itself is replaced, not its target
    assert (dataset / "cases.jsonl").read_text() == f'{{"id": "{token}"}}\n'
    assert session.read_file("leak.txt") == "replaced\n"
