"""``BwrapSandbox``: Debian's bubblewrap builds the world, the trusted launcher runs in it.

Layout of one run::

    harness ── [cgroup join shim] ── bwrap --unshare-{pid,net,ipc,uts,cgroup} ...
                                        └── python -I -S _launcher.py <fd>   (PID 1)
                                               └── program (setsid, rlimits, uid pdeagent-sbx)

The view bubblewrap builds: the host's ``/`` read-only with every hidden tree (among
them every top-level entry outside :data:`~pdeagent.sandbox.launched.SHOWN_TOP_LEVEL`)
under an empty read-only tmpfs (hidden files under ``/dev/null``), a fresh minimal
``/dev`` and ``/proc`` (of the new PID namespace), size-capped tmpfs on ``/tmp`` and
``/dev/shm``,
the exposed paths bound back read-only and the work dir (and the request's writable
cache dirs) read-write at their own paths. No network (a new, empty network
namespace), unless the request sets ``network`` (an external agent's own process):
then the world stays in the host's network namespace. As root every capability is
dropped except SETUID/SETGID (spent by the launcher on the drop to ``pdeagent-sbx``)
and KILL (its back-stop kill); the program
itself has none. The environment is empty (the config arrives on a pipe), so
``/proc/1/environ`` shows nothing of the harness. ``--die-with-parent`` ties the world
to the harness; the launcher is PID 1, so killing it ends every process of the run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pdeagent.sandbox.base import Limits, SandboxError
from pdeagent.sandbox.cgroups import RunCgroup
from pdeagent.sandbox.launched import (
    LAUNCHER,
    Handle,
    LauncherSandbox,
    PopenHandle,
    depth,
    launcher_interpreter,
    probe,
    under,
)

LAUNCHER_TARGET = "/dev/.pdeagent-launcher.py"
"""Where the launcher script appears inside the world (bwrap's own small /dev)."""
PRIVATE_TMPFS = ("/tmp", "/dev/shm")
"""The world's own empty tmpfs mounts; an exposed path under one is bound into it."""


def _bwrap() -> str | None:
    return shutil.which("bwrap")


class BwrapSandbox(LauncherSandbox):
    """Runs a program in a bubblewrap world (see the module docstring)."""

    name = "bwrap"
    builds_view = False

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """None when bubblewrap can build a world here, else why not."""
        bwrap = _bwrap()
        if bwrap is None:
            return "bubblewrap (`bwrap`) not found (Debian: apt-get install bubblewrap)"
        cmd = [bwrap, "--unshare-pid", "--unshare-net", "--die-with-parent"]
        cmd += ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
        return probe(cmd, "bwrap cannot create a sandbox here")

    def _command(self, cfg: dict) -> list[str]:
        bwrap = _bwrap()
        if bwrap is None:
            raise SandboxError("bubblewrap (`bwrap`) not found; refusing to run")
        python, prefix = launcher_interpreter()
        tmpfs = str(int(cfg["tmpfs_bytes"]))
        cmd = [bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        if not cfg.get("network", False):  # the host's network: an external agent only
            cmd.append("--unshare-net")
        cmd += ["--unshare-cgroup-try", "--die-with-parent", "--as-pid-1"]
        cmd += ["--hostname", "sandbox"]
        cmd += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        cmd += ["--perms", "1777", "--size", tmpfs, "--tmpfs", "/tmp"]
        cmd += ["--perms", "1777", "--size", tmpfs, "--tmpfs", "/dev/shm"]
        binds = [(p, False) for p in dict.fromkeys([str(prefix), *cfg["expose"]])]
        binds += [(cfg["workdir"], True)] + [(p, True) for p in cfg["writable"]]
        binds.sort(key=lambda b: (depth(b[0]), b[1]))  # parents first
        targets = [b[0] for b in binds]
        hides = sorted({h for h in cfg["hide"] if os.path.lexists(h)}, key=depth)
        top: list[str] = []
        for path in hides:
            if not any(under(path, t) for t in top):
                top.append(path)
        # hidden trees first, the exposed paths and the work dir bound back on top,
        # then hidden trees inside exposed ones covered again
        late = [h for h in hides if h not in top and any(under(h, t) for t in targets)]
        for path in top:
            cmd += self._cover(path)
        made: set[str] = set()
        # the fresh trees a bound path may lie in: the hidden covers and the private
        # tmpfs on /tmp and /dev/shm (a runtime under /tmp/... is bound into the latter)
        fresh = [*top, *PRIVATE_TMPFS]
        for path, writable in binds:
            # bwrap would create the missing parents inside a fresh tree with mode 0700,
            # which the sandbox user cannot traverse: make them 0755 first
            for parent in reversed(Path(path).parents):
                ps = str(parent)
                if ps not in made and any(under(ps, c) and ps != c for c in fresh):
                    made.add(ps)
                    cmd += ["--perms", "0755", "--dir", ps]
            cmd += ["--bind" if writable else "--ro-bind", path, path]
        for path in late:
            if path not in targets:
                cmd += self._cover(path)
        for path in [*top, *late]:
            if os.path.isdir(path) and not os.path.islink(path) and path not in targets:
                cmd += ["--remount-ro", path]
        if os.geteuid() == 0:
            cmd += ["--cap-drop", "ALL"]
            for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_KILL"):
                cmd += ["--cap-add", cap]
        # the launcher alone, not the (hidden) harness source tree around it
        cmd += ["--ro-bind", str(LAUNCHER), LAUNCHER_TARGET]
        cmd += ["--chdir", "/", "--", python, "-I", "-S", LAUNCHER_TARGET, "{cfg_fd}"]
        return cmd

    @staticmethod
    def _cover(path: str) -> list[str]:
        if os.path.isdir(path) and not os.path.islink(path):
            return ["--perms", "0755", "--size", str(1 << 20), "--tmpfs", path]
        if os.path.isfile(path) and not os.path.islink(path):
            return ["--ro-bind", "/dev/null", path]
        return []

    def _start(self, cfg: dict, cgroup: RunCgroup | None, limits: Limits) -> Handle:
        argv = self._command(cfg)
        if cgroup is not None:
            argv = cgroup.join_command(argv)
        return PopenHandle(argv, cfg)
