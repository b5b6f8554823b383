"""A fingerprint of the machine timings were measured on (SPEC §7)."""

from __future__ import annotations

import os
import platform
from typing import Any


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def fingerprint() -> dict[str, Any]:
    """CPU model, logical cores, memory, OS and Python: enough to tell machines apart."""
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "machine": platform.machine(),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


TIMING_KEYS = ("cpu", "cores", "memory_gib", "machine")
"""The fingerprint entries that decide whether timings of two machines are comparable
(the OS release and the Python version change with updates of the same machine)."""
UNKNOWN_BACKEND = "backend unknown"
"""What a calibration record without a ``backend`` (written before it was recorded)
reports as its sandbox backend."""


def fingerprint_differences(
    calibrated_on: dict[str, Any], grading: dict[str, Any]
) -> dict[str, tuple[Any, Any]]:
    """``{key: (calibration value, grading value)}`` for each :data:`TIMING_KEYS` entry
    the two fingerprints disagree on; a key missing on either side is a difference
    (nothing says the machines are the same)."""
    return {
        key: (calibrated_on.get(key), grading.get(key))
        for key in TIMING_KEYS
        if key not in calibrated_on or key not in grading or calibrated_on[key] != grading[key]
    }


def calibration_backend(calibrated_on: dict[str, Any]) -> str:
    """The sandbox backend a calibration was measured with, or :data:`UNKNOWN_BACKEND`."""
    backend = calibrated_on.get("backend")
    return str(backend) if isinstance(backend, str) and backend else UNKNOWN_BACKEND
