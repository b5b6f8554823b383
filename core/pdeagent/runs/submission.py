"""From a prompt to a submission: one disciplined provider call, then code extraction,
with everything kept in the attempt's directory.

Outcomes:
- a submission (``source`` set);
- ``F-Gen`` with the extraction's reason (``no_code``, ``truncated``, ``too_long``):
  the model answered, but not with a usable program; a model failure;
- ``F-Gen`` with the provider plugin's reason (``context_length``, ``content_filter``,
  ``invalid_request``): the request or the model is at fault (a
  :class:`~pdeagent.providers.GenerationFailure`); a model failure, counted;
- a provider failure, no answer at all; an infrastructure failure, kept apart from
  model failures: ``provider_transient`` (rate limits, overload, 5xx, timeouts,
  connection errors until the retries ran out; redone by every ``--resume``) or
  ``provider_error`` (bad key, unknown model, plugin crash: the configuration;
  redone by ``--resume --rerun-errors``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import cattrs
from attrs import asdict, define

from pdeagent.calls import CallRecord, ProviderCaller
from pdeagent.extraction import extract_code
from pdeagent.fileio import atomic_write_json, atomic_write_text
from pdeagent.providers import GenerationRequest, Turn, reads_calibration
from pdeagent.runs.layout import CALL_FILE, PROMPT_FILE, RESPONSE_FILE
from pdeagent.stages import Track

PROVIDER_TRANSIENT = "provider_transient"
"""Reason of an attempt whose provider call failed transiently until retries ran out."""


@define
class Submission:
    source: str | None
    """The extracted program, or None."""
    failure: str | None
    """None, an F-Gen reason (``no_code``/``truncated``/``too_long``, or the provider's
    ``context_length``/``content_filter``/``invalid_request``), ``provider_transient`` or
    ``provider_error``."""
    message: str
    call: CallRecord
    infrastructure: bool = False
    """True for provider failures (no reply), False for everything the model did."""


def request_submission(
    caller: ProviderCaller,
    *,
    prompt: str,
    model: str,
    track_name: str,
    language: str | Track,
    source_filename: str,
    case_id: str,
    case_view: dict[str, Any],
    attempt: int = 0,
    max_tokens: int = 16000,
    temperature: float | None = 0.0,
    directory: Path | None = None,
    history: Sequence[Turn] = (),
    dropped_exchanges: int = 0,
    calibration_config: Mapping[str, Any] | None = None,
) -> Submission:
    """Call the provider for one case attempt and extract the program.

    ``prompt`` is the next user turn and ``history`` the conversation before it
    (feedback mode: the original prompt, the model's reply, the grader's feedback, ...;
    empty for a single-turn request); ``dropped_exchanges`` is recorded in the call
    record (exchanges the runner left out of ``history`` to fit the model's context).
    ``calibration_config`` (the case's evaluator-side record) reaches the request only
    when the provider declares ``reads_calibration`` (the offline baseline); every other
    provider's request leaves it None.

    With ``directory``, the prompt (the user turn sent), the raw reply, the call
    record (with the whole conversation) and the extracted source are written there
    atomically (``prompt.md``, ``response.md``, ``call.json``, ``source_filename``).
    """
    if directory is not None:
        atomic_write_text(directory / PROMPT_FILE, prompt)
    request = GenerationRequest(
        prompt=prompt,
        model=model,
        temperature=temperature,
        max_tokens=max_tokens,
        attempt=attempt,
        case_id=case_id,
        track=track_name,
        language=language if isinstance(language, str) else language.language,
        case_view=case_view,
        calibration_config=calibration_config if reads_calibration(caller.provider) else None,
        history=tuple(history),
    )
    outcome = caller.call(request)
    record = outcome.record
    record.dropped_exchanges = dropped_exchanges
    if record.error_kind == "generation_failure" and record.failure_reason is not None:
        reason = record.failure_reason
        result = Submission(None, reason, record.error or reason, record)
    elif outcome.generation is None:
        failure = (
            PROVIDER_TRANSIENT if record.error_kind == "retries_exhausted" else "provider_error"
        )
        result = Submission(None, failure, record.error or "no reply", record, infrastructure=True)
    else:
        gen = outcome.generation
        extraction = extract_code(gen.text, language, finish_reason=gen.finish_reason)
        result = Submission(extraction.code, extraction.reason, extraction.message, record)
        if directory is not None:
            atomic_write_text(directory / RESPONSE_FILE, gen.text)
            if extraction.code is not None:
                atomic_write_text(directory / source_filename, extraction.code)
    if directory is not None:
        atomic_write_json(directory / CALL_FILE, asdict(record))
    return result


def saved_submission(
    directory: Path, language: str | Track, source_filename: str
) -> Submission | None:
    """The submission of an attempt whose reply is already saved (resume: a finished
    call is never made, nor billed, again), or None when there is no usable saved reply
    (no files, a failed or unreadable call record)."""
    call_path, response_path = directory / CALL_FILE, directory / RESPONSE_FILE
    try:
        data = json.loads(call_path.read_text(encoding="utf-8"))
        record = cattrs.structure(data, CallRecord)
        text = response_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError, TypeError, cattrs.BaseValidationError):
        return None
    if record.error is not None:
        return None
    extraction = extract_code(text, language, finish_reason=record.finish_reason)
    if extraction.code is not None:
        atomic_write_text(directory / source_filename, extraction.code)
    return Submission(extraction.code, extraction.reason, extraction.message, record)
