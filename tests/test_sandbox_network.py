"""``SandboxRequest.network`` on every sandbox backend (issue #22): False (the default,
every graded run) gives the program no network, not even the host's loopback; True
(an external agent's own process) gives it the host's network: it connects to a
listener on the host's 127.0.0.1 (the docker backend uses ``network_mode="host"``; in a
bridge 127.0.0.1 would be the container's own). The hidden trees stay hidden either way."""

from __future__ import annotations

import json
import secrets
import shutil
import socket
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from pdeagent.adversarial import visible_scratch_dir
from pdeagent.sandbox import SandboxRequest, python_runtime_expose
from pdeagent.sandbox.base import Limits
from pdeagent.sandbox.select import get_sandbox

pytestmark = pytest.mark.sandbox

PROGRAM = """
import errno, json, socket, sys
out = {}
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    s.sendall(sys.argv[2].encode())
    s.close()
    out["connect"] = "ok"
except OSError as e:
    out["connect"] = errno.errorcode.get(e.errno, type(e).__name__)
try:
    out["secret"] = open(sys.argv[3]).read()
except OSError as e:
    out["secret"] = type(e).__name__
print(json.dumps(out))
"""


@pytest.fixture
def hidden_secret():
    """A file in a host dir the request hides (readable on the host by anyone)."""
    base = Path(tempfile.mkdtemp(prefix="pdeagent-net-test-", dir=visible_scratch_dir()))
    base.chmod(0o755)
    token = "netsecret" + secrets.token_hex(8)
    (base / "secret.txt").write_text(token)
    (base / "secret.txt").chmod(0o644)
    yield base, token
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("network", [False, True])
def test_the_network_flag_is_the_only_way_to_the_hosts_network(
    sandbox_backend, network, tmp_path, hidden_secret
):
    hidden, secret = hidden_secret
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(2.0)
    port = listener.getsockname()[1]
    hello = "hello-" + secrets.token_hex(6)
    workdir = tmp_path / "w"
    workdir.mkdir()
    (workdir / "prog.py").write_text(textwrap.dedent(PROGRAM))
    request = SandboxRequest(
        argv=[sys.executable, "prog.py", str(port), hello, str(hidden / "secret.txt")],
        workdir=workdir,
        expose=python_runtime_expose(),
        limits=Limits(wall_time_sec=30.0),
        hide=[hidden],
        network=network,
    )
    try:
        res = get_sandbox(sandbox_backend).run(request)
        assert res.exit_code == 0, res.stderr
        out = json.loads(res.stdout)
        if network:
            assert out["connect"] == "ok", out
            conn, _addr = listener.accept()  # the connection waits in the backlog
            with conn:
                conn.settimeout(2.0)
                assert conn.recv(100) == hello.encode()
        else:
            # a loopback of its own with nothing listening (bwrap, docker), or none (local)
            assert out["connect"] in ("ECONNREFUSED", "ENETUNREACH"), out
            with pytest.raises(TimeoutError):
                listener.accept()
        # the evaluator data stays hidden whether or not the network is there
        assert out["secret"] != secret and secret not in res.stdout
    finally:
        listener.close()


def test_network_is_off_unless_asked():
    request = SandboxRequest(argv=["true"], workdir=Path("/nonexistent"))
    assert request.network is False
