"""A sample third-party provider: answers with a program that knows the prompt's length."""

from __future__ import annotations

from typing import Any

import pluggy

from pdeagent.providers import (
    Generation,
    GenerationRequest,
    Provider,
    ProviderSettings,
    ProviderStatus,
)

hookimpl = pluggy.HookimplMarker("pdeagent")


class CountingProvider(Provider):
    name = "counting"
    description = "sample third-party provider (replies with the prompt's length)"

    def status(self, settings: ProviderSettings) -> ProviderStatus:
        return ProviderStatus(ready=True, package="pdeagent-sample-provider", key="not needed")

    def generate(self, request: GenerationRequest) -> Generation:
        code = f"PROMPT_CHARS = {len(request.prompt)}\nMODEL = {request.model!r}\n"
        return Generation(text=f"```python\n{code}```\n", finish_reason="stop")


@hookimpl
def pdeagent_register_providers(register: Any) -> None:
    register(CountingProvider())
