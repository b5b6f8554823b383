"""Sandboxes that run untrusted programs."""

from pdeagent.sandbox.base import ExecutionResult, Limits, Sandbox, SandboxError, SandboxRequest
from pdeagent.sandbox.local import LocalSandbox, default_sandbox, python_runtime_expose

__all__ = [
    "ExecutionResult",
    "Limits",
    "LocalSandbox",
    "Sandbox",
    "SandboxError",
    "SandboxRequest",
    "default_sandbox",
    "python_runtime_expose",
]
