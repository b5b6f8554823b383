"""The ``anthropic`` provider: the official SDK's Messages API (non-streaming)."""

from __future__ import annotations

import os
from typing import Any

from pdeagent import hookimpl
from pdeagent.calls import RetryableError, sdk_errors
from pdeagent.providers import (
    Generation,
    GenerationFailure,
    GenerationRequest,
    ProviderSettings,
    ProviderStatus,
    key_status,
    messages,
    package_status,
)

KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
DEFAULT_ENDPOINT = "https://api.anthropic.com"

FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}
"""Anthropic stop reasons mapped to pdeagent finish reasons (others kept as they are).
A reply cut off by the context window is cut off like one at ``max_tokens``: the
extraction decides (a complete program is graded, a cut one is ``F-Gen truncated``)."""
REFUSAL = "refusal"
"""Stop reason of a reply the safety classifiers stopped: ``F-Gen content_filter``."""
CONTEXT_MARKERS = (
    "prompt is too long",
    "exceed context limit",
    "context window",
    "context length",
    "too many tokens",
)
"""Phrases of the API's 400 ``invalid_request_error`` when the conversation does not fit:
``prompt is too long: N tokens > M maximum`` (the input alone), ``input length and
`max_tokens` exceed context limit: N + K > M`` (the input plus the output limit, the
usual one when a feedback conversation grows)."""


def classify(exc: Any) -> Exception | None:
    """The failure an ``anthropic.APIStatusError`` stands for, when it is the request's
    or the model's fault; None leaves it to the HTTP-status default (transient 429 /
    5xx / 529, configuration 401 / 403 / 404, ``invalid_request`` for other 400s)."""
    import anthropic

    text = f"HTTP {exc.status_code}: {exc}"
    if isinstance(exc, anthropic.ContentTooLargeError):  # 413: the prompt is too large
        return GenerationFailure(text, reason="context_length")
    if isinstance(exc, anthropic.BadRequestError):
        message = str(exc).lower()
        if any(marker in message for marker in CONTEXT_MARKERS):
            return GenerationFailure(text, reason="context_length")
    return None


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
            # The whole conversation (feedback mode: the original prompt, each earlier
            # reply verbatim, each feedback turn); the system prompt is a separate field.
            "messages": messages(request),
        }
        if request.system:
            kwargs["system"] = request.system
        if request.temperature is not None:
            # Sent as a body field: newer SDKs no longer expose it as a parameter.
            kwargs["extra_body"] = {"temperature": request.temperature}
        with sdk_errors(anthropic, anthropic.AnthropicError, settings.timeout_sec, classify):
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
        generation = Generation(
            text=text,
            finish_reason=FINISH.get(stop, stop) if stop else None,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
            raw=raw,
        )
        if stop == REFUSAL:
            raise GenerationFailure(
                "the model refused (stop_reason 'refusal')",
                reason="content_filter",
                generation=generation,
            )
        return generation


@hookimpl
def pdeagent_register_providers(register: Any) -> None:
    register(AnthropicProvider())
