"""The sandbox session of an agent episode: one work dir that persists across the
agent's tool calls, and the tools that act on it (issue #22).

- ``write_file`` / ``read_file`` run in the harness but only ever touch the work dir:
  every path component is opened with ``O_NOFOLLOW`` below an open directory, so a
  symlink the agent's commands planted (to the dataset, the harness source, ``/etc``)
  is refused, never followed, and only regular files are read or replaced.
- ``run`` executes ``/bin/sh -c COMMAND`` through the run's sandbox backend, exactly as
  grading runs a submission: a fresh process tree per command, no network, the
  evaluator data hidden (the dataset dir, the run folder, the backend's default hidden
  trees), the track's runtime exposed read-only (:class:`~pdeagent.stages.AgentShell`),
  per-command wall and memory limits, output cut to a bound. Files persist between
  commands; processes do not.

The work dir lives in a scratch directory outside the run folder (which stays hidden
from the session); the loop keeps a copy of what matters (the transcript, the submitted
file) in the attempt folder.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shlex
import stat
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from attrs import define, field

from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import ExecutionResult, Limits, Sandbox, SandboxRequest
from pdeagent.stages import AgentShell, Invocation, Track

CASE_SPEC_FILE = "case_spec.json"
SHELL = "/bin/sh"
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


class ToolError(Exception):
    """A tool call the harness refuses or cannot do; its message goes back to the model
    as an error result (never a harness failure)."""


@define(frozen=True)
class SessionLimits:
    """Bounds of one episode's tools."""

    command_wall_sec: float = 120.0
    """Wall-time limit of one ``run`` command (also bounded by the tool-time budget left)."""
    output_chars: int = 8000
    """Characters of stdout and of stderr each shown to the model (head and tail kept)."""
    read_chars: int = 30000
    """Characters of a file ``read_file`` returns (the start; the answer says it is cut)."""
    write_bytes: int = 1024 * 1024
    """Largest file ``write_file`` writes."""
    memory_bytes: int = 4 * 1024**3
    workdir_bytes: int = 1024**3
    """Disk the work dir may use (the sandbox's watch kills a command past it)."""

    def sandbox_limits(self, wall_sec: float) -> Limits:
        return Limits(
            wall_time_sec=wall_sec,
            memory_bytes=self.memory_bytes,
            address_space_bytes=max(8 * 1024**3, self.memory_bytes),
            output_bytes=max(64 * 1024, 4 * self.output_chars),
            workdir_bytes=self.workdir_bytes,
        )


@define(frozen=True)
class CommandOutcome:
    """What one ``run`` did."""

    text: str
    """The answer shown to the model (exit status, cut stdout and stderr)."""
    exit_code: int | None
    wall_sec: float
    timed_out: bool
    is_error: bool


def default_shell(invocation: Invocation) -> AgentShell:
    """The shell of a track without ``pdeagent_agent_shell``: its invocation's
    environment, exposed paths and files, with the interpreter's directory on ``PATH``."""
    env = dict(invocation.env)
    program = invocation.argv[0] if invocation.argv else ""
    path = env.get("PATH", BASE_PATH)
    if os.path.isabs(program):
        path = f"{os.path.dirname(program)}:{path}"
    env["PATH"] = path
    shown = [
        os.path.basename(a) if i == 0 and os.path.isabs(a) else a
        for i, a in enumerate(invocation.argv)
    ]
    how = (
        f"The grader runs `{shlex.join(shown)}` in a fresh copy of a directory holding your "
        f"submitted file and `{CASE_SPEC_FILE}`; you can run the same command here "
        f"(`{shown[0] if shown else ''}` is on PATH)."
    )
    return AgentShell(env=env, expose=list(invocation.expose), files=dict(invocation.files),
                      how_to_run=how)  # fmt: skip


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


def _components(path: str) -> list[str]:
    if not isinstance(path, str) or not path.strip():
        raise ToolError("path must be a non-empty string")
    if "\x00" in path:
        raise ToolError("path contains a NUL character")
    if path.startswith("/"):
        raise ToolError(f"{path!r}: give a path relative to your work directory")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts:
        raise ToolError(f"{path!r} names the work directory itself, not a file")
    if any(p == ".." for p in parts):
        raise ToolError(f"{path!r}: '..' is not allowed")
    return parts


@define
class AgentSession:
    """One episode's work dir and the tools acting on it."""

    host: PluginHost
    track: Track
    case_view: dict[str, Any]
    sandbox: Sandbox
    workdir: Path
    """An empty directory of its own (created); persists across tool calls."""
    hide: list[Path] = field(factory=list)
    """Evaluator data to keep unreadable (dataset dir, run folder), beside the backend's."""
    limits: SessionLimits = field(factory=SessionLimits)
    slot: Callable[[], AbstractContextManager[Any]] | None = None
    """Held around every command: the executor's CPU slot (see
    :meth:`pdeagent.runs.executors.LocalExecutor.command_slot`), so that an agent's
    commands never share CPUs with another evaluation's timed runs."""
    shell: AgentShell | None = None

    def start(self) -> AgentShell:
        """Create the work dir with ``case_spec.json`` and the track's helper files;
        returns the shell (its ``how_to_run`` goes into the task prompt)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        spec = json.dumps(self.case_view["case_spec"], indent=2, sort_keys=True)
        self._write_bytes([CASE_SPEC_FILE], spec.encode())
        shell = self.host.call_track_hook(
            self.track, "pdeagent_agent_shell", workdir=self.workdir, case_view=self.case_view
        )
        if shell is None:
            invocation = self.host.call_track_hook(
                self.track, "pdeagent_invocation", workdir=self.workdir, case_view=self.case_view
            )
            if invocation is None:
                raise RuntimeError(f"track {self.track.name!r} implements no invocation hook")
            shell = default_shell(invocation)
        for name, content in shell.files.items():
            self._write_bytes(_components(name), content)
        self.shell = shell
        return shell

    # --- files ------------------------------------------------------------------------

    def _open_parent(self, parts: list[str], *, create: bool) -> int:
        """An fd of the directory holding ``parts[-1]``, walked without following links."""
        fd = os.open(self.workdir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for name in parts[:-1]:
                try:
                    nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise ToolError(f"no directory {name!r} on the way") from None
                    os.mkdir(name, 0o755, dir_fd=fd)
                    nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError as exc:
                    raise ToolError(f"{name!r} is not a directory (or a symlink)") from exc
                os.close(fd)
                fd = nxt
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _write_bytes(self, parts: list[str], data: bytes) -> None:
        parent = self._open_parent(parts, create=True)
        try:
            name = parts[-1]
            try:
                st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                # a symlink is replaced by the new file (rename never writes its target)
                raise ToolError(f"{'/'.join(parts)!r} exists and is not a regular file")
            tmp = f".pdeagent-write-{os.getpid()}-{name}"[:255]
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            try:
                os.unlink(tmp, dir_fd=parent)
            except FileNotFoundError:
                pass
            fd = os.open(tmp, flags, 0o644, dir_fd=parent)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        finally:
            os.close(parent)

    def write_file(self, path: str, content: str) -> str:
        if not isinstance(content, str):
            raise ToolError("content must be a string")
        data = content.encode("utf-8", errors="surrogatepass")
        if len(data) > self.limits.write_bytes:
            raise ToolError(f"content of {len(data)} bytes (limit {self.limits.write_bytes})")
        parts = _components(path)
        try:
            self._write_bytes(parts, data)
        except OSError as exc:
            raise ToolError(f"cannot write {path!r}: {os.strerror(exc.errno or 0)}") from None
        return f"wrote {len(data)} bytes to {'/'.join(parts)}"

    def read_bytes(self, path: str, limit: int) -> tuple[bytes, int]:
        """(the first ``limit`` bytes of the regular file ``path``, its size)."""
        parts = _components(path)
        parent = self._open_parent(parts, create=False)
        try:
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
            try:
                fd = os.open(parts[-1], flags, dir_fd=parent)
            except FileNotFoundError:
                raise ToolError(f"no file {'/'.join(parts)!r}") from None
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise ToolError(f"{'/'.join(parts)!r} is a symlink: not followed") from None
                raise ToolError(f"cannot open {path!r}: {os.strerror(exc.errno or 0)}") from None
        finally:
            os.close(parent)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ToolError(f"{'/'.join(parts)!r} is not a regular file")
            chunks, left = [], limit
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks), st.st_size
        finally:
            os.close(fd)

    def read_file(self, path: str) -> str:
        limit = self.limits.read_chars
        data, size = self.read_bytes(path, limit * 4)
        text = data.decode("utf-8", errors="replace")
        if len(text) > limit or size > len(data):
            return text[:limit] + f"\n[... cut: the file has {size} bytes ...]"
        return text

    # --- commands ---------------------------------------------------------------------

    def run(
        self, command: str, *, wall_sec: float | None = None, network: bool = False
    ) -> CommandOutcome:
        if not isinstance(command, str) or not command.strip():
            raise ToolError("command must be a non-empty string")
        if self.shell is None:
            raise RuntimeError("the session was not started")
        wall = self.limits.command_wall_sec if wall_sec is None else wall_sec
        request = SandboxRequest(
            argv=[SHELL, "-c", command],
            workdir=self.workdir,
            env=dict(self.shell.env),
            expose=list(self.shell.expose),
            limits=self.limits.sandbox_limits(wall),
            hide=list(self.hide),
            network=network,  # True only for an external agent's own process
        )
        with self.slot() if self.slot is not None else contextlib.nullcontext():
            result = self.sandbox.run(request)
        return CommandOutcome(
            text=self._describe(result, wall),
            exit_code=result.exit_code,
            wall_sec=result.wall_time_sec,
            timed_out=result.timed_out,
            is_error=not result.ok,
        )

    def _describe(self, result: ExecutionResult, wall: float) -> str:
        if result.timed_out:
            status = f"killed: the command exceeded its wall-time limit of {wall:.0f} s"
        elif result.memory_exceeded:
            status = f"killed: out of memory (limit {self.limits.memory_bytes >> 20} MiB)"
        elif result.violation is not None:
            status = f"killed: {result.violation}"
        elif result.exit_code is None:
            status = f"killed by signal {result.signal}"
        else:
            status = f"exit code {result.exit_code}"
        lines = [f"{status}; {result.wall_time_sec:.2f} s"]
        for name, text, cut in (
            ("stdout", result.stdout, result.stdout_truncated),
            ("stderr", result.stderr, result.stderr_truncated),
        ):
            if text or cut:
                note = " (the sandbox kept only its start)" if cut else ""
                lines.append(f"--- {name}{note} ---\n{_cut(text, self.limits.output_chars)}")
        return "\n".join(lines)
