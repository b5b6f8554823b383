"""Scoring: artifact loading and validation, error metrics, thresholds and verdicts."""

from pdeagent.scoring.artifacts import (
    ArtifactCheck,
    ArtifactError,
    check_solution,
    load_solution_npz,
)
from pdeagent.scoring.metrics import (
    compute_metrics,
    frequency_band_energies,
    frequency_rmse,
    mae,
    r_squared,
    relative_l2,
    rmse,
    total_variation,
)
from pdeagent.scoring.verdict import (
    FEXEC_REASONS,
    Verdict,
    staged_verdict,
    thresholds,
    thresholds_from_config,
)

__all__ = [
    "FEXEC_REASONS",
    "ArtifactCheck",
    "ArtifactError",
    "Verdict",
    "check_solution",
    "compute_metrics",
    "frequency_band_energies",
    "frequency_rmse",
    "load_solution_npz",
    "mae",
    "r_squared",
    "relative_l2",
    "rmse",
    "staged_verdict",
    "thresholds",
    "thresholds_from_config",
    "total_variation",
]
