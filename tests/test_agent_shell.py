"""The shell an agent's session gets from its track (issue #22): from the track's
``pdeagent_agent_shell`` hook when it answers, else derived from its invocation."""

from __future__ import annotations

from pathlib import Path

from pdeagent import hookimpl
from pdeagent.agent.session import AgentSession, default_shell
from pdeagent.cases.agent_view import agent_view
from pdeagent.sandbox.select import get_sandbox
from pdeagent.stages import AgentShell, Invocation


def session(host, track, case, workdir: Path) -> AgentSession:
    return AgentSession(host=host, track=track, case_view=agent_view(case, track.name),
                        sandbox=get_sandbox("local"), workdir=workdir)  # fmt: skip


def test_pdeagent_agent_shell_default_comes_from_the_invocation(host, track, case, tmp_path):
    shell = session(host, track, case, tmp_path / "w").start()
    invocation = host.call_track_hook(
        track, "pdeagent_invocation", workdir=tmp_path, case_view=agent_view(case, track.name)
    )
    python = Path(invocation.argv[0])
    assert shell.env["PATH"].split(":")[0] == str(python.parent)
    assert shell.expose == invocation.expose and set(shell.files) == set(invocation.files)
    assert "`python pdeagent_runner.py solver.py`" in shell.how_to_run
    work = tmp_path / "w"
    assert sorted(p.name for p in work.iterdir()) == ["case_spec.json", "pdeagent_runner.py"]


def test_default_shell_keeps_a_relative_program_and_the_given_path():
    shell = default_shell(Invocation(argv=["./solver", "case_spec.json", "."],
                                     env={"PATH": "/usr/bin:/bin"}))  # fmt: skip
    assert shell.env["PATH"] == "/usr/bin:/bin"
    assert "`./solver case_spec.json .`" in shell.how_to_run


class ShellPlugin:
    """A plugin (of no track) answering the hook for every track."""

    @hookimpl
    def pdeagent_agent_shell(self, track, workdir, case_view):
        return AgentShell(env={"PATH": "/usr/bin:/bin", "X": "1"},
                          files={"tools/hello.sh": b"echo hello\n"},
                          how_to_run="Run `sh tools/hello.sh`.")  # fmt: skip


def test_pdeagent_agent_shell_answer_is_used(pdeagent_host_factory, track, case, tmp_path):
    host = pdeagent_host_factory(extra_plugins=[ShellPlugin()])
    s = session(host, host.get_track(track.name), case, tmp_path / "w")
    shell = s.start()
    assert shell.env["X"] == "1" and shell.how_to_run == "Run `sh tools/hello.sh`."
    assert (tmp_path / "w" / "tools" / "hello.sh").read_bytes() == b"echo hello\n"
    assert (tmp_path / "w" / "case_spec.json").is_file()
