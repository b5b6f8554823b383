"""The offline ``baseline`` provider: the track's calibration solver as the reply.

The solver is configured as the dataset records for the case and track: the provider
declares ``reads_calibration``, so its requests (and only its) carry the case's
evaluator-side ``calibration_config`` (the frontier-chosen degree, mesh, time step,
solver settings); a case without one gets the solver's defaults.

A multi-turn request (feedback mode: the history holds the original prompt, the earlier
replies and the grader's feedback) gets the same reply as the single-turn one: the
calibration solver for the request's track and case. The history is read for nothing
but its length (``raw["history_turns"]``); the baseline is a fixed program, not a model
that learns from feedback, so a feedback run with it shows the harness's conversation
handling, never an improvement.
"""

from __future__ import annotations

from typing import Any

from pdeagent import hookimpl
from pdeagent.providers import (
    Generation,
    GenerationRequest,
    Provider,
    ProviderError,
    ProviderSettings,
    ProviderStatus,
)


class BaselineProvider(Provider):
    name = "baseline"
    description = "offline: answers with the track's calibration solver (no network, no key)"
    cacheable = False
    free = True
    concurrency = 8
    reads_calibration = True
    """Its requests carry the case's recorded calibration configuration (it is the
    calibration baseline, not a model: nothing of it reaches a prompt)."""

    def __init__(self, host: Any) -> None:
        self._host = host

    def status(self, settings: ProviderSettings) -> ProviderStatus:
        return ProviderStatus(ready=True, package="(none needed)", key="not needed", endpoint=None)

    def generate(self, request: GenerationRequest) -> Generation:
        if request.track is None or request.case_view is None:
            raise ProviderError("the baseline provider needs the request's track and case_view")
        track = self._host.get_track(request.track)
        source = self._host.hook.pdeagent_calibration_source(
            track=track,
            case_view=dict(request.case_view),
            calibration_config=dict(request.calibration_config or {}) or None,
        )
        if not source:
            raise ProviderError(f"track {track.name!r} has no calibration solver for this case")
        tag = track.fence_tags[0] if track.fence_tags else track.language
        fence = "````" if "```" in source else "```"
        text = (
            f"The {track.name} track's calibration solver for case {request.case_id}:\n\n"
            f"{fence}{tag}\n{source.rstrip()}\n{fence}\n"
        )
        return Generation(
            text=text,
            finish_reason="stop",
            input_tokens=0,
            output_tokens=0,
            raw={
                "provider": "baseline",
                "track": track.name,
                "history_turns": len(request.history),
                "configured": (request.calibration_config or {}).get(track.name) is not None,
            },
        )


@hookimpl
def pdeagent_register_providers(register: Any, host: Any) -> None:
    register(BaselineProvider(host))
