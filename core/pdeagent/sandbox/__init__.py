"""Sandboxes that run untrusted programs: backends ``local``, ``bwrap`` and ``docker``
behind one interface (:class:`Sandbox`); :func:`get_sandbox` picks one."""

from pdeagent.sandbox.base import ExecutionResult, Limits, Sandbox, SandboxError, SandboxRequest
from pdeagent.sandbox.launched import python_runtime_expose
from pdeagent.sandbox.local import LocalSandbox, default_sandbox
from pdeagent.sandbox.select import BACKENDS, backend_status, get_sandbox, resolve_backend

__all__ = [
    "BACKENDS",
    "ExecutionResult",
    "Limits",
    "LocalSandbox",
    "Sandbox",
    "SandboxError",
    "SandboxRequest",
    "backend_status",
    "default_sandbox",
    "get_sandbox",
    "python_runtime_expose",
    "resolve_backend",
]
