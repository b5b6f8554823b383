"""The provider interface: one prompt in, one generation out.

A provider plugin registers instances of :class:`Provider` subclasses through
``pdeagent_register_providers``. A subclass sets ``name`` and ``description``,
implements ``generate(request) -> Generation`` and declares what else it can do as class
attributes; the core reads these declarations and never probes for methods:

- ``agent_steps``: True when it implements ``agent_step(request) -> AgentReply`` (one
  tool-use step of ``--mode agent``);
- ``external_agent_command``: True when it implements ``external_agent(settings) ->
  ExternalAgent`` (an agent program run in the sandbox, ``--mode agent`` only);
- ``cacheable``: False for local providers whose answer must never be served from
  the response cache (the offline baseline, replay);
- ``concurrency``: the provider's own limit on simultaneous calls (None: none);
- ``free``: True when a call costs nothing (local providers): its cost is 0, not unknown;
- ``reads_calibration``: True only for a provider that answers with the track's own
  calibration baseline (the offline ``baseline``): its requests carry the case's
  recorded ``calibration_config`` (evaluator-only data, :func:`reads_calibration`).
  Never set it on a provider that calls a model: every other request leaves the field
  None, so evaluator data never reaches a prompt.

``status(settings) -> ProviderStatus`` says whether the SDK imports, whether the key is
there and which endpoint will be called (``pdeagent providers list``, and the check that
runs before any work starts); the base class says "ready, nothing known". Registration
refuses an object that is not a :class:`Provider`, or that declares an ability without
implementing its method.

``generate`` raises, by whose fault the failure is (the plugin knows its API and maps
its SDK's errors; the core only knows these neutral categories):

- :class:`pdeagent.calls.RetryableError`: transient (rate limits, overload, 5xx,
  timeouts, connection errors, garbled replies). Retried; when retries run out the
  attempt is an *infrastructure* failure: left out of the pass rate, redone by
  ``--resume``.
- :class:`GenerationFailure`: the request or the model is at fault (context length
  exceeded, content filter or refusal, a request the API rejects as invalid). Not
  retried; the attempt is ``F-Gen`` with :attr:`GenerationFailure.reason` and counts in
  the pass-rate denominator (SPEC §1).
- :class:`TemperatureRejected`: the model refuses the requested temperature (the
  caller retries without one).
- :class:`ProviderError`: the harness's configuration is at fault (bad key, unknown
  model, no replay directory): not retried, an infrastructure failure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from attrs import define, field


@define(frozen=True)
class ProviderSettings:
    """What the user configured for a provider (CLI flags, environment)."""

    base_url: str | None = None
    """Endpoint override (``--base-url``); None: the provider's own default or env var."""
    timeout_sec: float = 600.0
    """Per-request timeout handed to the SDK."""
    options: Mapping[str, str] = field(factory=dict)
    """Provider-specific ``--provider-option KEY=VALUE`` pairs (e.g. replay ``dir``)."""


ROLES = ("user", "assistant")


@define(frozen=True)
class Turn:
    """One message of a conversation: the harness's (``user``) or the model's
    (``assistant``), verbatim."""

    role: str = field()
    content: str

    @role.validator
    def _role(self, _attribute: Any, value: str) -> None:
        if value not in ROLES:
            raise ValueError(f"a turn's role is 'user' or 'assistant', got {value!r}")


def _check_history(_instance: Any, _attribute: Any, turns: tuple[Turn, ...]) -> None:
    for i, turn in enumerate(turns):
        expected = ROLES[i % 2]
        if not isinstance(turn, Turn) or turn.role != expected:
            raise ValueError(
                f"history turn {i} must be a {expected} Turn: the history alternates user, "
                "assistant, ... and ends with the model's reply"
            )
    if len(turns) % 2:
        raise ValueError(
            "the history must end with an assistant turn (prompt is the next user turn)"
        )


@define(frozen=True)
class GenerationRequest:
    prompt: str
    """The next user turn (in a single-turn request, the whole prompt)."""
    model: str
    temperature: float | None = 0.0
    """None: do not send a temperature (the model's default)."""
    max_tokens: int = 16000
    attempt: int = 0
    """Index of the sample/attempt (feedback mode: 0, 1, ...)."""
    case_id: str | None = None
    track: str | None = None
    language: str | None = None
    """The track's language (``python`` / ``cpp``)."""
    system: str | None = None
    settings: ProviderSettings = field(factory=ProviderSettings)
    case_view: Mapping[str, Any] | None = field(default=None, eq=False)
    """The agent-visible case (what the prompt was rendered from); never evaluator data."""
    calibration_config: Mapping[str, Any] | None = field(default=None, eq=False, repr=False)
    """Evaluator-only: the case's recorded calibration configuration, per track (the
    frontier-chosen baseline settings). Set only for a provider that declares
    ``reads_calibration`` (:func:`reads_calibration`); None for every other."""
    history: tuple[Turn, ...] = field(default=(), converter=tuple, validator=_check_history)
    """The conversation before ``prompt``, oldest first: user, assistant, user, ...,
    assistant (feedback mode: the original prompt, the model's reply, the grader's
    feedback, ...). Empty: a single-turn request. A provider sends ``messages(request)``."""


def messages(request: GenerationRequest) -> list[dict[str, str]]:
    """The whole conversation as chat messages (``role``, ``content``), ending with the
    user turn ``request.prompt``; a provider adds its system message its own way."""
    return [
        *({"role": t.role, "content": t.content} for t in request.history),
        {"role": "user", "content": request.prompt},
    ]


@define(frozen=True)
class Generation:
    text: str
    finish_reason: str | None = None
    """``stop``, ``length`` (cut off by the token limit), ..."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    raw: dict[str, Any] = field(factory=dict)
    """The provider's reply as JSON-able data (stored in the call record)."""


@define(frozen=True)
class ProviderStatus:
    """Whether a provider can be called here, and what it would call."""

    ready: bool
    package: str
    """The SDK and its version, or why it cannot be imported."""
    key: str
    """``present (ENV)``, ``missing (ENV)`` or ``not needed``."""
    endpoint: str | None = None
    problem: str | None = None
    """When not ready: one line saying what to do."""


class ProviderError(RuntimeError):
    """A provider failure that retrying cannot fix (bad key, unknown model, bad request)."""


class ProviderUnavailable(ProviderError):
    """The provider cannot be used at all here (SDK missing, key missing, no directory)."""


GENERATION_FAILURE_REASONS = ("context_length", "content_filter", "invalid_request")
"""Reasons of :class:`GenerationFailure` (F-Gen reasons next to the extraction's
``no_code``, ``truncated`` and ``too_long``)."""


class GenerationFailure(ProviderError):
    """The request or the model is at fault: the attempt is ``F-Gen`` with ``reason``.

    ``generation`` is the reply when there was one (a content-filtered or refused
    answer still used, and billed, tokens): a :class:`Generation`, or in agent mode an
    :class:`~pdeagent.agent.protocol.AgentReply`; it is recorded, never graded.
    """

    def __init__(self, message: str, *, reason: str, generation: Any = None) -> None:
        if reason not in GENERATION_FAILURE_REASONS:
            raise ValueError(
                f"unknown generation failure reason {reason!r}; "
                f"expected one of {', '.join(GENERATION_FAILURE_REASONS)}"
            )
        super().__init__(message)
        self.reason = reason
        self.generation = generation


class TemperatureRejected(ProviderError):
    """The model does not accept the requested temperature (the caller retries without)."""


class Provider:
    """Base class of an LLM provider registered through ``pdeagent_register_providers``;
    its class attributes declare its abilities (module doc)."""

    name: str = ""
    description: str = ""
    agent_steps: bool = False
    external_agent_command: bool = False
    cacheable: bool = True
    concurrency: int | None = None
    free: bool = False
    reads_calibration: bool = False

    def generate(self, request: GenerationRequest) -> Generation:
        """Return one completion; raise on errors (the caller records and retries)."""
        raise NotImplementedError(f"provider {self.name!r} does not implement generate()")

    def agent_step(self, request: Any) -> Any:
        """One tool-use step (declare ``agent_steps = True`` when implemented)."""
        raise NotImplementedError(f"provider {self.name!r} does not take agent steps")

    def external_agent(self, settings: ProviderSettings) -> Any:
        """The agent program to run (declare ``external_agent_command = True``)."""
        raise NotImplementedError(f"provider {self.name!r} runs no external agent")

    def status(self, settings: ProviderSettings) -> ProviderStatus:
        """Whether the provider can be called here (the base class knows nothing)."""
        return ProviderStatus(ready=True, package="-", key="not declared")


DECLARED_METHODS = {"agent_steps": "agent_step", "external_agent_command": "external_agent"}
"""Each ability a provider declares, and the method it must then implement."""


def declaration_problems(provider: object) -> list[str]:
    """Why ``provider`` cannot be registered (empty: it can): not a :class:`Provider`,
    no name, ``generate`` not implemented, or an ability declared without its method."""
    if not isinstance(provider, Provider):
        return [
            f"{type(provider).__name__} is not a pdeagent.providers.Provider subclass (the "
            "base class declares what a provider can do)"
        ]
    cls = type(provider)
    problems = []
    if not isinstance(provider.name, str) or not provider.name:
        problems.append("it has no name")
    if cls.generate is Provider.generate:
        problems.append("it does not implement generate()")
    for ability, method in DECLARED_METHODS.items():
        declared = getattr(cls, ability) is True
        implemented = getattr(cls, method) is not getattr(Provider, method)
        if declared and not implemented:
            problems.append(f"it declares {ability} but does not implement {method}()")
        if implemented and not declared:
            problems.append(f"it implements {method}() but does not declare {ability} = True")
    return problems


def reads_calibration(provider: Provider) -> bool:
    """Whether ``provider`` declares ``reads_calibration = True`` (exactly True): only
    then does a request carry the case's evaluator-side calibration configuration."""
    return provider.reads_calibration is True


def provider_status(provider: Provider, settings: ProviderSettings) -> ProviderStatus:
    """``provider.status(settings)``; a status method that raises makes the provider not
    ready (with the error)."""
    try:
        result = provider.status(settings)
    except Exception as exc:
        return ProviderStatus(
            ready=False, package="?", key="?", problem=f"status check failed: {exc}"
        )
    if not isinstance(result, ProviderStatus):
        return ProviderStatus(
            ready=False, package="?", key="?", problem="status() did not return a ProviderStatus"
        )
    return result


def require_ready(provider: Provider, settings: ProviderSettings) -> ProviderStatus:
    """The status, or :class:`ProviderUnavailable` with its one-line problem."""
    result = provider_status(provider, settings)
    if not result.ready:
        raise ProviderUnavailable(f"provider {provider.name!r} is not usable: {result.problem}")
    return result


def key_status(env_var: str, *, required: bool = True) -> tuple[str, str | None]:
    """(``present/missing (ENV)`` or ``not needed``, the key)."""
    value = os.environ.get(env_var, "").strip()
    if value:
        return f"present ({env_var})", value
    if not required:
        return f"not set ({env_var}; not needed)", None
    return f"missing ({env_var})", None


def package_status(module: str) -> tuple[bool, str]:
    """(importable, ``module VERSION`` or the import error)."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except Exception as exc:
        return False, f"{module} not importable ({type(exc).__name__}: {exc})"
    return True, f"{module} {getattr(mod, '__version__', '?')}"
