"""The offline ``replay`` provider: answers from a directory of saved responses.

Replies are keyed by ``(track, model, case id, attempt)``: the request for attempt k
gets ``<track>/<model>/<case>/attempt-<k>/response.md``. A feedback attempt is found by
its attempt index alone; its history (the original prompt, the earlier replies, the
feedback turns) is not part of the key, and the reply is the same whatever it holds.
The replaying run rebuilds the history itself: the earlier replies are the replayed
ones, the feedback turns come from its own grading. Where that grading differs from the
original run's, the conversation diverges: an earlier attempt that passes now ends the
case sooner, and one that fails at another stage is followed by the saved reply to the
original feedback. ``raw["history_turns"]`` records how many turns the request carried.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pdeagent import hookimpl
from pdeagent.providers import (
    GENERATION_FAILURE_REASONS,
    Generation,
    GenerationFailure,
    GenerationRequest,
    Provider,
    ProviderError,
    ProviderSettings,
    ProviderStatus,
)
from pdeagent.runs.layout import CALL_FILE, RESPONSE_FILE, attempt_dir

DIR_ENV = "PDEAGENT_REPLAY_DIR"
MAX_RESPONSE_BYTES = 8_000_000
MAX_CALL_BYTES = 4_000_000
FINISH_REASONS = frozenset(
    {"stop", "length", "end_turn", "max_tokens", "content_filter", "tool_calls"}
)


def _directory(settings: ProviderSettings) -> Path | None:
    raw = settings.options.get("dir") or os.environ.get(DIR_ENV)
    return Path(raw) if raw else None


def _read_inside(root: Path, path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file inside ``root`` (after resolving
    symlinks) and at most ``limit`` bytes; None if it does not exist."""
    if not path.exists() and not path.is_symlink():
        return None
    real = path.resolve()
    if not real.is_relative_to(root.resolve()):
        raise ProviderError(f"{path} points outside the replay directory ({real})")
    if not real.is_file():
        raise ProviderError(f"{path} is not a regular file")
    size = real.stat().st_size
    if size > limit:
        raise ProviderError(f"{path} is {size} bytes (limit {limit})")
    with real.open("rb") as fh:
        return fh.read(limit + 1)[:limit]


class ReplayProvider(Provider):
    name = "replay"
    description = "offline: answers from saved responses (--provider-option dir=RUN_DIR)"
    cacheable = False
    free = True
    concurrency = 16

    def status(self, settings: ProviderSettings) -> ProviderStatus:
        root = _directory(settings)
        problem = None
        if root is None:
            problem = f"give the saved run: --provider-option dir=PATH (or {DIR_ENV})"
        elif not root.is_dir():
            problem = f"replay directory {root} does not exist"
        return ProviderStatus(
            ready=problem is None,
            package="(none needed)",
            key="not needed",
            endpoint=str(root) if root else None,
            problem=problem,
        )

    def generate(self, request: GenerationRequest) -> Generation:
        root = _directory(request.settings)
        if root is None or request.track is None or request.case_id is None:
            raise ProviderError("replay needs a directory, the request's track and case id")
        folder = attempt_dir(root, request.track, request.model, request.case_id, request.attempt)
        saved_call: dict[str, Any] = {}
        call_bytes = _read_inside(root, folder / CALL_FILE, MAX_CALL_BYTES)
        if call_bytes is not None:
            try:
                loaded = json.loads(call_bytes.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise ProviderError(f"{folder / CALL_FILE} is not valid JSON: {exc}") from None
            if not isinstance(loaded, dict):
                raise ProviderError(f"{folder / CALL_FILE} is not a JSON object")
            saved_call = loaded
        response = _read_inside(root, folder / RESPONSE_FILE, MAX_RESPONSE_BYTES)
        if response is None:
            error = saved_call.get("error")
            reason = saved_call.get("failure_reason")
            if saved_call.get("error_kind") == "generation_failure":
                if reason not in GENERATION_FAILURE_REASONS:
                    raise ProviderError(
                        f"{folder / CALL_FILE}: unknown failure_reason {str(reason)[:40]!r}"
                    )
                # The saved attempt was the request's or the model's fault: replay it.
                raise GenerationFailure(f"replayed: {str(error)[:300]}", reason=str(reason))
            why = f" (the saved call failed: {str(error)[:300]})" if error else ""
            raise ProviderError(f"no saved response at {folder / RESPONSE_FILE}{why}")
        finish = saved_call.get("finish_reason")
        if finish is not None and finish not in FINISH_REASONS:
            raise ProviderError(f"{folder / CALL_FILE}: unknown finish_reason {str(finish)[:40]!r}")
        return Generation(
            text=response.decode("utf-8", errors="replace"),
            finish_reason=finish,
            input_tokens=None,
            output_tokens=None,
            raw={"replayed_from": str(folder), "history_turns": len(request.history)},
        )


@hookimpl
def pdeagent_register_providers(register: Any) -> None:
    register(ReplayProvider())
