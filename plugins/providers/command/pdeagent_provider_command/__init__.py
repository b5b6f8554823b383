"""The ``command`` provider: an external agent (an agent CLI, a script) instead of a model.

In ``--mode agent`` the runner asks :meth:`CommandProvider.external_agent` what to run
and runs it once, with ``/bin/sh -c CMD``, in the attempt's sandboxed work dir, which
holds ``prompt.md`` (the task), ``case_spec.json`` and the track's helper files; the
file the command leaves at the track's source file name (``solver.py``) is graded like
a single-shot submission (:mod:`pdeagent.agent.external`). It calls no model itself:
every other mode is refused.

Options (``--provider-option KEY=VALUE``):

- ``cmd`` (required): the shell command line, run in the work dir;
- ``network``: ``none`` (default: no network, like every graded program) or ``allow``
  (the command's processes get the host's network, for an agent that calls an LLM API).
"""

from __future__ import annotations

from typing import Any

from pdeagent import hookimpl
from pdeagent.agent.external import ExternalAgent
from pdeagent.providers import (
    Generation,
    GenerationRequest,
    Provider,
    ProviderError,
    ProviderSettings,
    ProviderStatus,
)

NETWORK_CHOICES = {"none": False, "allow": True}
USAGE = (
    "give the agent's command: --provider-option cmd='SHELL COMMAND' (run in the work dir "
    "holding prompt.md and case_spec.json; it must leave the program there), and "
    "--provider-option network=allow if it must reach an LLM API"
)


def _problem(settings: ProviderSettings) -> str | None:
    """Why the options cannot run an agent, or None."""
    cmd = settings.options.get("cmd")
    if cmd is None or not cmd.strip():
        return USAGE
    unknown = sorted(set(settings.options) - {"cmd", "network"})
    if unknown:
        return f"unknown option(s) {', '.join(unknown)} (options: cmd, network)"
    if "\x00" in cmd:
        return "cmd contains a NUL character"
    network = settings.options.get("network", "none")
    if network not in NETWORK_CHOICES:
        return f"network must be 'allow' or 'none', got {network!r}"
    return None


class CommandProvider(Provider):
    name = "command"
    external_agent_command = True
    description = (
        "external agent: runs --provider-option cmd=... in the sandboxed work dir "
        "(--mode agent only)"
    )
    cacheable = False
    free = True

    def status(self, settings: ProviderSettings) -> ProviderStatus:
        problem = _problem(settings)
        network = settings.options.get("network", "none")
        return ProviderStatus(
            ready=problem is None,
            package="(none needed)",
            key="not needed",
            endpoint=f"sandboxed command (network: {network})",
            problem=problem,
        )

    def external_agent(self, settings: ProviderSettings) -> ExternalAgent:
        problem = _problem(settings)
        if problem is not None:
            raise ProviderError(f"the command provider cannot run: {problem}")
        return ExternalAgent(
            command=settings.options["cmd"],
            network=NETWORK_CHOICES[settings.options.get("network", "none")],
        )

    def generate(self, request: GenerationRequest) -> Generation:
        raise ProviderError("the command provider runs an external agent: use --mode agent")


@hookimpl
def pdeagent_register_providers(register: Any) -> None:
    register(CommandProvider())
