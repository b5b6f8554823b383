"""bwrap backend: a path exposed under the world's private ``/tmp`` (a runtime installed
under ``/tmp/...``) must be reachable by the sandbox user. bwrap creates the missing
parents of a bind inside its fresh tmpfs with mode 0700, which the unprivileged user
cannot traverse (every program then failed: exit 127 or a permission error)."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from pdeagent.sandbox import SandboxRequest, python_runtime_expose
from pdeagent.sandbox.base import Limits
from pdeagent.sandbox.bwrap import BwrapSandbox

pytestmark = pytest.mark.sandbox


@pytest.fixture
def runtime_under_tmp():
    """A fake runtime three levels below /tmp, readable by everyone on the host."""
    root = Path(tempfile.mkdtemp(prefix="pdeagent-rt-", dir="/tmp"))
    runtime = root / "envs" / "mytrack"
    (runtime / "bin").mkdir(parents=True)
    (runtime / "bin" / "data.txt").write_text("runtime data\n")
    tool = runtime / "bin" / "tool.sh"
    tool.write_text("#!/bin/sh\necho tool ran\n")
    for path in [root, *root.rglob("*")]:
        extra = stat.S_IROTH | (stat.S_IXOTH if path.is_dir() or path == tool else 0)
        path.chmod(path.stat().st_mode | extra | (stat.S_IXUSR if path == tool else 0))
    yield runtime
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("sandbox_backend", ["bwrap"], indirect=True)
def test_a_directory_exposed_under_tmp_is_readable_inside(sandbox_backend, runtime_under_tmp):
    workdir = Path(tempfile.mkdtemp(prefix="pdeagent-w-", dir="/var/tmp"))
    try:
        (workdir / "prog.py").write_text(
            textwrap.dedent(
                f"""
                import os, subprocess
                print(open({str(runtime_under_tmp / "bin" / "data.txt")!r}).read(), end="")
                print(subprocess.run([{str(runtime_under_tmp / "bin" / "tool.sh")!r}],
                                     capture_output=True, text=True).stdout, end="")
                print(os.getuid())
                """
            )
        )
        request = SandboxRequest(
            argv=[sys.executable, "prog.py"],
            workdir=workdir,
            env={},
            expose=[*python_runtime_expose(), runtime_under_tmp],
            limits=Limits(wall_time_sec=30.0),
        )
        result = BwrapSandbox().run(request)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["runtime data", "tool ran"], result.stdout
    if os.geteuid() == 0:  # the program ran as the unprivileged sandbox user
        assert lines[2] != "0"


@pytest.mark.parametrize("sandbox_backend", ["bwrap"], indirect=True)
def test_parents_under_tmp_are_created_traversable(sandbox_backend):
    """The command itself: every missing parent of a bind under /tmp is made 0755 before
    the bind (checked on the argv, independent of the user running the tests)."""
    cfg = {
        "tmpfs_bytes": 1 << 20,
        "expose": ["/tmp/a/b/runtime"],
        "workdir": "/var/tmp/w",
        "writable": [],
        "hide": [],
    }
    cmd = BwrapSandbox()._command(cfg)
    bind = cmd.index("/tmp/a/b/runtime")
    for parent in ("/tmp/a", "/tmp/a/b"):
        at = cmd.index(parent)
        assert cmd[at - 3 : at] == ["--perms", "0755", "--dir"] and at < bind, parent
    assert "/tmp" not in [cmd[i + 1] for i, a in enumerate(cmd) if a == "--dir"]
