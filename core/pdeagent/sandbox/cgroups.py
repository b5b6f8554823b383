"""One cgroup per execution: a memory cap (RAM + swap) and a process cap for the whole run.

Used by the ``local`` and ``bwrap`` backends where the hierarchy is writable (in
practice: the harness runs as root). Two layouts:

* **v1**: separate ``memory`` and ``pids`` hierarchies; the run's group is a child of
  the harness's own group in each (from ``/proc/self/cgroup``). Memory:
  ``memory.limit_in_bytes`` and, when swap accounting exists,
  ``memory.memsw.limit_in_bytes``; OOM kills: ``oom_kill`` in ``memory.oom_control``.
* **v2** (unified): a child of the harness's own group, usable once ``+memory +pids``
  can be enabled in that group's ``cgroup.subtree_control`` (refused by the kernel
  while the group itself holds processes, except at the root); ``memory.max``,
  ``memory.swap.max``, ``pids.max``; OOM kills: ``oom_kill`` in ``memory.events``.

The program joins before the sandbox starts: the backend prefixes its command with
:meth:`RunCgroup.join_command` (a ``/bin/sh`` that writes its own pid to every
``cgroup.procs`` and ``exec``s the rest), so every process the run forks is inside.
The OOM-kill count is the memory verdict (:attr:`ExecutionResult.memory_enforced`).
After the run :meth:`RunCgroup.close` kills whatever is left and removes the group.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

from pdeagent.sandbox.base import Limits, SandboxError

PROCESS_SLACK = 16
"""pids.max = Limits.processes + this (the launcher and the join shim count too)."""


def _mounts() -> dict[str, tuple[Path, str]]:
    """cgroup mounts: v1 controller name (or ``"unified"`` for v2) -> (mount point, the
    hierarchy path mounted there)."""
    found: dict[str, tuple[Path, str]] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        parts, fs = left.split(), right.split()
        if len(parts) < 5 or len(fs) < 3:
            continue
        mounted = (Path(parts[4]), parts[3])
        if fs[0] == "cgroup2":
            found.setdefault("unified", mounted)
        elif fs[0] == "cgroup":
            for option in fs[2].split(","):
                if option in ("memory", "pids"):
                    found.setdefault(option, mounted)
    return found


def _own_groups() -> dict[str, str]:
    """This process's group per v1 controller, and ``"unified"`` for the v2 entry."""
    groups: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return groups
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            groups["unified"] = path
        for name in controllers.split(","):
            if name in ("memory", "pids"):
                groups[name] = path
    return groups


def _group_dir(mounted: tuple[Path, str], group: str) -> Path | None:
    point, root = mounted
    if root != "/" and not (group == root or group.startswith(root.rstrip("/") + "/")):
        return None  # our group is not visible under this mount
    relative = group[len(root) :] if root != "/" else group
    return point / relative.lstrip("/")


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _parents_v1() -> dict[str, Path] | None:
    mounts, groups = _mounts(), _own_groups()
    parents = {}
    for controller in ("memory", "pids"):
        if controller not in mounts or controller not in groups:
            return None
        parent = _group_dir(mounts[controller], groups[controller])
        if parent is None or not (parent / "cgroup.procs").is_file():
            return None
        if not os.access(parent, os.W_OK):
            return None
        parents[controller] = parent
    return parents


def _parent_v2() -> Path | None:
    mounts, groups = _mounts(), _own_groups()
    if "unified" not in mounts or "unified" not in groups:
        return None
    parent = _group_dir(mounts["unified"], groups["unified"])
    if parent is None:
        return None
    try:
        controllers = (parent / "cgroup.controllers").read_text().split()
    except OSError:
        return None
    if not {"memory", "pids"} <= set(controllers) or not os.access(parent, os.W_OK):
        return None
    try:
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        if not {"memory", "pids"} <= set(enabled):
            _write(parent / "cgroup.subtree_control", "+memory +pids")
    except OSError:
        return None  # e.g. EBUSY: the group holds processes (no internal processes rule)
    return parent


def unavailable_reason() -> str | None:
    """None when runs can get their own cgroup here, else why not."""
    if os.geteuid() != 0:
        return "not root (the cgroup hierarchy is not writable)"
    if _parents_v1() is not None or _parent_v2() is not None:
        return None
    return "no writable cgroup hierarchy with the memory and pids controllers"


class RunCgroup:
    """The cgroup(s) of one execution."""

    def __init__(self, version: int, groups: list[Path]) -> None:
        self.version = version
        self.groups = groups

    @classmethod
    def create(cls, limits: Limits) -> RunCgroup | None:
        """A new group with ``limits`` applied, or None when cgroups are not usable here."""
        if os.geteuid() != 0:
            return None
        name = f"pdeagent-{uuid.uuid4().hex[:12]}"
        memory = str(int(limits.memory_bytes))
        pids = str(int(limits.processes) + PROCESS_SLACK)
        parents = _parents_v1()
        made: list[Path] = []
        try:
            if parents is not None:
                mem, pid = parents["memory"] / name, parents["pids"] / name
                for group in (mem, pid):
                    group.mkdir()
                    made.append(group)
                _write(mem / "memory.limit_in_bytes", memory)
                if (mem / "memory.memsw.limit_in_bytes").exists():
                    _write(mem / "memory.memsw.limit_in_bytes", memory)
                if (mem / "memory.swappiness").exists():
                    _write(mem / "memory.swappiness", "0")
                _write(pid / "pids.max", pids)
                return cls(1, made)
            parent = _parent_v2()
            if parent is None:
                return None
            group = parent / name
            group.mkdir()
            made.append(group)
            _write(group / "memory.max", memory)
            if (group / "memory.swap.max").exists():
                _write(group / "memory.swap.max", "0")
            _write(group / "pids.max", pids)
            return cls(2, made)
        except OSError as exc:
            for group in reversed(made):
                try:
                    group.rmdir()
                except OSError:
                    pass
            raise SandboxError(f"cannot set up the run's cgroup: {exc}") from exc

    def join_command(self, argv: list[str]) -> list[str]:
        """``argv`` prefixed by a shell that moves itself into the group, then execs it."""
        writes = " && ".join(f'echo $$ > "${i + 1}"' for i in range(len(self.groups)))
        procs = [str(g / "cgroup.procs") for g in self.groups]
        shift = len(procs)
        return ["/bin/sh", "-c", f'{writes} && shift {shift} && exec "$@"', "sh", *procs, *argv]

    def oom_kills(self) -> int:
        """How many processes of the run the kernel killed for exceeding the memory cap."""
        if self.version == 1:
            source = self.groups[0] / "memory.oom_control"
        else:
            source = self.groups[0] / "memory.events"
        try:
            for line in source.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def pids(self) -> list[int]:
        found: set[int] = set()
        for group in self.groups:
            try:
                found.update(int(p) for p in (group / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                pass
        return sorted(found)

    def close(self) -> None:
        """Kill whatever is left in the group and remove it."""
        deadline = time.monotonic() + 10
        while (left := self.pids()) and time.monotonic() < deadline:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)
        for group in self.groups:
            for _ in range(100):
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # EBUSY until the killed processes are reaped
