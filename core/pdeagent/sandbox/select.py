"""Choosing a sandbox backend: ``--sandbox local|bwrap|docker`` or the strongest available.

Strength order (strongest first): ``docker`` (its own root file system with only
whitelisted host trees, container memory/pids/CPU limits), ``bwrap`` (bubblewrap
namespaces, capabilities dropped), ``local`` (util-linux ``unshare`` namespaces).
Every backend adds cgroup memory and pids limits where it can.

``$PDEAGENT_SANDBOX`` names the backend when no ``--sandbox`` is given. A backend
that is named but not available is an error (:class:`SandboxError`), never a silent
fall-back to a weaker one.
"""

from __future__ import annotations

import os

from pdeagent.sandbox.base import Sandbox, SandboxError

BACKENDS: tuple[str, ...] = ("docker", "bwrap", "local")
"""Every backend, strongest first."""
ENV_VAR = "PDEAGENT_SANDBOX"


def _status_of(name: str) -> str | None:
    if name == "local":
        from pdeagent.sandbox.local import LocalSandbox

        return LocalSandbox.unavailable_reason()
    if name == "bwrap":
        from pdeagent.sandbox.bwrap import BwrapSandbox

        return BwrapSandbox.unavailable_reason()
    if name == "docker":
        from pdeagent.sandbox.docker import DockerSandbox

        return DockerSandbox.unavailable_reason()
    raise SandboxError(f"unknown sandbox backend {name!r} (known: {', '.join(BACKENDS)})")


def backend_status() -> dict[str, str | None]:
    """Every backend -> None when it can run programs here, else why not (one line)."""
    return {name: _status_of(name) for name in BACKENDS}


def available_backends() -> list[str]:
    """The backends that can run programs here, strongest first."""
    return [name for name, why in backend_status().items() if why is None]


def resolve_backend(name: str | None = None) -> str:
    """The backend to use: ``name``, else ``$PDEAGENT_SANDBOX``, else the strongest available.

    Raises :class:`SandboxError` for an unknown or unavailable named backend, or when
    no backend is available at all.
    """
    chosen = name or os.environ.get(ENV_VAR, "").strip() or None
    if chosen is not None:
        why = _status_of(chosen)
        if why is not None:
            raise SandboxError(f"sandbox backend {chosen!r} is not available: {why}")
        return chosen
    status = backend_status()
    for backend in BACKENDS:
        if status[backend] is None:
            return backend
    details = "; ".join(f"{k}: {v}" for k, v in status.items())
    raise SandboxError(f"no sandbox backend is available here ({details})")


def get_sandbox(name: str | None = None) -> Sandbox:
    """An instance of the backend :func:`resolve_backend` picks."""
    backend = resolve_backend(name)
    if backend == "docker":
        from pdeagent.sandbox.docker import DockerSandbox

        return DockerSandbox()
    if backend == "bwrap":
        from pdeagent.sandbox.bwrap import BwrapSandbox

        return BwrapSandbox()
    from pdeagent.sandbox.local import LocalSandbox

    return LocalSandbox()
