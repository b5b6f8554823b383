"""Call discipline for LLM providers (issue #5): retries, concurrency, cache, records, cost.

Providers translate their SDK's failures into :class:`RetryableError` (rate limits,
5xx, timeouts; with the server's ``retry-after`` when it sent one),
:class:`~pdeagent.providers.GenerationFailure` (the request or the model is at fault:
F-Gen with a reason) or :class:`~pdeagent.providers.ProviderError` (configuration).
:func:`call_with_retries` retries with exponential backoff and full jitter,
never sooner than ``retry-after``, at most ``max_retries`` times. :class:`ResponseCache`
keeps successful, non-empty generations on disk keyed by everything that determines
them; errors and empty replies are never cached. :class:`CallRecord` is what a run
stores for every call; :class:`PriceTable` turns token counts into cost.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import asdict, define, field

from pdeagent.fileio import atomic_write_json
from pdeagent.providers import Generation, GenerationRequest, messages

if TYPE_CHECKING:
    from pdeagent.agent.protocol import AgentReply, AgentRequest


class RetryableError(RuntimeError):
    """A transient provider failure worth retrying (rate limit, 5xx, timeout)."""

    def __init__(self, message: str, *, retry_after: float | None = None, kind: str = "") -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.kind = kind


class RetriesExhausted(RuntimeError):
    def __init__(self, message: str, *, attempts: int, last: RetryableError) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last = last


@define(frozen=True)
class CallPolicy:
    """How the core retries and bounds provider calls (the request timeout is part of
    :class:`~pdeagent.providers.ProviderSettings`, handed to the SDK)."""

    max_retries: int = 6
    backoff_base_sec: float = 2.0
    backoff_cap_sec: float = 120.0
    retry_after_cap_sec: float = 600.0
    """A server asking to wait longer than this ends the call (no silent hour-long sleep)."""
    concurrency: int = 4
    """Simultaneous calls per provider."""


def backoff_delay(attempt: int, policy: CallPolicy, rng: random.Random) -> float:
    """Full-jitter exponential backoff before retry ``attempt`` (1-based)."""
    ceiling = min(policy.backoff_cap_sec, policy.backoff_base_sec * 2 ** (attempt - 1))
    return rng.uniform(0.0, ceiling)


def call_with_retries[T](
    fn: Callable[[], T],
    policy: CallPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    on_retry: Callable[[int, RetryableError, float], None] | None = None,
) -> tuple[T, int]:
    """``(fn(), retries used)``; retries :class:`RetryableError` only."""
    rng = rng or random.Random()
    retries = 0
    while True:
        try:
            return fn(), retries
        except RetryableError as exc:
            if retries >= policy.max_retries:
                raise RetriesExhausted(
                    f"gave up after {retries + 1} attempts: {exc}", attempts=retries + 1, last=exc
                ) from exc
            retries += 1
            delay = backoff_delay(retries, policy, rng)
            if exc.retry_after is not None:
                if exc.retry_after > policy.retry_after_cap_sec:
                    raise RetriesExhausted(
                        f"server asks to retry after {exc.retry_after:.0f} s "
                        f"(> {policy.retry_after_cap_sec:.0f} s): {exc}",
                        attempts=retries,
                        last=exc,
                    ) from exc
                delay = max(delay, exc.retry_after)
            if on_retry is not None:
                on_retry(retries, exc, delay)
            sleep(delay)


class ConcurrencyLimits:
    """One bounded semaphore per provider name."""

    def __init__(self, default: int) -> None:
        self.default = default
        self._lock = threading.Lock()
        self._sems: dict[str, threading.BoundedSemaphore] = {}

    def of(self, provider: str, limit: int | None = None) -> threading.BoundedSemaphore:
        with self._lock:
            if provider not in self._sems:
                self._sems[provider] = threading.BoundedSemaphore(max(1, limit or self.default))
            return self._sems[provider]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def decoding_config(request: GenerationRequest) -> dict[str, Any]:
    return {
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "system": request.system,
        "options": dict(sorted(request.settings.options.items())),
    }


def cache_key(provider: str, base_url: str | None, request: GenerationRequest) -> str:
    """Everything that determines a generation: provider, model, endpoint, the whole
    conversation (the earlier turns and the prompt), the decoding configuration and the
    sample / attempt index. A single-turn request keys as it did before conversations
    (no ``history`` entry), so existing cache entries stay valid."""
    payload: dict[str, Any] = {
        "provider": provider,
        "model": request.model,
        "base_url": base_url,
        "prompt": request.prompt,
        "decoding": decoding_config(request),
        "attempt": request.attempt,
    }
    if request.history:
        payload["history"] = [[turn.role, turn.content] for turn in request.history]
    return _sha256(json.dumps(payload, sort_keys=True))


class ResponseCache:
    """Successful generations on disk, one JSON file per key (atomic writes)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Generation | None:
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return Generation(
                text=str(data["text"]),
                finish_reason=data.get("finish_reason"),
                input_tokens=data.get("input_tokens"),
                output_tokens=data.get("output_tokens"),
                raw=dict(data.get("raw") or {}),
            )
        except (ValueError, KeyError, TypeError):
            return None  # a corrupt entry is a miss (and is overwritten by the next put)

    def put(self, key: str, generation: Generation) -> bool:
        """Store ``generation`` unless it is empty; returns whether it was stored."""
        if not generation.text.strip():
            return False
        atomic_write_json(self._path(key), asdict(generation), indent=None)
        return True


@define(frozen=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float


class PriceTable:
    """USD per million tokens per model id; unknown models cost None (not zero)."""

    def __init__(self, prices: Mapping[str, Price]) -> None:
        self.prices = dict(prices)

    @classmethod
    def from_json(cls, path: Path) -> PriceTable:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                {
                    str(model): Price(float(p["input_per_mtok"]), float(p["output_per_mtok"]))
                    for model, p in data.items()
                }
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"price table {path}: {exc}") from None

    def cost(self, model: str, input_tokens: int | None, output_tokens: int | None) -> float | None:
        price = self.prices.get(model)
        if price is None or input_tokens is None or output_tokens is None:
            return None
        return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1e6


@define
class CallRecord:
    """What a run stores for every provider call."""

    provider: str
    model: str
    base_url: str | None
    timestamp: str
    decoding: dict[str, Any]
    prompt_sha256: str
    response_sha256: str | None
    raw: dict[str, Any] = field(factory=dict)
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_sec: float | None = None
    retries: int = 0
    cost_usd: float | None = None
    cached: bool = False
    finish_reason: str | None = None
    error: str | None = None
    error_kind: str | None = None
    """``retries_exhausted``, ``provider_error``, ``provider_crash``, ``bad_generation``
    (infrastructure failures) or ``generation_failure`` (the request's or the model's
    fault, see ``failure_reason``)."""
    failure_reason: str | None = None
    """With ``generation_failure``: the F-Gen reason (``context_length``,
    ``content_filter``, ``invalid_request``)."""
    temperature_requested: float | None = None
    temperature_note: str | None = None
    """Set when the model refused the requested temperature and the call was sent
    without one (``decoding.temperature`` is then None: the model's default)."""
    case_id: str | None = None
    attempt: int = 0
    messages: list[dict[str, str]] = field(factory=list)
    """The whole conversation sent, oldest first (``role``, ``content``; the last is the
    user turn ``prompt_sha256`` is of); empty in records written before conversations."""
    dropped_exchanges: int = 0
    """Feedback mode: earlier exchanges (a feedback turn and its reply) left out of the
    conversation because it exceeded the model's context (see the run's runner)."""


def record_call(
    provider: str,
    base_url: str | None,
    request: GenerationRequest,
    generation: Generation | None,
    *,
    latency_sec: float | None,
    retries: int,
    prices: PriceTable | None,
    cached: bool,
    error: str | None = None,
    error_kind: str | None = None,
    failure_reason: str | None = None,
    requested: GenerationRequest | None = None,
    temperature_note: str | None = None,
) -> CallRecord:
    """The record of one call; ``request`` is what was sent, ``requested`` what the
    run asked for (they differ when the model refused the temperature)."""
    g = generation
    cost = None
    if g is not None and prices is not None and not cached:
        cost = prices.cost(request.model, g.input_tokens, g.output_tokens)
    return CallRecord(
        provider=provider,
        model=request.model,
        base_url=base_url,
        timestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        decoding=decoding_config(request),
        prompt_sha256=_sha256(request.prompt),
        response_sha256=_sha256(g.text) if g is not None else None,
        raw=dict(g.raw) if g is not None else {},
        input_tokens=g.input_tokens if g is not None else None,
        output_tokens=g.output_tokens if g is not None else None,
        latency_sec=latency_sec,
        retries=retries,
        cost_usd=0.0 if cached else cost,
        cached=cached,
        finish_reason=g.finish_reason if g is not None else None,
        error=error,
        error_kind=error_kind,
        failure_reason=failure_reason,
        temperature_requested=(requested or request).temperature,
        temperature_note=temperature_note,
        case_id=request.case_id,
        attempt=request.attempt,
        messages=messages(request),
    )


# ----------------------------------------------------------------------------------------
# HTTP failures shared by the SDK providers


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, then ``retry-after`` as
    seconds or as an HTTP date; None when absent or unparseable."""
    if not headers:
        return None
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    raw_ms = lower.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lower.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
INVALID_REQUEST_STATUS = frozenset({400, 413, 422})
"""Replies rejecting the request itself: the request's (so the model's) fault, F-Gen."""


def status_failure(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> Exception:
    """The exception for an HTTP error reply, by HTTP semantics alone:

    - 408, 409, 425, 429, 5xx: :class:`RetryableError` (transient);
    - 400 / 422 about the temperature: :class:`TemperatureRejected`;
    - 400, 413, 422: :class:`GenerationFailure` ``invalid_request`` (a provider plugin
      refines this with its API's error codes, e.g. ``context_length``);
    - anything else (401, 403, 404, ...): :class:`ProviderError` (configuration).
    """
    from pdeagent.providers import GenerationFailure, ProviderError, TemperatureRejected

    text = f"HTTP {status}: {message}"
    if status in RETRYABLE_STATUS or status >= 500:
        kind = "rate_limit" if status == 429 else f"http_{status}"
        return RetryableError(text, retry_after=retry_after_seconds(headers), kind=kind)
    if status in (400, 422) and "temperature" in message.lower():
        return TemperatureRejected(text)
    if status in INVALID_REQUEST_STATUS:
        return GenerationFailure(text, reason="invalid_request")
    if status in (401, 403):
        return ProviderError(f"{text} (check the API key)")
    return ProviderError(text)


@contextlib.contextmanager
def sdk_errors(
    sdk: Any,
    base: type[BaseException],
    timeout_sec: float,
    classify: Callable[[Any], Exception | None] | None = None,
) -> Iterator[None]:
    """Translate the failures of an HTTP API SDK into the core's exceptions.

    For SDKs with the exception shape the ``anthropic`` and ``openai`` SDKs share:
    ``sdk.APITimeoutError``, ``sdk.APIConnectionError``,
    ``sdk.APIResponseValidationError`` and ``sdk.APIStatusError`` (with
    ``status_code`` and ``response.headers``); ``base`` is the SDK's root exception.
    A body that is not JSON surfaces as ``ValueError`` and counts as malformed.
    ``classify(exc)`` (the provider plugin's knowledge of its API) maps an
    ``APIStatusError`` to an exception of its own (e.g. a
    :class:`~pdeagent.providers.GenerationFailure` ``context_length``), or returns None
    for the HTTP-status default of :func:`status_failure`.
    """
    from pdeagent.providers import ProviderError

    try:
        yield
    except sdk.APITimeoutError as exc:
        raise RetryableError(f"timed out after {timeout_sec} s", kind="timeout") from exc
    except sdk.APIConnectionError as exc:
        raise RetryableError(f"connection failed: {exc}", kind="connection") from exc
    except sdk.APIResponseValidationError as exc:
        raise RetryableError(f"malformed reply: {exc}", kind="malformed") from exc
    except sdk.APIStatusError as exc:
        refined = classify(exc) if classify is not None else None
        if refined is not None:
            raise refined from exc
        raise status_failure(exc.status_code, str(exc), exc.response.headers) from exc
    except ValueError as exc:
        raise RetryableError(f"malformed reply: {exc}", kind="malformed") from exc
    except base as exc:
        raise ProviderError(f"{type(exc).__name__}: {exc}") from exc


# ----------------------------------------------------------------------------------------
# One disciplined call


@define
class CallOutcome:
    generation: Generation | None
    """None when the call failed (``record.error`` says why)."""
    record: CallRecord


def _is_generation(value: object) -> bool:
    return (
        isinstance(value, Generation)
        and isinstance(value.text, str)
        and (value.input_tokens is None or isinstance(value.input_tokens, int))
        and (value.output_tokens is None or isinstance(value.output_tokens, int))
    )


@define
class _Sent:
    """What :meth:`ProviderCaller._send` got: the value, or why not."""

    sent: Any
    """The request as finally sent (without a temperature after a refusal)."""
    value: Any = None
    refused: Any = None
    """A reply that came back but is a generation failure (recorded, never graded)."""
    retries: int = 0
    note: str | None = None
    error: str | None = None
    kind: str | None = None
    reason: str | None = None


@define
class StepOutcome:
    """One agent step's result: the reply, or the failure (kinds as in
    :class:`CallRecord`), with its latency, retries, tokens and cost."""

    reply: AgentReply | None
    error: str | None = None
    error_kind: str | None = None
    failure_reason: str | None = None
    latency_sec: float = 0.0
    retries: int = 0
    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    temperature_note: str | None = None


class ProviderCaller:
    """Calls one provider with the full discipline: a readiness check before any work,
    the response cache, the per-provider concurrency limit, retries with backoff, the
    temperature fallback, and a :class:`CallRecord` for every call (failures included).

    A failed call never raises: it returns an outcome without a generation, so one bad
    call cannot take a run down.
    """

    def __init__(
        self,
        provider: Any,
        settings: Any,
        *,
        policy: CallPolicy | None = None,
        cache: ResponseCache | None = None,
        prices: PriceTable | None = None,
        limits: ConcurrencyLimits | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        from pdeagent.providers import require_ready

        self.provider = provider
        self.settings = settings
        self.status = require_ready(provider, settings)
        self.policy = policy or CallPolicy()
        self.cache = cache if provider.cacheable else None
        self.prices = prices
        self.limits = limits or ConcurrencyLimits(self.policy.concurrency)
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._rng_lock = threading.Lock()

    @property
    def name(self) -> str:
        return str(self.provider.name)

    @property
    def endpoint(self) -> str | None:
        return self.status.endpoint

    def _send(
        self, method: Callable[[Any], Any], request: Any, valid: Callable[[object], bool],
        what: str,
    ) -> _Sent:  # fmt: skip
        """``method(request)`` under the concurrency limit, with retries and the
        temperature fallback; every failure is caught and classified (a bug in a provider
        plugin must not end the run)."""
        from attrs import evolve

        from pdeagent.providers import GenerationFailure, ProviderError, TemperatureRejected

        out = _Sent(sent=request)
        sem = self.limits.of(self.name, self.provider.concurrency)
        with sem:
            while True:
                try:
                    with self._rng_lock:
                        seed = self._rng.random()
                    value, used = call_with_retries(
                        functools.partial(method, out.sent),
                        self.policy,
                        sleep=self._sleep,
                        rng=random.Random(seed),
                    )
                    out.retries += used
                except TemperatureRejected as exc:
                    if out.sent.temperature is None:
                        out.error, out.kind = str(exc), "provider_error"
                        return out
                    out.note = f"temperature {out.sent.temperature} refused by the model: {exc}"
                    out.sent = evolve(out.sent, temperature=None)
                    continue
                except GenerationFailure as exc:
                    out.error, out.kind, out.reason = str(exc), "generation_failure", exc.reason
                    if valid(exc.generation):
                        out.refused = exc.generation
                    return out
                except RetriesExhausted as exc:
                    out.retries += exc.attempts - 1
                    out.error, out.kind = str(exc), "retries_exhausted"
                    return out
                except ProviderError as exc:
                    out.error, out.kind = str(exc), "provider_error"
                    return out
                except Exception as exc:  # a bug in a provider plugin must not end the run
                    out.error, out.kind = f"{type(exc).__name__}: {exc}", "provider_crash"
                    return out
                if not valid(value):
                    out.error = f"provider returned {type(value).__name__}, not a {what}"
                    out.kind = "bad_generation"
                    return out
                out.value = value
                return out

    def step(self, request: AgentRequest) -> StepOutcome:
        """One model step of an agent episode (``provider.agent_step``), with the same
        discipline as :meth:`call` (never cached: an episode's steps depend on the tool
        results of this run). A provider without ``agent_step`` is a configuration
        error, reported as ``provider_error``."""
        from attrs import evolve

        from pdeagent.agent.protocol import AgentReply

        request = evolve(request, settings=self.settings)
        if not self.provider.agent_steps:
            return StepOutcome(
                None,
                error=f"provider {self.name!r} does not support tool use (no agent_step)",
                error_kind="provider_error",
            )
        start = time.monotonic()
        result = self._send(
            self.provider.agent_step, request, lambda v: isinstance(v, AgentReply), "AgentReply"
        )
        reply = result.value if result.value is not None else result.refused
        cost = None
        if reply is not None and self.prices is not None:
            cost = self.prices.cost(request.model, reply.input_tokens, reply.output_tokens)
        if reply is not None and self.provider.free:
            cost = 0.0
        return StepOutcome(
            result.value,
            error=result.error,
            error_kind=result.kind,
            failure_reason=result.reason,
            latency_sec=time.monotonic() - start,
            retries=result.retries,
            cost_usd=cost,
            input_tokens=reply.input_tokens if reply is not None else None,
            output_tokens=reply.output_tokens if reply is not None else None,
            temperature_note=result.note,
        )

    def call(self, request: GenerationRequest) -> CallOutcome:
        from attrs import evolve

        request = evolve(request, settings=self.settings)
        key = cache_key(self.name, self.endpoint, request)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                rec = record_call(
                    self.name,
                    self.endpoint,
                    request,
                    hit,
                    latency_sec=0.0,
                    retries=0,
                    prices=self.prices,
                    cached=True,
                )
                return CallOutcome(hit, rec)

        start = time.monotonic()
        result = self._send(self.provider.generate, request, _is_generation, "Generation")
        latency = time.monotonic() - start
        sent, note, retries = result.sent, result.note, result.retries
        error, kind, reason = result.error, result.kind, result.reason
        generation, refused = result.value, result.refused
        if generation is not None and self.cache is not None:
            self.cache.put(key, generation)
        rec = record_call(
            self.name,
            self.endpoint,
            sent,
            generation if generation is not None else refused,
            latency_sec=latency,
            retries=retries,
            prices=self.prices,
            cached=False,
            error=error,
            error_kind=kind,
            failure_reason=reason,
            requested=request,
            temperature_note=note,
        )
        if (generation or refused) is not None and self.provider.free:
            rec.cost_usd = 0.0  # an offline provider: nothing was billed
        return CallOutcome(generation, rec)
