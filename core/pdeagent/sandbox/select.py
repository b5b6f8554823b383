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


def backend_class(name: str) -> type:
    """The class of backend ``name`` (imported on demand: docker pulls in its SDK)."""
    if name == "local":
        from pdeagent.sandbox.local import LocalSandbox

        return LocalSandbox
    if name == "bwrap":
        from pdeagent.sandbox.bwrap import BwrapSandbox

        return BwrapSandbox
    if name == "docker":
        from pdeagent.sandbox.docker import DockerSandbox

        return DockerSandbox
    raise SandboxError(f"unknown sandbox backend {name!r} (known: {', '.join(BACKENDS)})")


def backend_status() -> dict[str, str | None]:
    """Every backend -> None when it can run programs here, else why not (one line)."""
    return {name: backend_class(name).unavailable_reason() for name in BACKENDS}


def available_backends() -> list[str]:
    """The backends that can run programs here, strongest first."""
    return [name for name, why in backend_status().items() if why is None]


def resolve_backend(name: str | None = None, status: dict[str, str | None] | None = None) -> str:
    """The backend to use: ``name``, else ``$PDEAGENT_SANDBOX``, else the strongest available.

    ``status`` is a :func:`backend_status` the caller already has (not probed again).
    Raises :class:`SandboxError` for an unknown or unavailable named backend, or when
    no backend is available at all.
    """
    chosen = name or os.environ.get(ENV_VAR, "").strip() or None
    if chosen is not None:
        if status is not None and chosen in status:
            why = status[chosen]
        else:
            why = backend_class(chosen).unavailable_reason()
        if why is not None:
            raise SandboxError(f"sandbox backend {chosen!r} is not available: {why}")
        return chosen
    status = status or backend_status()
    for backend in BACKENDS:
        if status[backend] is None:
            return backend
    details = "; ".join(f"{k}: {v}" for k, v in status.items())
    raise SandboxError(f"no sandbox backend is available here ({details})")


def get_sandbox(name: str | None = None) -> Sandbox:
    """An instance of the backend :func:`resolve_backend` picks (checked available)."""
    return backend_class(resolve_backend(name))()


def make_sandbox(name: str | None) -> Sandbox:
    """An instance of backend ``name`` without probing it again: for executions of a run
    that resolved its backend when it started (an unavailable one fails in ``run`` with a
    :class:`SandboxError`). ``None`` resolves as :func:`get_sandbox` does."""
    return get_sandbox() if name is None else backend_class(name)()
