"""The sandbox interface: one request in, one execution result out."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from attrs import define, field


class SandboxError(RuntimeError):
    """The sandbox itself could not run the program (an infrastructure failure,
    never a verdict about the submission)."""


@define(frozen=True)
class Limits:
    """Resource limits of one execution."""

    wall_time_sec: float = 600.0
    cpu_time_sec: int | None = None
    """CPU seconds (RLIMIT_CPU); default: wall time x 2 + 10."""
    address_space_bytes: int = 8 * 1024**3
    file_size_bytes: int = 2 * 1024**3
    open_files: int = 1024
    processes: int = 256
    """Processes/threads of the sandbox user (RLIMIT_NPROC)."""
    output_bytes: int = 1024 * 1024
    """Captured bytes of stdout and of stderr each; the rest is drained and dropped."""
    tmpfs_bytes: int = 512 * 1024**2
    """Size of the private /tmp."""
    memory_bytes: int = 6 * 1024**3
    """Memory (RAM + swap) of all processes of the run together, enforced by a cgroup or
    the container where the backend has one; exceeding it is an OOM kill (F-Exec memory)."""
    workdir_bytes: int = 2 * 1024**3
    """Disk the work dir and the ``writable`` dirs may use together (allocated blocks);
    past it the run is killed as a sandbox violation, so filling the disk is bounded."""
    workdir_entries: int = 20000
    """Files and directories the work dir may hold (same watch, same verdict)."""

    def effective_cpu_time(self) -> int:
        if self.cpu_time_sec is not None:
            return self.cpu_time_sec
        return int(self.wall_time_sec * 2 + 10)


@define(frozen=True)
class SandboxRequest:
    argv: list[str]
    workdir: Path
    """A fresh directory; the only writable place besides a private /tmp."""
    env: dict[str, str] = field(factory=dict)
    expose: list[Path] = field(factory=list)
    """Host paths the program must be able to read even if they lie in hidden trees."""
    limits: Limits = field(factory=Limits)
    writable: list[Path] = field(factory=list)
    """Extra existing directories the program may write (e.g. a JIT cache shared by the
    executions of one submission, never across submissions)."""
    hide: list[Path] = field(factory=list)
    """Evaluator data of this execution (dataset dir, references, run directory) that
    must be unreadable, in addition to the backend's default hidden paths."""
    network: bool = False
    """False (the default, and always for grading, compiling and an agent's tool
    commands): no network at all, not even the host's loopback. True: the host's network
    (its interfaces, its loopback and the services listening there; the docker backend
    uses ``network_mode="host"``), only for an external agent's own process that must
    reach an LLM API (``--provider command`` with ``network=allow``); never for a
    program that is graded. Everything else (hidden trees, limits, no process left)
    holds either way."""


@define(frozen=True)
class ExecutionResult:
    exit_code: int | None
    """Exit status of the program; None when it was killed by a signal."""
    signal: int | None
    timed_out: bool
    memory_exceeded: bool
    wall_time_sec: float
    """Wall time of the program alone, measured outside it (setup excluded)."""
    stdout: str
    stderr: str
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    backend: str = ""
    violation: str | None = None
    """Why the sandbox killed the run for breaking a rule (e.g. the work dir outgrew
    ``Limits.workdir_bytes``): F-Exec ``sandbox_violation``; None otherwise."""
    memory_enforced: bool = False
    """True when ``memory_exceeded`` comes from the kernel (cgroup OOM kill count or the
    container's OOM flag), False when it is the stderr/RSS heuristic."""

    @property
    def ok(self) -> bool:
        return (
            self.exit_code == 0
            and not self.timed_out
            and not self.memory_exceeded
            and self.violation is None
        )


class Sandbox(Protocol):
    """A backend that runs one untrusted program.

    Guarantees every backend states (and tests prove): fresh working directory
    only writable place; no network (unless the request sets ``network``); every
    process of the run is dead when ``run`` returns; limits enforced; evaluator data
    unreadable.
    """

    name: str

    def run(self, request: SandboxRequest) -> ExecutionResult:
        """Run the request; raise :class:`SandboxError` only for infrastructure failures."""
        ...
