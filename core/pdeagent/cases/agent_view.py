"""The agent view of a case: THE one place it is derived (SPEC §3, §4).

An agent (and the program it writes) only ever receives
``{"case_spec": ..., "target_library": ...}``. Everything else in the record is
for the evaluator.
"""

from __future__ import annotations

import copy
from typing import Any

from pdeagent.cases.model import Case, converter

AGENT_VIEW_KEYS: tuple[str, ...] = ("case_spec", "target_library")
"""The keys of an agent view, exactly."""

EVALUATOR_ONLY_FIELDS: frozenset[str] = frozenset(
    {"evaluation_config", "evaluation_metadata", "tags"}
)
"""Top-level record fields that must never reach an agent: the manufactured solution,
reference and calibration settings, thresholds and their factors, difficulty tags."""


def agent_view(case: Case, target_library: str) -> dict[str, Any]:
    """``{"case_spec": <unstructured case_spec>, "target_library": target_library}``.

    Raises ValueError when the case does not support ``target_library``.
    """
    if target_library not in case.supported_libraries:
        supported = ", ".join(case.supported_libraries) or "none"
        raise ValueError(
            f"case {case.id} does not support library {target_library!r} (supported: {supported})"
        )
    case_spec = copy.deepcopy(converter.unstructure(case.case_spec))
    return {"case_spec": case_spec, "target_library": target_library}
