"""What an attack is: :class:`Attack` (one hostile submission and the verdict it must get),
:class:`CheckContext` (what the attack's own check sees after the run) and the keys of the
secret targets it may try to read or list."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attrs import define, field

from pdeagent.cases.model import Case
from pdeagent.evaluation.report import Report
from pdeagent.sandbox.base import ExecutionResult, Limits
from pdeagent.scoring.verdict import FEXEC_REASONS
from pdeagent.stages import Track

SECRET_ENV_VAR = "PDEAGENT_ADVERSARIAL_SECRET"
"""Environment variable of the harness (and the bystander) holding a secret token."""
PRIVATE_PREFIXES = ("/tmp/", "/dev/shm/")
"""Writable inside the sandbox (private tmpfs); must never reach the host."""

LANGUAGES: dict[str, str] = {"python": ".py", "cpp": ".cc"}
"""Attack language -> suffix of its files under ``attacks/<language>/``. An attack applies
to every track whose ``Track.language`` is its language."""


def attacks_dir() -> Path:
    """The folder of the attack sources (``pdeagent/adversarial/attacks``), installed with
    the package."""
    return Path(__file__).resolve().parent / "attacks"


@functools.cache
def read_attack_file(relpath: str) -> str:
    """The text of ``attacks/<relpath>`` (cached: the files do not change while running)."""
    path = attacks_dir() / relpath
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FileNotFoundError(
            f"attack file {path} is missing: reinstall pdeagent (the wheel ships attacks/)"
        ) from exc


@define(frozen=True)
class CheckContext:
    """What an attack's own check sees after the run."""

    attack: Attack
    report: Report | None
    executions: list[ExecutionResult]
    """Results of the program's executions (accuracy run first), compile runs excluded."""
    findings: dict[str, Any]
    """What the program reported in ``findings*.json`` (empty when it wrote none)."""
    limits: Limits
    params: dict[str, Any]
    backend: str
    is_root: bool
    eval_root: Path
    elapsed_sec: float
    case: Case
    track: Track
    source: str
    """The program as graded (the rendered attack)."""


@define(frozen=True)
class Attack:
    """One hostile submission and the verdict it must get."""

    name: str
    description: str
    language: str
    """``python`` (a ``solve(case_spec)`` file) or ``cpp`` (a ``./solver`` program)."""
    source: str
    """Its file, relative to ``attacks/`` (e.g. ``python/fork_bomb.py``): a template with
    ``__NAME__`` placeholders (:func:`pdeagent.adversarial.render.render_source`)."""
    expected: tuple[str, str | None]
    """(verdict, reason), e.g. ``("F-Exec", "timeout")`` or ``("F-Time", "runtime_above_tau")``."""
    limits: dict[str, Any] = field(factory=dict)
    """:class:`Limits` fields that differ from the attack defaults (small, to stay fast)."""
    wall_time_sec: float = 30.0
    uses_baseline: bool = False
    """The template is appended to the track's own calibration solver for the case."""
    tau_time: float | None = None
    """Explicit time threshold (the accuracy threshold stays the dataset's)."""
    timed_repeats: int = 1
    settle_sec: float = 0.0
    """How long to wait after the run before the late checks (work dir unchanged, ...)."""
    slow: bool = False
    """Takes several seconds by design (a wall limit, bulk I/O, a baseline solve)."""
    check: Callable[[CheckContext], list[str]] | None = None
    """The attack's own expectations; returns problems (empty when fine)."""
    reads: tuple[str, ...] = ()
    """Keys of secret targets (:data:`READ_TARGETS`) the program tries to read."""
    lists: tuple[str, ...] = ()
    """Keys of directories (:data:`LIST_TARGETS`) the program tries to list."""

    def __attrs_post_init__(self) -> None:
        if self.language not in LANGUAGES:
            raise ValueError(f"{self.name}: unknown language {self.language!r}")
        suffix = LANGUAGES[self.language]
        if not (self.source.startswith(f"{self.language}/") and self.source.endswith(suffix)):
            raise ValueError(f"{self.name}: source {self.source!r} is not a {self.language} file")
        verdict, reason = self.expected
        if verdict == "F-Exec" and reason not in FEXEC_REASONS:
            raise ValueError(f"{self.name}: unknown F-Exec reason {reason!r}")

    @property
    def template(self) -> str:
        """The text of :attr:`source` (placeholders unfilled, lint-only lines kept)."""
        return read_attack_file(self.source)

    def make_limits(self) -> Limits:
        return Limits(wall_time_sec=self.wall_time_sec, **self.limits)


READ_TARGETS: dict[str, str] = {
    "dataset_cases": "the fake evaluator dataset's cases.jsonl (holds a secret token)",
    "reference_npy": "a reference array of the fake dataset (holds a secret token)",
    "reference_npz": "the case's exact solution as an npz in the fake dataset",
    "hidden_file": "a file in a directory the evaluation passes as hide=[...]",
    "repo_cases": "the real dataset cases/pdeagent-v1.jsonl of the checkout",
    "harness_source": "the harness source pdeagent/sandbox/local.py",
    "pipeline_source": "the harness source pdeagent/evaluation/pipeline.py",
    "harness_environ": "/proc/<harness pid>/environ",
    "bystander_environ": "/proc/<bystander pid>/environ (starts with a secret token)",
    "host_init_environ": "/proc/1/environ",
}
LIST_TARGETS: dict[str, tuple[str, ...]] = {
    "dataset_dir": ("cases.jsonl", "references"),
    "references_dir": ("ref.npy",),
    "hidden_dir": ("run-secret.txt",),
    "repo_dir": ("cases", "core", "pyproject.toml", "plugins"),
    "package_dir": ("sandbox", "evaluation", "scoring", "adversarial"),
}
"""Directory key -> names whose appearance in a listing is a leak."""
