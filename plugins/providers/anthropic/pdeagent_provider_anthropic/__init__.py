"""The ``anthropic`` provider: the official SDK's Messages API (non-streaming)."""

from __future__ import annotations

import os
from typing import Any

from pdeagent import hookimpl
from pdeagent.calls import RetryableError, sdk_errors
from pdeagent.providers import (
    Generation,
    GenerationRequest,
    ProviderSettings,
    ProviderStatus,
    key_status,
    package_status,
)

KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
DEFAULT_ENDPOINT = "https://api.anthropic.com"

FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
"""Anthropic stop reasons mapped to pdeagent finish reasons (others kept as they are)."""


class AnthropicProvider:
    name = "anthropic"
    description = "Anthropic Messages API (official anthropic SDK); key from ANTHROPIC_API_KEY"
    concurrency = 4

    def endpoint(self, settings: ProviderSettings) -> str:
        return settings.base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_ENDPOINT

    def status(self, settings: ProviderSettings) -> ProviderStatus:
        importable, package = package_status("anthropic")
        key, value = key_status(KEY_ENV)
        problem = None
        if not importable:
            problem = "install the SDK: pip install anthropic"
        elif value is None:
            problem = f"set {KEY_ENV} to an Anthropic API key"
        return ProviderStatus(
            ready=problem is None,
            package=package,
            key=key,
            endpoint=self.endpoint(settings),
            problem=problem,
        )

    def generate(self, request: GenerationRequest) -> Generation:
        import anthropic

        settings = request.settings
        client = anthropic.Anthropic(
            api_key=os.environ.get(KEY_ENV),
            base_url=self.endpoint(settings),
            timeout=settings.timeout_sec,
            max_retries=0,
        )
        kwargs: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": "user", "content": request.prompt}],
        }
        if request.system:
            kwargs["system"] = request.system
        if request.temperature is not None:
            # Sent as a body field: newer SDKs no longer expose it as a parameter.
            kwargs["extra_body"] = {"temperature": request.temperature}
        with sdk_errors(anthropic, anthropic.AnthropicError, settings.timeout_sec):
            message = client.messages.create(**kwargs)
        try:
            text = "".join(
                block.text for block in message.content if getattr(block, "type", "") == "text"
            )
            usage = message.usage
            raw = message.model_dump(mode="json")
        except (AttributeError, TypeError) as exc:
            raise RetryableError(f"malformed reply: {exc}", kind="malformed") from exc
        stop = message.stop_reason
        return Generation(
            text=text,
            finish_reason=FINISH.get(stop, stop) if stop else None,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
            raw=raw,
        )


@hookimpl
def pdeagent_register_providers(register: Any) -> None:
    register(AnthropicProvider())
