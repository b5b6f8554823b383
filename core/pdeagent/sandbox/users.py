"""The dedicated unprivileged user that sandboxed programs run as (when the harness is root)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import threading

from pdeagent.sandbox.base import SandboxError

SANDBOX_USER = "pdeagent-sbx"
"""Name of the system user untrusted programs run as."""

_lock = threading.Lock()


def _lookup(name: str) -> tuple[int, int] | None:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise SandboxError(f"sandbox user {name!r} has uid/gid 0; refusing to use it")
    return entry.pw_uid, entry.pw_gid


def ensure_sandbox_user(name: str = SANDBOX_USER) -> tuple[int, int]:
    """Return ``(uid, gid)`` of the sandbox user, creating it (as root) on first use.

    The user is a system user with its own group, no home directory and
    ``/usr/sbin/nologin`` as shell. Raises :class:`SandboxError` when it does not
    exist and cannot be created.
    """
    with _lock:
        found = _lookup(name)
        if found is not None:
            return found
        if os.geteuid() != 0:
            raise SandboxError(f"sandbox user {name!r} does not exist and we are not root")
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        if not os.access(useradd, os.X_OK):
            raise SandboxError(f"cannot create sandbox user {name!r}: useradd not found")
        cmd = [
            useradd,
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            "--user-group",
            name,
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxError(f"cannot create sandbox user {name!r}: {exc}") from exc
        found = _lookup(name)  # another process may have won the race: that is fine
        if found is None:
            raise SandboxError(
                f"cannot create sandbox user {name!r}: useradd exited {proc.returncode}: "
                f"{proc.stderr.strip()}"
            )
        return found
