"""``LocalSandbox``: Linux namespaces via util-linux ``unshare`` plus a trusted launcher.

Layout of one run::

    harness ── unshare --mount --net --pid --ipc --uts --fork --kill-child --mount-proc
                 (no ``--net`` when the request sets ``network``: an external agent)
                 └── python -I -S _launcher.py <fd>      (PID 1, root in the namespaces)
                        └── program (setsid, rlimits, no_new_privs, uid pdeagent-sbx)

* The harness starts ``unshare`` in a new session with an *empty* environment; the
  launcher gets its configuration on an inherited pipe and reports on another.
* The launcher builds the file-system view (see :mod:`pdeagent.sandbox._launcher`):
  private size-capped tmpfs on ``/tmp`` and ``/dev/shm``; hidden trees covered by
  empty read-only tmpfs; ``request.expose`` bound back read-only; the work dir bound
  back writable *at its own path* (so a work dir under ``/tmp`` or under a hidden
  tree still works); every other mount remounted read-only.
* On the wall-clock limit the harness SIGKILLs the launcher (PID 1 of the PID
  namespace); the kernel then kills every process of the namespace, including
  ``setsid`` daemons, before ``unshare`` can observe the launcher's death, so once
  ``run`` returns no process of the run exists.

When the harness is root the program runs as the dedicated system user
``pdeagent-sbx`` (see :mod:`pdeagent.sandbox.users`), and the work dir is chowned to
it for the run and back to its original owner afterwards (set-uid/gid bits
stripped). Otherwise ``unshare --user --map-root-user`` is added and the program
keeps the (already unprivileged) host uid.

Where the harness may create cgroups (root, a writable v1 or v2 hierarchy) the run
also gets its own cgroup (:mod:`pdeagent.sandbox.cgroups`): a memory cap whose OOM
kills are the memory verdict, a pids cap, and a last sweep of its members. Elsewhere
the memory verdict is a heuristic (:func:`pdeagent.sandbox.launched.memory_heuristic`).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

from pdeagent.sandbox.base import Limits, SandboxError
from pdeagent.sandbox.cgroups import RunCgroup
from pdeagent.sandbox.launched import (
    HIDE_ENV_VAR,
    LAUNCHER,
    Handle,
    LauncherSandbox,
    PopenHandle,
    default_hidden_paths,
    probe,
    python_runtime_expose,
)
from pdeagent.sandbox.launched import memory_heuristic as _memory_exceeded
from pdeagent.sandbox.users import SANDBOX_USER

__all__ = [
    "HIDE_ENV_VAR",
    "LAUNCHER",
    "LocalSandbox",
    "_memory_exceeded",
    "default_hidden_paths",
    "default_sandbox",
    "python_runtime_expose",
]


class LocalSandbox(LauncherSandbox):
    """Runs a program in fresh mount/net/pid namespaces created by ``unshare``."""

    name = "local"
    builds_view = True

    def __init__(
        self,
        hidden_paths: Iterable[Path | str] | None = None,
        *,
        extra_hidden_paths: Iterable[Path | str] = (),
        unshare_path: Path | str | None = None,
        user: str = SANDBOX_USER,
    ) -> None:
        super().__init__(hidden_paths, extra_hidden_paths=extra_hidden_paths, user=user)
        self.unshare_path = Path(unshare_path or shutil.which("unshare") or "/usr/bin/unshare")

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """None when namespaces can be created here, else why not."""
        unshare = shutil.which("unshare")
        if unshare is None:
            return "util-linux `unshare` not found"
        cmd = [unshare]
        if os.geteuid() != 0:
            cmd += ["--user", "--map-root-user"]
        cmd += ["--mount", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
        cmd += ["--propagation", "private", "true"]
        return probe(cmd, "cannot create namespaces")

    def _command(self, as_root: bool, network: bool = False) -> list[str]:
        if not (self.unshare_path.is_file() and os.access(self.unshare_path, os.X_OK)):
            raise SandboxError(f"unshare not available at {self.unshare_path}; refusing to run")
        python = sys.executable
        if not python:
            raise SandboxError("cannot locate a Python interpreter for the sandbox launcher")
        cmd = [str(self.unshare_path)]
        if not as_root:
            cmd += ["--user", "--map-root-user"]
        cmd += ["--mount", "--pid", "--ipc", "--uts", "--fork", "--kill-child"]
        if not network:  # the host's network only for an external agent's own process
            cmd.append("--net")
        cmd += ["--mount-proc", "--propagation", "private", "--"]
        cmd += [python, "-I", "-S", str(LAUNCHER), "{cfg_fd}"]
        return cmd

    def _start(self, cfg: dict, cgroup: RunCgroup | None, limits: Limits) -> Handle:
        argv = self._command(os.geteuid() == 0, network=bool(cfg.get("network", False)))
        if cgroup is not None:
            argv = cgroup.join_command(argv)
        return PopenHandle(argv, cfg)


def default_sandbox():
    """The strongest sandbox backend available here (see :mod:`pdeagent.sandbox.select`)."""
    from pdeagent.sandbox.select import get_sandbox

    return get_sandbox()
