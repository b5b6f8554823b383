"""Scoring: artifact loading and validation, error metrics, thresholds and verdicts."""

from pdeagent.scoring.artifacts import (
    ArtifactCheck,
    ArtifactError,
    check_solution,
    load_solution_npz,
)
from pdeagent.scoring.metrics import (
    case_error,
    compute_metrics,
    frequency_band_energies,
    frequency_rmse,
    group_errors,
    mae,
    normalized_arrays,
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
    "case_error",
    "check_solution",
    "compute_metrics",
    "frequency_band_energies",
    "frequency_rmse",
    "group_errors",
    "load_solution_npz",
    "mae",
    "normalized_arrays",
    "r_squared",
    "relative_l2",
    "rmse",
    "staged_verdict",
    "thresholds",
    "thresholds_from_config",
    "total_variation",
]
