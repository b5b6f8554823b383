"""Where a run keeps each attempt: ``RUN/<track>/<model>/<case>/attempt-<k>/``.

The same layout is what the ``replay`` provider reads, so a saved run (ours or a
published one laid out the same way) can be re-graded without calling a model.
Names from outside (model ids such as ``Qwen/Qwen2.5-Coder``, case ids) become one
safe path component each: characters outside ``[A-Za-z0-9._-]`` are replaced and a
short hash of the original keeps distinct names distinct.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

PROMPT_FILE = "prompt.md"
RESPONSE_FILE = "response.md"
"""The model's raw reply text."""
CALL_FILE = "call.json"
"""The :class:`~pdeagent.calls.CallRecord` of the call that produced the reply."""
REPORT_FILE = "report.json"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def path_component(name: str) -> str:
    """``name`` as one safe, non-empty path component (never ``.``/``..``)."""
    if not name:
        raise ValueError("empty name")
    safe = _UNSAFE.sub("_", name)[:120]
    if safe != name or safe in (".", ".."):
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
        safe = f"{safe.strip('.') or 'name'}-{digest}"
    return safe


def attempt_dir(root: Path, track: str, model: str, case_id: str, attempt: int) -> Path:
    if attempt < 0:
        raise ValueError(f"attempt must be >= 0, got {attempt}")
    return (
        root
        / path_component(track)
        / path_component(model)
        / path_component(case_id)
        / f"attempt-{attempt}"
    )
