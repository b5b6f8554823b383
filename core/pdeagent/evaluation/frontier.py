"""Frontier calibration: which configuration of the expert solver is the baseline.

The rule (SPEC 7.1, rule name ``frontier-1``), in words. The calibration baseline of
a case on a track is the track's expert solver at one point of its accuracy/cost
frontier, chosen from measured trials over a ladder of configurations:

* a trial *qualifies* when it ran (no failure, a finite error and a finite time)
  and its solve time ``t - t_null`` is at most the budget (2 s for 2-D cases, 8 s
  for 3-D cases on the reference machine, one case at a time);
* among qualifying trials whose error is at most the target error (default 1e-7,
  a tenth of tau_min), the baseline is the cheapest one: the smallest measured
  total time ``t`` (ties: smaller error, then the earlier measurement);
* if no qualifying trial reaches the target, the baseline is the most accurate
  qualifying trial: the smallest error (ties: smaller ``t``, then the earlier
  measurement);
* a failed trial is never chosen; when no trial qualifies the calibration fails
  (:class:`FrontierError`, listing every trial);
* the budget floor: when not even the first (cheapest) rung of any chain runs within
  the budget, the track's fixed per-problem cost (e.g. Firedrake's kernel compilation
  on a curved mesh: 2.4-4.5 s before any real work) is not solve work, and the budget
  applies beyond the fastest first rung: ``budget + min(first rungs' solve time)``
  (:func:`effective_budget`, :func:`search_with_floor`; recorded as the choice's budget).

The ladder is a list of chains; each chain lists settings dicts in order of
increasing cost (e.g. one chain per element degree with the mesh refined along it).
:func:`search` walks every chain rung by rung and stops walking a chain at the first
rung that failed, went over the budget, or reached the target error (the finer rungs
of that chain only cost more). A configuration that appears in several chains is
measured once. Every measured trial is kept, in measurement order, with its chain,
its rung and why its chain stopped there, so the choice can be re-checked from the
stored table alone (:func:`recompute`).

This module knows no FEM library and no sandbox: the caller passes ``measure``.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
from attrs import define, field

TARGET_ERROR = 1e-7
"""Default target error: tau_min / 10."""

BUDGET_2D = 2.0
"""Solve-time budget ``t - t_null`` in seconds for 2-D cases (reference machine)."""

BUDGET_3D = 8.0
"""Solve-time budget ``t - t_null`` in seconds for 3-D cases (reference machine)."""

RULE_NAME = "frontier-1"
"""Recorded with every choice; bump it if the rule ever changes."""

SCREENED_RULE_NAME = "frontier-2"
"""The same choice on a screened walk (:func:`search` with ``screened=True``): each rung's
time is ``t_null`` plus its solve time measured with the chain's kernels warm, in one run
per chain (:mod:`pdeagent.evaluation.screening`), instead of a pristine run of its own;
and the walk also stops a chain where :data:`STOP_PREDICTED` or :data:`STOP_PRUNED`
says."""

PREDICTED_BUDGET_MARGIN = 1.1
"""Screened walks: a chain stops (:data:`STOP_PREDICTED`) when its next rung's solve time,
predicted as ``s_r * s_r / s_(r-1)``, is over this many budgets."""

PRUNE_FACTOR = 3.0
"""Screened walks: a chain stops (:data:`STOP_PRUNED`) when its error extrapolated to the
budget is over this many times the best error within the budget so far."""

STOP_TARGET = "target"
STOP_BUDGET = "budget"
STOP_FAILED = "failed"
STOP_DOMINATED = "dominated"
"""The rung took longer than a trial that already reached the target: neither it nor
the dearer rungs after it can be the cheapest configuration reaching the target."""
STOP_PREDICTED = "predicted"
"""Screened walks only: the next rung's solve time, predicted from the growth of the last
two rungs' solve times, is over ``PREDICTED_BUDGET_MARGIN * budget``: it is not
measured (growth ratios rise along a chain, so the prediction is low, not high)."""
STOP_PRUNED = "pruned"
"""Screened walks only, while no trial has reached the target: the chain's error at the
budget, extrapolated from its last two rungs (error against solve time as a power law),
is over ``PRUNE_FACTOR`` times the best error within the budget so far: the most
accurate trial within the budget will not be this chain's."""
STOP_REASONS = frozenset(
    {STOP_TARGET, STOP_BUDGET, STOP_FAILED, STOP_DOMINATED, STOP_PREDICTED, STOP_PRUNED}
)

TABLE_KEYS = (
    "config",
    "error",
    "time",
    "t_null",
    "solve_time",
    "failure",
    "chain",
    "rung",
    "stopped",
)
"""The keys of one row of a trial table, in the order they are written."""

_SOLVE_TIME_TOLERANCE = 1e-9


class FrontierError(RuntimeError):
    """No trial qualifies: the calibration cannot choose a baseline configuration."""


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _as_float(value: Any) -> Any:
    """Numbers (numpy scalars too) become floats; anything else is left for the
    validators to reject."""
    return float(value) if _is_number(value) else value


def _is_index(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_config(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, dict):
        raise TypeError(f"{attribute.name} must be a dict, got {type(value).__name__}")


def _check_optional_measurement(
    _instance: object, attribute: attrs.Attribute, value: object
) -> None:
    if value is None:
        return
    if not _is_number(value):
        raise TypeError(f"{attribute.name} must be a number or None, got {value!r}")
    if math.isfinite(value) and value < 0:
        # a non-finite value is a failed trial (see Trial.problem), a negative one a bug
        raise ValueError(f"{attribute.name} must not be negative, got {value!r}")


def _check_t_null(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not _is_number(value):
        raise TypeError(f"{attribute.name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{attribute.name} must be finite and >= 0, got {value!r}")


def _check_failure(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise TypeError(f"{attribute.name} must be a non-empty string or None, got {value!r}")


def _check_index(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not _is_index(value):
        raise ValueError(f"{attribute.name} must be an int >= 0, got {value!r}")


def _check_stopped(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value is not None and value not in STOP_REASONS:
        raise ValueError(
            f"{attribute.name} must be one of {sorted(STOP_REASONS)} or None, got {value!r}"
        )


@define(frozen=True)
class Trial:
    """One measured run of the expert solver in one configuration.

    A trial *failed* when ``failure`` is set, or when its error or time is missing or
    not finite; a failed trial is never chosen and stops its chain.
    """

    config: dict[str, Any] = field(validator=_check_config)
    error: float | None = field(converter=_as_float, validator=_check_optional_measurement)
    """Relative L2 error; None when the run failed."""
    time: float | None = field(converter=_as_float, validator=_check_optional_measurement)
    """Measured total runtime t in seconds; None when the run failed."""
    t_null: float = field(converter=_as_float, validator=_check_t_null)
    """The track's null-program time on this machine."""
    failure: str | None = field(default=None, validator=_check_failure)
    """Why the run failed (e.g. ``"F-Exec timeout: ..."``); None when it ran."""
    chain: int = field(default=0, validator=_check_index)
    rung: int = field(default=0, validator=_check_index)
    stopped: str | None = field(default=None, validator=_check_stopped)
    """Why the walk of this trial's chain stopped here, or None if it went on."""

    @property
    def solve_time(self) -> float | None:
        """``time - t_null``: the part of the runtime the budget limits."""
        if self.time is None:
            return None
        return self.time - self.t_null

    @property
    def failed(self) -> bool:
        """True when the trial can never be chosen (see :attr:`problem`)."""
        return self.problem is not None

    @property
    def problem(self) -> str | None:
        """Why the trial failed, or None when it ran and measured finite numbers."""
        if self.failure is not None:
            return self.failure
        if self.error is None or not math.isfinite(self.error):
            return f"no finite error (error={self.error!r})"
        if self.time is None or not math.isfinite(self.time):
            return f"no finite time (time={self.time!r})"
        return None


def _check_positive(name: str, value: object) -> float:
    if not _is_number(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


@define(frozen=True)
class Choice:
    """The frontier rule's choice among a list of trials."""

    index: int = field(validator=_check_index)
    """Index of the chosen trial in the trials list."""
    why: str
    """``"cheapest with error <= 1e-07"`` or ``"most accurate within budget 2 s"``."""
    rule: str
    """:data:`RULE_NAME` of the rule that chose."""
    target_error: float
    budget: float


def budget_for(dim: int) -> float:
    """The solve-time budget (seconds) for a case of spatial dimension ``dim``."""
    if not _is_index(dim) or dim not in (2, 3):
        raise ValueError(f"no frontier budget for dimension {dim!r} (known: 2, 3)")
    return BUDGET_2D if dim == 2 else BUDGET_3D


def _why_target(target_error: float) -> str:
    return f"cheapest with error <= {target_error:g}"


def _why_accurate(budget: float) -> str:
    return f"most accurate within budget {budget:g} s"


def _describe(index: int, trial: Trial) -> str:
    where = f"chain {trial.chain} rung {trial.rung}"
    if trial.failed:
        outcome = f"FAILED: {trial.problem}"
    else:
        outcome = f"error={trial.error:.3e} t={trial.time:.3f}s solve={trial.solve_time:.3f}s"
    return f"  [{index}] {where} {trial.config!r}: {outcome}"


def describe_trials(trials: Sequence[Trial]) -> str:
    """One line per trial, for error messages and logs."""
    if not trials:
        return "  (no trials)"
    return "\n".join(_describe(i, t) for i, t in enumerate(trials))


def choose(trials: Sequence[Trial], *, budget: float, target_error: float = TARGET_ERROR) -> Choice:
    """Apply the frontier rule (module docstring) to measured trials."""
    budget = _check_positive("budget", budget)
    target_error = _check_positive("target_error", target_error)
    for i, trial in enumerate(trials):
        if not isinstance(trial, Trial):
            raise TypeError(f"trial {i} is a {type(trial).__name__}, not a Trial")
    within = [
        i
        for i, t in enumerate(trials)
        if not t.failed and t.solve_time is not None and t.solve_time <= budget
    ]
    # the type checker cannot see that "not failed" means error and time are floats
    reached = [i for i in within if trials[i].error <= target_error]  # type: ignore[operator]
    if reached:
        best = min(reached, key=lambda i: (trials[i].time, trials[i].error, i))
        why = _why_target(target_error)
    elif within:
        best = min(within, key=lambda i: (trials[i].error, trials[i].time, i))
        why = _why_accurate(budget)
    else:
        raise FrontierError(
            f"no trial ran within the solve budget of {budget:g} s "
            f"(target error {target_error:g}); trials:\n{describe_trials(trials)}"
        )
    return Choice(index=best, why=why, rule=RULE_NAME, target_error=target_error, budget=budget)


def _stop_reason(
    trial: Trial, *, budget: float, target_error: float, fastest_on_target: float | None = None
) -> str | None:
    if trial.failed:
        return STOP_FAILED
    assert trial.solve_time is not None and trial.error is not None and trial.time is not None
    if trial.solve_time > budget:
        return STOP_BUDGET
    if trial.error <= target_error:
        return STOP_TARGET
    if fastest_on_target is not None and trial.time > fastest_on_target:
        return STOP_DOMINATED
    return None


def _normalized(trial: Trial) -> Trial:
    """A trial that failed by its numbers alone (NaN error, ...) gets an explicit
    failure, and its non-finite numbers become None, so its table stays plain JSON."""
    if trial.failure is None and trial.failed:
        return attrs.evolve(
            trial,
            failure=trial.problem,
            error=trial.error if trial.error is not None and math.isfinite(trial.error) else None,
            time=trial.time if trial.time is not None and math.isfinite(trial.time) else None,
        )
    return trial


def _check_ladder(chains: object) -> list[list[dict[str, Any]]]:
    if isinstance(chains, str | bytes | Mapping) or not isinstance(chains, Sequence):
        raise ValueError(f"the ladder must be a list of chains, got {type(chains).__name__}")
    if not chains:
        raise ValueError("the ladder is empty: no chain of configurations to try")
    ladder: list[list[dict[str, Any]]] = []
    for c, chain in enumerate(chains):
        if isinstance(chain, str | bytes | Mapping) or not isinstance(chain, Sequence):
            raise ValueError(f"chain {c} must be a list of configs, got {type(chain).__name__}")
        if not chain:
            raise ValueError(f"chain {c} is empty")
        for r, rung in enumerate(chain):
            if not isinstance(rung, dict):
                raise ValueError(
                    f"chain {c} rung {r} must be a settings dict, got {type(rung).__name__}"
                )
        ladder.append(list(chain))
    return ladder


def _screened_stop(
    trial: Trial, previous: Trial | None, trials: Sequence[Trial], *, budget: float
) -> str | None:
    """The screened walk's extra stops (:data:`STOP_PREDICTED`, :data:`STOP_PRUNED`) after
    ``trial``, a rung that ran within the budget above the target; ``previous`` is the
    rung before it in its chain (None for a first rung)."""
    if previous is None or previous.failed:
        return None
    s1, s2 = previous.solve_time, trial.solve_time
    e1, e2 = previous.error, trial.error
    assert s1 is not None and s2 is not None and e1 is not None and e2 is not None
    if s1 <= 0 or s2 <= s1:
        return None  # no growth to extrapolate (noise among the smallest rungs)
    if s2 * (s2 / s1) > PREDICTED_BUDGET_MARGIN * budget:
        return STOP_PREDICTED
    within = [
        t.error
        for t in trials
        if t is not trial and not t.failed and t.solve_time <= budget  # type: ignore[operator]
    ]
    if not within or e1 <= 0 or e2 <= 0 or e2 >= e1:
        return None
    slope = math.log(e2 / e1) / math.log(s2 / s1)
    at_budget = e2 * (budget / s2) ** slope
    if at_budget > PRUNE_FACTOR * min(within):  # type: ignore[type-var]
        return STOP_PRUNED
    return None


def search(
    chains: Sequence[Sequence[dict[str, Any]]],
    measure: Callable[[dict[str, Any]], Trial],
    *,
    budget: float,
    target_error: float = TARGET_ERROR,
    progress: Callable[[int, Trial], None] | None = None,
    screened: bool = False,
    on_chain: Callable[[int, list[dict[str, Any]], float], None] | None = None,
) -> tuple[list[Trial], Choice]:
    """Walk the ladder, measuring rungs with ``measure``, and choose by the rule.

    Returns every measured trial in measurement order (each with its chain, rung and
    ``stopped`` note) and the :class:`Choice` among them. Once a trial within the budget
    reached the target, a chain also stops at a rung slower than the fastest such trial
    (``dominated``): the rule can no longer choose it or a dearer rung after it. Chains
    are walked in the order given, so a ladder lists its most promising chain first.
    ``measure`` reports a failed solver as a trial with ``failure`` set; an exception it
    raises is a harness problem and propagates. ``progress(index, trial)`` is called
    after each new measurement. Raises :class:`FrontierError` when no trial qualifies.

    ``screened``: the trials are screened (rule :data:`SCREENED_RULE_NAME`), and a chain
    also stops where :data:`STOP_PREDICTED` or :data:`STOP_PRUNED` says.
    ``on_chain(index, chain, budget)`` is called before a chain's first rung is looked at
    (a screener starts the chain's run there).
    """
    ladder = _check_ladder(chains)
    budget = _check_positive("budget", budget)
    target_error = _check_positive("target_error", target_error)
    trials: list[Trial] = []
    fastest: float | None = None  # fastest trial within the budget that reached the target
    for c, chain in enumerate(ladder):
        if on_chain is not None:
            on_chain(c, [copy.deepcopy(config) for config in chain], budget)
        previous: Trial | None = None
        for r, config in enumerate(chain):
            known = next((t for t in trials if t.config == config), None)
            if known is not None:
                # measured already (in an earlier chain or rung): its outcome, and so
                # whether it stops a chain, does not depend on where it appears
                if known.stopped is not None:
                    break
                previous = known
                continue
            trial = measure(config)
            if not isinstance(trial, Trial):
                raise TypeError(
                    f"measure() returned a {type(trial).__name__}, not a Trial, "
                    f"for chain {c} rung {r} {config!r}"
                )
            if trial.config != config:
                raise ValueError(
                    f"measure() returned a trial for {trial.config!r} "
                    f"when asked for {config!r} (chain {c} rung {r})"
                )
            trial = _normalized(
                attrs.evolve(trial, config=copy.deepcopy(config), chain=c, rung=r, stopped=None)
            )
            stopped = _stop_reason(
                trial, budget=budget, target_error=target_error, fastest_on_target=fastest
            )
            if stopped is None and screened:
                stopped = _screened_stop(
                    trial, previous, trials if fastest is None else [], budget=budget
                )
            trial = attrs.evolve(trial, stopped=stopped)
            if stopped == STOP_TARGET and trial.time is not None:
                fastest = trial.time if fastest is None else min(fastest, trial.time)
            trials.append(trial)
            previous = trial
            if progress is not None:
                progress(len(trials) - 1, trial)
            if stopped is not None:
                break
    choice = choose(trials, budget=budget, target_error=target_error)
    return trials, attrs.evolve(choice, rule=SCREENED_RULE_NAME) if screened else choice


def trials_to_table(trials: Sequence[Trial]) -> list[dict[str, Any]]:
    """JSON-able rows, one per trial, with the keys :data:`TABLE_KEYS`."""
    rows = []
    for trial in trials:
        if not isinstance(trial, Trial):
            raise TypeError(f"not a Trial: {trial!r}")
        rows.append(
            {
                "config": dict(trial.config),
                "error": trial.error,
                "time": trial.time,
                "t_null": trial.t_null,
                "solve_time": trial.solve_time,
                "failure": trial.failure,
                "chain": trial.chain,
                "rung": trial.rung,
                "stopped": trial.stopped,
            }
        )
    return rows


def _row_number(row: dict[str, Any], key: str, where: str, *, optional: bool) -> float | None:
    value = row[key]
    if value is None and optional:
        return None
    if not _is_number(value):
        raise ValueError(f"{where}: {key} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{where}: {key} must be finite, got {value!r}")
    return value


def _trial_from_row(row: object, i: int) -> Trial:
    where = f"trial table row {i}"
    if not isinstance(row, dict):
        raise ValueError(f"{where} must be a dict, got {type(row).__name__}")
    missing = [k for k in TABLE_KEYS if k not in row]
    if missing:
        raise ValueError(f"{where} is missing {missing}")
    extra = sorted(str(k) for k in row if k not in TABLE_KEYS)
    if extra:
        raise ValueError(f"{where} has unknown keys {extra}")
    config = row["config"]
    if not isinstance(config, dict) or not all(isinstance(k, str) for k in config):
        raise ValueError(f"{where}: config must be a dict with string keys, got {config!r}")
    failure = row["failure"]
    if failure is not None and (not isinstance(failure, str) or not failure):
        raise ValueError(f"{where}: failure must be a non-empty string or null, got {failure!r}")
    error = _row_number(row, "error", where, optional=True)
    time = _row_number(row, "time", where, optional=True)
    t_null = _row_number(row, "t_null", where, optional=False)
    solve_time = _row_number(row, "solve_time", where, optional=True)
    for key, value in (("error", error), ("time", time), ("t_null", t_null)):
        if value is not None and value < 0:
            raise ValueError(f"{where}: {key} must not be negative, got {value!r}")
    if failure is None and (error is None or time is None):
        raise ValueError(f"{where}: a trial without failure needs an error and a time")
    if (time is None) != (solve_time is None):
        raise ValueError(f"{where}: solve_time must be given exactly when time is")
    if time is not None and solve_time is not None:
        assert t_null is not None
        if abs(solve_time - (time - t_null)) > _SOLVE_TIME_TOLERANCE * max(1.0, abs(time)):
            raise ValueError(
                f"{where}: solve_time {solve_time!r} is not time - t_null = {time - t_null!r}"
            )
    for key in ("chain", "rung"):
        if not _is_index(row[key]):
            raise ValueError(f"{where}: {key} must be an int >= 0, got {row[key]!r}")
    stopped = row["stopped"]
    if stopped is not None and stopped not in STOP_REASONS:
        raise ValueError(f"{where}: stopped must be one of {sorted(STOP_REASONS)} or null")
    return Trial(
        config=dict(config),
        error=error,
        time=time,
        t_null=t_null,  # type: ignore[arg-type]
        failure=failure,
        chain=row["chain"],
        rung=row["rung"],
        stopped=stopped,
    )


def trials_from_table(rows: object) -> list[Trial]:
    """The trials of a stored table (inverse of :func:`trials_to_table`).

    The table is data from a file: any malformed row (a missing or unknown key, a
    wrong type, a non-finite or negative number, a solve_time that is not
    ``time - t_null``, a trial without failure that lacks a number) raises ValueError.
    """
    if isinstance(rows, str | bytes | Mapping) or not isinstance(rows, Sequence):
        raise ValueError(f"a trial table must be a list of rows, got {type(rows).__name__}")
    return [_trial_from_row(row, i) for i, row in enumerate(rows)]


def effective_budget(trials: Sequence[Trial], budget: float) -> float:
    """The budget the rule applies: ``budget`` when the first rung of some chain ran within
    it; otherwise (a library whose fixed per-problem cost, e.g. kernel compilation on a
    curved mesh, alone exceeds it) ``budget`` beyond the fastest first rung's solve time.
    Computed from the first rungs only, so it follows from the trial table alone."""
    budget = _check_positive("budget", budget)
    firsts = [t for t in trials if t.rung == 0 and not t.failed and t.solve_time is not None]
    if not firsts or any(t.solve_time <= budget for t in firsts):  # type: ignore[operator]
        return budget
    return budget + min(t.solve_time for t in firsts)  # type: ignore[type-var]


def search_with_floor(
    chains: Sequence[Sequence[dict[str, Any]]],
    measure: Callable[[dict[str, Any]], Trial],
    *,
    budget: float,
    target_error: float = TARGET_ERROR,
    progress: Callable[[int, Trial], None] | None = None,
    screened: bool = False,
    on_chain: Callable[[int, list[dict[str, Any]], float], None] | None = None,
) -> tuple[list[Trial], Choice]:
    """:func:`search` with ``budget``; when no first rung fits it, the walk again with
    :func:`effective_budget` (measurements of the first walk are reused). ``screened`` and
    ``on_chain`` as for :func:`search`."""
    measured: dict[str, Trial] = {}

    def remembered(config: dict[str, Any]) -> Trial:
        key = _config_key(config)
        if key not in measured:
            measured[key] = measure(config)
        return measured[key]

    walk = {"screened": screened, "on_chain": on_chain}
    trials, choice_or_error = _search_or_error(
        chains, remembered, budget=budget, target_error=target_error, progress=progress, **walk
    )
    if isinstance(choice_or_error, Choice):
        return trials, choice_or_error
    wider = effective_budget(trials, budget)
    if wider == budget:  # some first rung fits: the budget stands and nothing qualifies
        raise choice_or_error
    return search(
        chains, remembered, budget=wider, target_error=target_error, progress=progress, **walk
    )


def _search_or_error(
    chains: Sequence[Sequence[dict[str, Any]]],
    measure: Callable[[dict[str, Any]], Trial],
    **kwargs: Any,
) -> tuple[list[Trial], Choice | FrontierError]:
    """:func:`search`, returning its :class:`FrontierError` (with the trials measured
    before it) instead of raising it."""
    collected: list[Trial] = []

    def keep(index: int, trial: Trial) -> None:
        collected.append(trial)
        if kwargs.get("progress") is not None:
            kwargs["progress"](index, trial)

    try:
        return search(chains, measure, **{**kwargs, "progress": keep})
    except FrontierError as exc:
        return collected, exc


def _config_key(config: dict[str, Any]) -> str:
    return repr(sorted(config.items(), key=lambda kv: kv[0]))


def recompute(table: list[dict[str, Any]], *, budget: float, target_error: float) -> Choice:
    """The choice the rule makes on a stored trial table (to re-check a stored choice);
    ``budget`` is the nominal budget (see :func:`effective_budget`)."""
    trials = trials_from_table(table)
    return choose(trials, budget=effective_budget(trials, budget), target_error=target_error)
