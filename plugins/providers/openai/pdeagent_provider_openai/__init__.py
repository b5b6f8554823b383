"""The ``openai`` provider: Chat Completions through the official SDK, any compatible server."""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import urlparse

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
TOOL_ERROR_PREFIX = "ERROR: "
"""Put before the content of a failed tool result (Chat Completions has no error flag)."""
UNPARSED = "_unparsed"
"""The arguments of a tool call whose ``arguments`` string is not a JSON object:
``{"_unparsed": <the string>}`` (the agent loop reports it back to the model)."""


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


def agent_tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """The tools of an agent step as Chat Completions ``function`` tools."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def agent_messages(request: AgentRequest) -> list[dict[str, Any]]:
    """The messages of an agent episode as Chat Completions ``messages``: a ``system``
    message first when there is a system prompt; an assistant message's tool calls with
    their arguments as a JSON string (content None when it has no text); a ``tool``
    message of one for each tool result, ``ERROR: `` before the content of a failed one."""
    out: list[dict[str, Any]] = (
        [{"role": "system", "content": request.system}] if request.system else []
    )
    for message in request.messages:
        if message.role == "user":
            out.append({"role": "user", "content": message.text})
        elif message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in message.tool_calls
                ]
            out.append(entry)
        else:
            out.extend(
                {
                    "role": "tool",
                    "tool_call_id": r.call_id,
                    "content": f"{TOOL_ERROR_PREFIX}{r.content}" if r.is_error else r.content,
                }
                for r in message.tool_results
            )
    return out


def tool_arguments(arguments: str) -> dict[str, Any]:
    """A tool call's ``arguments`` (a JSON string) as a dict: ``{"_unparsed": text}``
    when it is not JSON or not a JSON object. Not a string: a malformed reply
    (``TypeError``)."""
    if not isinstance(arguments, str):
        raise TypeError(f"tool call arguments are {type(arguments).__name__}, not a string")
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return {UNPARSED: arguments}
    return parsed if isinstance(parsed, dict) else {UNPARSED: arguments}


def _tool_call(call: Any) -> ToolCall:
    """One ``tool_calls`` entry of a reply; ``TypeError`` when it is not a function call
    with an id and a name (a malformed reply: only function tools are offered)."""
    function = getattr(call, "function", None)
    if getattr(call, "type", None) != "function" or function is None:
        raise TypeError(f"tool call of type {getattr(call, 'type', None)!r}, not a function")
    if not isinstance(call.id, str) or not call.id:
        raise TypeError("tool call without an id")
    if not isinstance(function.name, str) or not function.name:
        raise TypeError(f"tool call {call.id!r} without a function name")
    return ToolCall(call.id, function.name, tool_arguments(function.arguments))


class OpenAIProvider(Provider):
    name = "openai"
    agent_steps = True
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

    def _client(self, settings: ProviderSettings) -> Any:
        import openai

        return openai.OpenAI(
            api_key=os.environ.get(KEY_ENV) or NO_KEY,
            base_url=self.endpoint(settings),
            timeout=settings.timeout_sec,
            max_retries=0,
        )

    def _limits(
        self, settings: ProviderSettings, max_tokens: int, temperature: float | None
    ) -> dict[str, Any]:
        """The token limit (under the field name the endpoint wants) and temperature."""
        param = settings.options.get("token_param") or (
            "max_completion_tokens" if _is_openai(self.endpoint(settings)) else "max_tokens"
        )
        kwargs: dict[str, Any] = {param: max_tokens}
        if temperature is not None:
            kwargs["temperature"] = temperature
        return kwargs

    def generate(self, request: GenerationRequest) -> Generation:
        import openai

        settings = request.settings
        client = self._client(settings)
        # The system prompt first, then the whole conversation (feedback mode: the
        # original prompt, each earlier reply verbatim, each feedback turn).
        system = [{"role": "system", "content": request.system}] if request.system else []
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": [*system, *messages(request)],
            **self._limits(settings, request.max_tokens, request.temperature),
        }
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

    def agent_step(self, request: AgentRequest) -> AgentReply:
        """One model step of an agent episode (:mod:`pdeagent.agent.protocol`)."""
        import openai

        settings = request.settings
        client = self._client(settings)
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": agent_messages(request),
            "tools": agent_tools(request.tools),
            **self._limits(settings, request.max_tokens, request.temperature),
        }
        with sdk_errors(openai, openai.OpenAIError, settings.timeout_sec, classify):
            completion = client.chat.completions.create(**kwargs)
        try:
            choice = completion.choices[0]
            text = choice.message.content or ""
            calls = [_tool_call(call) for call in choice.message.tool_calls or ()]
            refusal = getattr(choice.message, "refusal", None)
            usage = completion.usage
            raw = completion.model_dump(mode="json")
        except (AttributeError, IndexError, TypeError) as exc:
            raise RetryableError(f"malformed reply: {exc}", kind="malformed") from exc
        reply = AgentReply(
            text=text,
            tool_calls=calls,
            finish_reason=choice.finish_reason,
            input_tokens=getattr(usage, "prompt_tokens", None),
            output_tokens=getattr(usage, "completion_tokens", None),
            raw=raw,
        )
        if choice.finish_reason == CONTENT_FILTER or refusal:
            why = (
                f"the model refused: {str(refusal)[:300]}"
                if refusal
                else "the reply was cut by a content filter (finish_reason 'content_filter')"
            )
            # The refused reply rides along (as an AgentReply) so its tokens are billed.
            raise GenerationFailure(why, reason="content_filter", generation=reply)
        return reply


@hookimpl
def pdeagent_register_providers(register: Any) -> None:
    register(OpenAIProvider())
