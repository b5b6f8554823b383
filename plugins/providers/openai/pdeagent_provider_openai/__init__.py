"""The ``openai`` provider: Chat Completions through the official SDK, any compatible server."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

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

KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
DEFAULT_ENDPOINT = "https://api.openai.com/v1"
TOKEN_PARAMS = ("max_tokens", "max_completion_tokens")
NO_KEY = "no-key"
"""Sent to custom endpoints when no key is set (the SDK refuses an empty key)."""


CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
"""Error codes of a prompt that does not fit the model's context."""
CONTENT_FILTER_CODES = frozenset({"content_filter", "content_policy_violation"})
"""Error codes of a prompt rejected by a content filter (Azure OpenAI, moderation)."""
CONTEXT_TYPES = frozenset({"exceed_context_size_error"})
"""Error types of a prompt that does not fit (llama.cpp server, which sends no code)."""
CONTEXT_MARKERS = ("maximum context length", "context length", "context window", "context size")
"""Phrases compatible servers (vLLM, llama.cpp, ...) use when they send no code."""
CONTENT_FILTER = "content_filter"
"""``finish_reason`` of a reply a content filter cut: ``F-Gen content_filter``."""


def classify(exc: Any) -> Exception | None:
    """The failure an ``openai.APIStatusError`` stands for, when it is the request's or
    the model's fault: by the API's error ``code`` or ``type`` (whatever the HTTP status:
    llama.cpp has sent its context error as a 500, and retrying cannot fix it), then by
    the message of a 400 / 422; a 413 is ``context_length`` too. None leaves it to the
    HTTP-status default (transient 429 / 5xx, configuration 401 / 403 / 404,
    ``invalid_request`` for other 400 / 422)."""
    import openai

    text = f"HTTP {exc.status_code}: {exc}"
    code = getattr(exc, "code", None)
    if code in CONTENT_FILTER_CODES:
        return GenerationFailure(text, reason="content_filter")
    kind = getattr(exc, "type", None)
    if code in CONTEXT_CODES or kind in CONTEXT_TYPES or exc.status_code == 413:
        return GenerationFailure(text, reason="context_length")
    if isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError):
        message = str(exc).lower()
        if any(marker in message for marker in CONTEXT_MARKERS):
            return GenerationFailure(text, reason="context_length")
    return None


def _is_openai(endpoint: str) -> bool:
    return (urlparse(endpoint).hostname or "").endswith("api.openai.com")


class OpenAIProvider:
    name = "openai"
    description = (
        "OpenAI Chat Completions and compatible servers (official openai SDK); "
        "--base-url or OPENAI_BASE_URL; key from OPENAI_API_KEY"
    )
    concurrency = 4

    def endpoint(self, settings: ProviderSettings) -> str:
        return settings.base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_ENDPOINT

    def status(self, settings: ProviderSettings) -> ProviderStatus:
        endpoint = self.endpoint(settings)
        importable, package = package_status("openai")
        key, value = key_status(KEY_ENV, required=_is_openai(endpoint))
        problem = None
        if not importable:
            problem = "install the SDK: pip install openai"
        elif value is None and _is_openai(endpoint):
            problem = f"set {KEY_ENV} to an OpenAI API key (or --base-url for another server)"
        param = settings.options.get("token_param")
        if param is not None and param not in TOKEN_PARAMS:
            problem = f"token_param must be one of {', '.join(TOKEN_PARAMS)}, got {param!r}"
        return ProviderStatus(
            ready=problem is None, package=package, key=key, endpoint=endpoint, problem=problem
        )

    def generate(self, request: GenerationRequest) -> Generation:
        import openai

        settings = request.settings
        endpoint = self.endpoint(settings)
        client = openai.OpenAI(
            api_key=os.environ.get(KEY_ENV) or NO_KEY,
            base_url=endpoint,
            timeout=settings.timeout_sec,
            max_retries=0,
        )
        # The system prompt first, then the whole conversation (feedback mode: the
        # original prompt, each earlier reply verbatim, each feedback turn).
        system = [{"role": "system", "content": request.system}] if request.system else []
        param = settings.options.get("token_param") or (
            "max_completion_tokens" if _is_openai(endpoint) else "max_tokens"
        )
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": [*system, *messages(request)],
            param: request.max_tokens,
        }
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        with sdk_errors(openai, openai.OpenAIError, settings.timeout_sec, classify):
            completion = client.chat.completions.create(**kwargs)
        try:
            choice = completion.choices[0]
            text = choice.message.content or ""
            refusal = getattr(choice.message, "refusal", None)
            usage = completion.usage
            raw = completion.model_dump(mode="json")
        except (AttributeError, IndexError, TypeError) as exc:
            raise RetryableError(f"malformed reply: {exc}", kind="malformed") from exc
        generation = Generation(
            text=text,
            finish_reason=choice.finish_reason,
            input_tokens=getattr(usage, "prompt_tokens", None),
            output_tokens=getattr(usage, "completion_tokens", None),
            raw=raw,
        )
        if choice.finish_reason == CONTENT_FILTER:
            raise GenerationFailure(
                "the reply was cut by a content filter (finish_reason 'content_filter')",
                reason="content_filter",
                generation=generation,
            )
        if refusal:
            raise GenerationFailure(
                f"the model refused: {str(refusal)[:300]}",
                reason="content_filter",
                generation=generation,
            )
        return generation


@hookimpl
def pdeagent_register_providers(register: Any) -> None:
    register(OpenAIProvider())
