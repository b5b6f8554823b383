"""External agents (issue #22, ``--provider command``): an agent CLI run once as a
program in the episode's sandbox session, instead of the core's tool loop.

The provider says what to run (:class:`ExternalAgent`); :class:`ExternalEpisode` writes
the task prompt into the work dir as ``prompt.md`` (beside ``case_spec.json`` and the
track's helper files), runs ``/bin/sh -c COMMAND`` there through the session's sandbox
backend (the track's runtime exposed, the evaluator data hidden, no network unless the
provider allows it for this process) with the episode's tool-time budget as its wall
limit, and takes the file it left at the track's source file name as the submission:
graded like a single-shot one, in a fresh sandbox.

Everything is recorded in the attempt folder's ``external_agent.json`` (the command,
the network flag, exit code, signal, timeout, wall time, the bounded stdout and stderr,
the status and the result); the submitted file is kept there under the source file name.
A finished episode is never run again (``--resume`` regrades its file); one the harness
never finished (it stopped while the agent ran, or the sandbox could not start) runs
again from a fresh work dir.

Ends: ``submitted`` (a regular, non-empty UTF-8 file was left, whatever the agent's
exit status), ``budget`` (killed at the wall budget with no such file: ``F-Gen
agent_budget``), ``no_submit`` (ended otherwise with no such file: ``F-Gen
agent_no_submit``), ``sandbox_failure`` (the sandbox could not run the agent: an
infrastructure failure, run again by ``--rerun-errors``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from attrs import asdict, define, evolve, field

from pdeagent.agent.loop import FINAL, Budgets, EpisodeResult, saved_result
from pdeagent.agent.session import CASE_SPEC_FILE, AgentSession, ToolError
from pdeagent.fileio import atomic_write_json, atomic_write_text
from pdeagent.sandbox.base import ExecutionResult, Sandbox, SandboxError, SandboxRequest
from pdeagent.stages import AgentShell, Track

EXTERNAL_RECORD_FILE = "external_agent.json"
EXTERNAL_SCHEMA = 1
AGENT_PROMPT_FILE = "prompt.md"
"""The task prompt in the agent's work dir."""
CAPTURE_BYTES = 1024 * 1024
"""Bytes of the agent's stdout and of its stderr the sandbox keeps (the start)."""
RECORD_OUTPUT_CHARS = 64 * 1024
"""Characters of each stream kept in the record: its start and, mostly, its end."""
RECORD_HEAD_CHARS = 8 * 1024


def _check_command(_instance: Any, _attribute: Any, value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("an external agent's command must be a non-empty string")
    if "\x00" in value:
        raise ValueError("an external agent's command contains a NUL character")


@define(frozen=True)
class ExternalAgent:
    """What a provider with ``external_agent(settings)`` says to run."""

    command: str = field(validator=_check_command)
    """A shell command line, run with ``/bin/sh -c`` in the work dir."""
    network: bool = False
    """True: the agent's process gets the host's network (to reach an LLM API); the
    graded program never does."""


def build_external_section(track: Track, shell: AgentShell, budgets: Budgets) -> str:
    """The section appended to the task prompt of an external agent
    (``templates/external_agent.md.j2``): its work dir, the file it must leave, how the
    grader runs it (the track's :class:`~pdeagent.stages.AgentShell`), its wall budget."""
    from pdeagent.prompts.builder import _environment

    context = {
        "track": track,
        "prompt_file": AGENT_PROMPT_FILE,
        "case_spec_file": CASE_SPEC_FILE,
        "helper_files": sorted(shell.files),
        "how_to_run": shell.how_to_run,
        "source_filename": track.source_filename,
        "budgets": budgets,
    }
    text = _environment().get_template("external_agent.md.j2").render(context)
    return text.rstrip("\n") + "\n"


def _bounded(text: str, limit: int = RECORD_OUTPUT_CHARS, head: int = RECORD_HEAD_CHARS) -> str:
    """``text`` cut to about ``limit`` characters: its start and its end."""
    if len(text) <= limit:
        return text
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


@define
class _Capturing:
    """The session's sandbox, keeping the last execution's full result and a larger
    capture of its output (the session's tool answer holds only a cut of it)."""

    inner: Sandbox
    output_bytes: int
    result: ExecutionResult | None = None

    @property
    def name(self) -> str:
        return self.inner.name

    def run(self, request: SandboxRequest) -> ExecutionResult:
        limits = evolve(request.limits, output_bytes=self.output_bytes)
        self.result = self.inner.run(evolve(request, limits=limits))
        return self.result


def _how_it_ended(r: ExecutionResult) -> str:
    oom = " (out of memory)" if r.memory_exceeded else ""
    if r.timed_out:
        return f"was killed after {r.wall_time_sec:.0f} s (its wall-time budget)"
    if r.violation is not None:
        return f"was killed by the sandbox: {r.violation}"
    if r.exit_code is None:
        return f"was killed by signal {r.signal}{oom}"
    return f"exited with code {r.exit_code}{oom}"


@define
class ExternalEpisode:
    """One external agent's episode of one attempt (see the module docstring)."""

    session: AgentSession
    directory: Path
    """The attempt folder (``external_agent.json`` and the submitted file go there)."""
    agent: ExternalAgent
    prompt: str
    source_filename: str
    budgets: Budgets = field(factory=Budgets)

    @property
    def record_path(self) -> Path:
        return self.directory / EXTERNAL_RECORD_FILE

    def _load(self) -> dict[str, Any] | None:
        """The saved record, None when there is none (an unreadable one is an error:
        a finished episode is never silently run again)."""
        try:
            raw = self.record_path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict) or data.get("schema_version") != EXTERNAL_SCHEMA:
                raise ValueError("not an external agent record of this schema")
            int(data.get("starts", 0))
        except (UnicodeDecodeError, ValueError, TypeError) as exc:
            raise RuntimeError(
                f"unreadable external agent record {self.record_path}: {exc}"
            ) from None
        return data

    def _save(self, status: str, starts: int, **extra: Any) -> None:
        atomic_write_json(
            self.record_path,
            {
                "schema_version": EXTERNAL_SCHEMA,
                "command": self.agent.command,
                "network": self.agent.network,
                "wall_budget_sec": self.budgets.tool_time_sec,
                "source_filename": self.source_filename,
                "status": status,
                "starts": starts,
                **extra,
            },
        )

    def run(self) -> EpisodeResult:
        """Run the agent once (or report the finished episode)."""
        saved = self._load()
        if saved is not None and saved.get("status") in FINAL and saved.get("result"):
            return self._saved_result(saved["result"])
        starts = int(saved.get("starts", 0)) + 1 if saved is not None else 1
        shell = self.session.shell if self.session.shell is not None else self.session.start()
        for name in (AGENT_PROMPT_FILE, self.source_filename):
            if name in shell.files or name == CASE_SPEC_FILE:
                raise RuntimeError(
                    f"track {self.session.track.name!r} puts {name!r} into the agent's work "
                    "dir itself: an external agent cannot be run on it"
                )
        self.session.write_file(AGENT_PROMPT_FILE, self.prompt)
        self._save("running", starts)
        capture = _Capturing(self.session.sandbox, CAPTURE_BYTES)
        session = evolve(self.session, sandbox=capture)
        wall = self.budgets.tool_time_sec
        t0 = time.monotonic()
        try:
            session.run(self.agent.command, wall_sec=wall, network=self.agent.network)
        except SandboxError as exc:
            result = EpisodeResult(
                "sandbox_failure", reason="harness_error", infrastructure=True,
                message=f"the sandbox could not run the external agent: {exc}",
                record_file=EXTERNAL_RECORD_FILE,
            )  # fmt: skip
            self._finish(result, starts, harness_sec=time.monotonic() - t0)
            return result
        harness_sec = time.monotonic() - t0
        r = capture.result
        if r is None:  # session.run returned without running the sandbox
            raise RuntimeError("the session ran no sandbox for the external agent")
        source, problem = self._take()
        ended = _how_it_ended(r)
        common: dict[str, Any] = {
            "tool_time_sec": r.wall_time_sec,
            "generation_sec": r.wall_time_sec,
            "record_file": EXTERNAL_RECORD_FILE,
        }
        if source is not None:
            atomic_write_text(self.directory / self.source_filename, source)
            result = EpisodeResult(
                "submitted", source=source, submitted_path=self.source_filename,
                message=f"the agent {ended}, leaving {self.source_filename}", **common,
            )  # fmt: skip
        elif r.timed_out:
            result = EpisodeResult(
                "budget", reason="agent_budget",
                message=f"the agent was killed after {wall:.0f} s (its wall-time budget) "
                f"without leaving {problem}", **common,
            )  # fmt: skip
        else:
            result = EpisodeResult(
                "no_submit", reason="agent_no_submit",
                message=f"the agent {ended} without leaving {problem}", **common,
            )  # fmt: skip
        execution = {
            "backend": r.backend,
            "exit_code": r.exit_code,
            "signal": r.signal,
            "timed_out": r.timed_out,
            "memory_exceeded": r.memory_exceeded,
            "violation": r.violation,
            "wall_sec": r.wall_time_sec,
            "harness_sec": harness_sec,
            "wall_limit_sec": wall,
            "stdout": _bounded(r.stdout),
            "stderr": _bounded(r.stderr),
            "stdout_chars": len(r.stdout),
            "stderr_chars": len(r.stderr),
            "stdout_truncated": r.stdout_truncated,
            "stderr_truncated": r.stderr_truncated,
        }
        self._finish(result, starts, execution=execution)
        return result

    def _take(self) -> tuple[str | None, str]:
        """(the file the agent left, or None and what was wrong with it)."""
        limit = self.session.limits.write_bytes
        name = self.source_filename
        try:
            data, size = self.session.read_bytes(name, limit + 1)
        except ToolError as exc:
            text = str(exc)
            return None, (name if text.startswith("no file") else f"a usable {name} ({text})")
        if size > limit:
            return None, f"a usable {name} (it has {size} bytes; limit {limit})"
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError:
            return None, f"a usable {name} (it is not UTF-8 text)"
        if not source.strip():
            return None, f"a usable {name} (it is empty)"
        return source, ""

    def _finish(self, result: EpisodeResult, starts: int, **extra: Any) -> None:
        saved = asdict(result)
        saved.pop("source")
        self._save(result.status, starts, result=saved, **extra)

    def _saved_result(self, saved: dict[str, Any]) -> EpisodeResult:
        return saved_result(saved, self.directory, self.source_filename, self.record_path)
