"""Scratch folders never outlive the work (issue #33 item 9): an evaluation removes its
work folder however it ends, SIGTERM unwinds the CLI before it exits, and a tree a
program made read-only is still removed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from pdeagent.cli.main import app
from pdeagent.scratch import SCRATCH_ENV, remove_tree, scratch_dir, scratch_root

from .conftest import SAMPLE_TRACK_DIR

CASES = SAMPLE_TRACK_DIR / "cases.jsonl"
CASE_ID = "sample_poisson_unit_square_001"
BASELINE = SAMPLE_TRACK_DIR / "pdeagent_sample_fd" / "fd_poisson.py"
CHEAT = SAMPLE_TRACK_DIR / "solvers" / "boundary_cheat.py"
PDEAGENT = Path(sys.executable).parent / "pdeagent"


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "scratch"
    root.mkdir()
    monkeypatch.setenv(SCRATCH_ENV, str(root))
    monkeypatch.setenv("PDEAGENT_CASES", str(CASES))
    return root


def test_the_scratch_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(SCRATCH_ENV, raising=False)
    assert scratch_root() == Path("/var/tmp")
    monkeypatch.setenv(SCRATCH_ENV, str(tmp_path))
    assert scratch_root() == tmp_path


def test_a_scratch_dir_is_removed_when_its_block_raises(scratch):
    with pytest.raises(RuntimeError, match="boom"), scratch_dir("pdeagent-x-") as path:
        (path / "deep" / "er").mkdir(parents=True)
        (path / "deep" / "er" / "file").write_text("x")
        raise RuntimeError("boom")
    assert path.parent == scratch and not path.exists()


@pytest.mark.sandbox
@pytest.mark.parametrize(("solver", "code"), [(BASELINE, 0), (CHEAT, 1)])
def test_evaluate_removes_its_work_folder_whatever_the_verdict(cli, scratch, solver, code):
    result = cli.invoke(app, ["evaluate", "-t", "numpy_fd", "-c", CASE_ID, str(solver)])
    assert result.exit_code == code, result.output
    assert "removed (--workdir DIR keeps it)" in result.stdout
    assert list(scratch.iterdir()) == []


@pytest.mark.sandbox
def test_evaluate_keeps_the_work_folder_the_user_names(cli, scratch, tmp_path):
    kept = tmp_path / "kept"
    args = ["evaluate", "-t", "numpy_fd", "-c", CASE_ID, str(BASELINE), "--workdir", str(kept)]
    result = cli.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert any(kept.rglob("solution.npz")) and list(scratch.iterdir()) == []


def _alive(token: str) -> list[str]:
    alive = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if token.encode() in cmdline:
                alive.append(pid)
    return alive


@pytest.mark.sandbox
def test_sigterm_mid_evaluation_kills_the_program_and_removes_the_work_folder(scratch, tmp_path):
    token = f"pdeagent-sigterm-{uuid.uuid4().hex}"
    solver = tmp_path / "slow.py"
    solver.write_text(
        "import pathlib, subprocess, sys\n"
        "def solve(case_spec):\n"
        "    pathlib.Path('started').write_text('')\n"
        f"    subprocess.run([sys.executable, '-c', 'import time; time.sleep(300)', '{token}'])\n"
    )
    env = {**os.environ, SCRATCH_ENV: str(scratch), "PDEAGENT_CASES": str(CASES)}
    proc = subprocess.Popen(
        [str(PDEAGENT), "evaluate", "-t", "numpy_fd", "-c", CASE_ID, str(solver), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not any(scratch.rglob("started")):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the program never started"
            time.sleep(0.2)
        assert [p.name[:14] for p in scratch.iterdir()] == ["pdeagent-eval-"]
        while not _alive(token):  # the check below can see the program's child
            assert time.monotonic() < deadline, "the program's child never started"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert list(scratch.iterdir()) == []  # the work folder went with the evaluation
    assert out == ""  # no verdict was made up for the interrupted evaluation
    assert _alive(token) == []  # the sandboxed program and its child were killed


def _make_and_remove_a_hostile_tree(base: Path) -> bool:
    """As the current user: a tree with a read-only and an unsearchable folder inside,
    then :func:`remove_tree` on it."""
    tree = base / "tree"
    (tree / "ro" / "sub").mkdir(parents=True)
    (tree / "ro" / "sub" / "file").write_text("x")
    (tree / "ro" / "file").write_text("x")
    (tree / "hidden").mkdir()
    (tree / "hidden" / "file").write_text("x")
    os.chmod(tree / "ro" / "sub", 0o500)
    os.chmod(tree / "ro", 0o500)
    os.chmod(tree / "hidden", 0o000)
    os.chmod(tree, 0o500)
    return remove_tree(tree) and not tree.exists()


def test_a_tree_a_program_made_read_only_is_removed(tmp_path):
    """Run as an unprivileged user (root would not notice the modes)."""
    if os.geteuid() != 0:
        assert _make_and_remove_a_hostile_tree(tmp_path)
        return
    # under /var/tmp: the test's tmp_path sits in root's 0700 folder
    base = Path(tempfile.mkdtemp(prefix="pdeagent-test-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    os.chown(base, 65534, 65534)
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, build the tree, remove it
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            code = 0 if _make_and_remove_a_hostile_tree(base) else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    try:
        assert os.waitstatus_to_exitcode(status) == 0
        assert list(base.iterdir()) == []
    finally:
        remove_tree(base)


def test_remove_tree_says_so_when_a_tree_resists(tmp_path, capsys, monkeypatch):
    tree = tmp_path / "tree"
    tree.mkdir()
    monkeypatch.setattr("shutil.rmtree", lambda path, onexc=None: None)  # removes nothing
    assert remove_tree(tree) is False
    assert f"could not remove the scratch folder {tree}" in capsys.readouterr().err
