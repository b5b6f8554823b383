"""The ``anthropic`` provider: the official SDK's Messages API (non-streaming)."""

from __future__ import annotations

import os
from typing import Any

from pdeagent import hookimpl
from pdeagent.agent.protocol import AgentReply, AgentRequest, ToolCall, ToolSpec
from pdeagent.calls import RetryableError, sdk_errors
from pdeagent.providers import (
    Generation,
    GenerationFailure,
    GenerationRequest,
    Provider,
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


def agent_tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """The tools of an agent step as the Messages API's ``tools``."""
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


def agent_messages(request: AgentRequest) -> list[dict[str, Any]]:
    """The messages of an agent episode as the Messages API's ``messages``.

    A ``tool`` message becomes a user message of ``tool_result`` blocks (``is_error``
    kept); a ``user`` message right after it joins that message as a trailing text
    block, since the API wants user and assistant turns to alternate. An assistant
    message is its text block (when there is text) and its ``tool_use`` blocks.
    """
    out: list[dict[str, Any]] = []
    after_tool = False
    for message in request.messages:
        if message.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if message.text:
                blocks.append({"type": "text", "text": message.text})
            blocks.extend(
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in message.tool_calls
            )
            out.append({"role": "assistant", "content": blocks})
        elif message.role == "tool":
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": r.call_id,
                    "content": r.content,
                    "is_error": r.is_error,
                }
                for r in message.tool_results
            ]
            out.append({"role": "user", "content": results})
        elif after_tool:
            # An empty text block is refused by the API: the tool results stand alone.
            if message.text:
                out[-1]["content"].append({"type": "text", "text": message.text})
        else:
            out.append({"role": "user", "content": message.text})
        after_tool = message.role == "tool"
    return out


def _tool_call(block: Any) -> ToolCall:
    """A ``tool_use`` block of a reply; ``TypeError`` when it lacks an id or a name or
    its input is not an object (a malformed reply)."""
    if not isinstance(block.id, str) or not block.id:
        raise TypeError("tool_use block without an id")
    if not isinstance(block.name, str) or not block.name:
        raise TypeError(f"tool_use block {block.id!r} without a name")
    if not isinstance(block.input, dict):
        raise TypeError(f"tool_use block {block.id!r}: input is not an object")
    return ToolCall(block.id, block.name, dict(block.input))


def _client(settings: ProviderSettings, endpoint: str) -> Any:
    import anthropic

    return anthropic.Anthropic(
        api_key=os.environ.get(KEY_ENV),
        base_url=endpoint,
        timeout=settings.timeout_sec,
        max_retries=0,
    )


def _sampling(system: str | None, temperature: float | None) -> dict[str, Any]:
    """The system prompt and temperature arguments of ``messages.create``."""
    kwargs: dict[str, Any] = {}
    if system:
        kwargs["system"] = system
    if temperature is not None:
        # Sent as a body field: newer SDKs no longer expose it as a parameter.
        kwargs["extra_body"] = {"temperature": temperature}
    return kwargs


class AnthropicProvider(Provider):
    name = "anthropic"
    agent_steps = True
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
        client = _client(settings, self.endpoint(settings))
        kwargs: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            # The whole conversation (feedback mode: the original prompt, each earlier
            # reply verbatim, each feedback turn); the system prompt is a separate field.
            "messages": messages(request),
            **_sampling(request.system, request.temperature),
        }
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

    def agent_step(self, request: AgentRequest) -> AgentReply:
        """One model step of an agent episode (:mod:`pdeagent.agent.protocol`)."""
        import anthropic

        settings = request.settings
        client = _client(settings, self.endpoint(settings))
        kwargs: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": agent_messages(request),
            "tools": agent_tools(request.tools),
            **_sampling(request.system, request.temperature),
        }
        with sdk_errors(anthropic, anthropic.AnthropicError, settings.timeout_sec, classify):
            message = client.messages.create(**kwargs)
        try:
            text = ""
            calls: list[ToolCall] = []
            for block in message.content:
                kind = getattr(block, "type", "")
                if kind == "text":
                    text += block.text
                elif kind == "tool_use":
                    calls.append(_tool_call(block))
            usage = message.usage
            raw = message.model_dump(mode="json")
        except (AttributeError, TypeError) as exc:
            raise RetryableError(f"malformed reply: {exc}", kind="malformed") from exc
        stop = message.stop_reason
        reply = AgentReply(
            text=text,
            tool_calls=calls,
            finish_reason=FINISH.get(stop, stop) if stop else None,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
            raw=raw,
        )
        if stop == REFUSAL:
            # The refused reply rides along (as an AgentReply) so its tokens are billed.
            raise GenerationFailure(
                "the model refused (stop_reason 'refusal')",
                reason="content_filter",
                generation=reply,
            )
        return reply


@hookimpl
def pdeagent_register_providers(register: Any) -> None:
    register(AnthropicProvider())
