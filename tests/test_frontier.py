"""The frontier calibration core (pdeagent.evaluation.frontier, SPEC 7.1).

The searches run on a synthetic solver: error = C * h**(p+1) with h = 1/n and
time = t_null + k * dofs with dofs = (p*n + 1)**dim, C = 0.1, k = 1e-5 s per dof,
t_null = 0.4 s. Some values it gives (2-D), which the assertions below rely on:

    p=1 n=256   error 1.53e-06  solve 0.66 s      p=1 n=512  error 3.81e-07  solve 2.63 s
    p=2 n=64    error 3.81e-07  solve 0.17 s      p=2 n=128  error 4.77e-08  solve 0.66 s
    p=3 n=16    error 1.53e-06  solve 0.02 s      p=3 n=32   error 9.54e-08  solve 0.09 s
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import pytest

from pdeagent.evaluation.frontier import (
    BUDGET_2D,
    BUDGET_3D,
    RULE_NAME,
    TARGET_ERROR,
    Choice,
    FrontierError,
    Trial,
    budget_for,
    choose,
    recompute,
    search,
    trials_from_table,
    trials_to_table,
)

C = 0.1
K = 1e-5
T_NULL = 0.4
WHY_TARGET = "cheapest with error <= 1e-07"
WHY_2D = "most accurate within budget 2 s"


class Model:
    """A synthetic expert solver; records the configs it was asked to measure."""

    def __init__(
        self,
        dim: int = 2,
        *,
        failures: dict[tuple[int, int], Trial | str] | None = None,
    ) -> None:
        self.dim = dim
        self.failures = failures or {}
        self.calls: list[tuple[int, int]] = []

    def error(self, p: int, n: int) -> float:
        return C * (1.0 / n) ** (p + 1)

    def time(self, p: int, n: int) -> float:
        return T_NULL + K * (p * n + 1) ** self.dim

    def __call__(self, config: dict[str, Any]) -> Trial:
        key = (config["degree"], config["n"])
        self.calls.append(key)
        broken = self.failures.get(key)
        if isinstance(broken, Trial):
            return attrs.evolve(broken, config=config)
        if broken is not None:
            return Trial(config=config, error=None, time=None, t_null=T_NULL, failure=broken)
        return Trial(config=config, error=self.error(*key), time=self.time(*key), t_null=T_NULL)


def chain(p: int, ns: Iterable[int]) -> list[dict[str, Any]]:
    return [{"degree": p, "n": n} for n in ns]


def walk(trials: list[Trial]) -> list[tuple[int, int, int, int, str | None]]:
    """(chain, rung, degree, n, stopped) of every trial, in measurement order."""
    return [(t.chain, t.rung, t.config["degree"], t.config["n"], t.stopped) for t in trials]


def chosen(trials: list[Trial], choice: Choice) -> tuple[int, int]:
    config = trials[choice.index].config
    return config["degree"], config["n"]


def roundtrip(trials: list[Trial]) -> list[dict[str, Any]]:
    """The table as it comes back from a JSON file (strict JSON: no NaN)."""
    return json.loads(json.dumps(trials_to_table(trials), allow_nan=False))


# -- the walk and the choice ---------------------------------------------------------


@pytest.mark.parametrize("cheap_first", [True, False])
def test_target_reached_on_the_cheaper_chain_wins_over_the_dearer_one(cheap_first):
    p2 = chain(2, [8, 16, 32, 64, 128, 256])
    p3 = chain(3, [4, 8, 16, 32, 64])
    chains = [p3, p2] if cheap_first else [p2, p3]
    model = Model()
    trials, choice = search(chains, model, budget=BUDGET_2D)

    # each chain stops at its first rung with error <= 1e-7: p2 at n=128, p3 at n=32;
    # walked second, p2 stops earlier, at n=64, the first rung slower than p3 n=32
    # (dominated: neither it nor a dearer rung can be the cheapest on target)
    c2, c3 = (1, 0) if cheap_first else (0, 1)
    if cheap_first:
        expected_p2 = [(c2, r, 2, n, None) for r, n in enumerate([8, 16, 32])]
        expected_p2.append((c2, 3, 2, 64, "dominated"))
    else:
        expected_p2 = [(c2, r, 2, n, None) for r, n in enumerate([8, 16, 32, 64])]
        expected_p2.append((c2, 4, 2, 128, "target"))
    expected_p3 = [(c3, r, 3, n, None) for r, n in enumerate([4, 8, 16])]
    expected_p3.append((c3, 3, 3, 32, "target"))
    expected = expected_p3 + expected_p2 if cheap_first else expected_p2 + expected_p3
    assert walk(trials) == expected
    assert (2, 256) not in model.calls and (3, 64) not in model.calls
    assert len(model.calls) == (8 if cheap_first else 9)
    assert recompute(roundtrip(trials), budget=BUDGET_2D, target_error=1e-7) == choice

    # both reach the target; p3 n=32 (solve 0.094 s, error 9.5e-8) is cheaper than
    # p2 n=128 (solve 0.66 s), although p2 n=128 is more accurate (4.8e-8)
    assert chosen(trials, choice) == (3, 32)
    best = trials[choice.index]
    if not cheap_first:
        dear = next(t for t in trials if t.config == p2[4])
        assert dear.error < best.error and dear.time > best.time
    assert best.solve_time == pytest.approx(K * 97**2)
    assert choice == Choice(
        index=choice.index,
        why=WHY_TARGET,
        rule=RULE_NAME,
        target_error=TARGET_ERROR,
        budget=BUDGET_2D,
    )
    assert choice.why == "cheapest with error <= 1e-07"
    assert RULE_NAME == "frontier-1"


def test_no_rung_reaches_the_target_gives_the_most_accurate_within_budget():
    chains = [chain(1, [64, 128, 256, 512, 1024]), chain(2, [16, 32, 64])]
    model = Model()
    trials, choice = search(chains, model, budget=BUDGET_2D)

    assert walk(trials) == [
        (0, 0, 1, 64, None),
        (0, 1, 1, 128, None),
        (0, 2, 1, 256, None),
        (0, 3, 1, 512, "budget"),  # solve 2.63 s > 2 s: measured, stops the chain
        (1, 0, 2, 16, None),
        (1, 1, 2, 32, None),
        (1, 2, 2, 64, None),  # last rung: the chain simply ends
    ]
    assert (1, 1024) not in model.calls
    # p1 n=512 and p2 n=64 have the same error 0.1/2**18 = 3.81e-7, but p1 n=512 is
    # over the budget; every other trial is less accurate
    p1_512 = trials[3]
    assert p1_512.error == trials[6].error == pytest.approx(3.814697265625e-07)
    assert p1_512.solve_time > BUDGET_2D
    assert chosen(trials, choice) == (2, 64)
    assert choice.why == WHY_2D == "most accurate within budget 2 s"
    assert choice.rule == RULE_NAME and choice.budget == 2.0 and choice.target_error == 1e-7


def test_budget_stops_a_chain_and_the_over_budget_rung_is_never_chosen():
    model = Model()
    trials, choice = search([chain(1, [128, 256, 512, 1024, 2048])], model, budget=BUDGET_2D)
    assert model.calls == [(1, 128), (1, 256), (1, 512)]
    assert [t.stopped for t in trials] == [None, None, "budget"]
    assert trials[2].solve_time == pytest.approx(K * 513**2)  # 2.63 s
    assert trials[2].error < trials[1].error
    assert chosen(trials, choice) == (1, 256)
    assert choice.why == WHY_2D

    # a larger budget lets the same chain go one rung further and choose it
    model = Model()
    trials, choice = search([chain(1, [128, 256, 512, 1024])], model, budget=3.0)
    assert model.calls == [(1, 128), (1, 256), (1, 512), (1, 1024)]
    assert [t.stopped for t in trials] == [None, None, None, "budget"]
    assert chosen(trials, choice) == (1, 512)
    assert choice.why == "most accurate within budget 3 s"


def test_a_failed_rung_stops_its_chain_and_is_never_chosen():
    failures: dict[tuple[int, int], Trial | str] = {
        # a timeout: no numbers at all
        (2, 64): "F-Exec timeout: killed after 60 s",
        # a bad artifact that still reported a (meaningless) tiny error and a time
        (3, 16): Trial(
            config={},
            error=1e-12,
            time=0.5,
            t_null=T_NULL,
            failure="F-Artifact: wrong grid shape",
        ),
        # "ran" but the error is NaN: a failure, too
        (4, 8): Trial(config={}, error=math.nan, time=0.41, t_null=T_NULL),
    }
    model = Model(failures=failures)
    chains = [chain(2, [16, 32, 64, 128]), chain(3, [4, 8, 16, 32]), chain(4, [4, 8, 16])]
    seen: list[tuple[int, Trial]] = []
    trials, choice = search(
        chains, model, budget=BUDGET_2D, progress=lambda i, t: seen.append((i, t))
    )

    assert walk(trials) == [
        (0, 0, 2, 16, None),
        (0, 1, 2, 32, None),
        (0, 2, 2, 64, "failed"),
        (1, 0, 3, 4, None),
        (1, 1, 3, 8, None),
        (1, 2, 3, 16, "failed"),
        (2, 0, 4, 4, None),
        (2, 1, 4, 8, "failed"),
    ]
    assert (2, 128) not in model.calls and (3, 32) not in model.calls
    assert (4, 16) not in model.calls
    assert seen == list(enumerate(trials))

    assert trials[2].failure == "F-Exec timeout: killed after 60 s"
    assert trials[2].error is None and trials[2].solve_time is None
    assert trials[5].failure == "F-Artifact: wrong grid shape" and trials[5].error == 1e-12
    # the NaN error became an explicit failure, and None in the table
    assert trials[7].failed and "nan" in trials[7].failure and trials[7].error is None
    assert trials[7].time == 0.41

    # remaining: p2 n=32 3.05e-6, p3 n=8 2.44e-5, p4 n=4 9.77e-5, ... -> p2 n=32
    assert chosen(trials, choice) == (2, 32)
    assert choice.why == WHY_2D
    assert not trials[choice.index].failed


def test_all_failed_raises_frontier_error_listing_the_trials():
    failures: dict[tuple[int, int], Trial | str] = {
        (1, 8): "F-Exec crash: segmentation fault",
        (2, 4): "F-Exec timeout: killed after 60 s",
    }
    model = Model(failures=failures)
    with pytest.raises(FrontierError) as info:
        search([chain(1, [8, 16]), chain(2, [4, 8])], model, budget=BUDGET_2D)
    assert model.calls == [(1, 8), (2, 4)]
    message = str(info.value)
    assert "segmentation fault" in message and "killed after 60 s" in message
    assert "'degree': 1, 'n': 8" in message and "'degree': 2, 'n': 4" in message
    assert "chain 1 rung 0" in message


def test_everything_over_budget_raises_frontier_error():
    model = Model()
    with pytest.raises(FrontierError, match=r"budget of 0\.5 s") as info:
        search([chain(1, [512, 1024]), chain(2, [512])], model, budget=0.5)
    assert model.calls == [(1, 512), (2, 512)]
    assert "solve=2.632s" in str(info.value)


def test_tie_breaking():
    def trial(error: float, time: float) -> Trial:
        return Trial(config={"id": len(made)}, error=error, time=time, t_null=0.0)

    made: list[Trial] = []
    for error, time in [(5e-8, 1.0), (2e-8, 1.0), (2e-8, 1.0), (1e-9, 1.5)]:
        made.append(trial(error, time))
    # same time: smaller error; same time and error: the earlier measurement
    assert choose(made, budget=2.0).index == 1
    assert choose(made, budget=2.0).why == WHY_TARGET

    made = []
    for error, time in [(3e-6, 1.2), (1e-6, 1.9), (1e-6, 1.1), (1e-6, 1.1), (1e-6, 0.9)]:
        made.append(trial(error, time))
    # same error: the smaller total time t; then the earlier measurement
    assert choose(made, budget=2.0).index == 4
    made.pop()
    assert choose(made, budget=2.0).index == 2
    assert choose(made, budget=2.0).why == WHY_2D

    # the error target and the budget are inclusive
    edge = [
        Trial(config={"a": 1}, error=1e-7, time=2.5, t_null=0.5),
        Trial(config={"a": 2}, error=1e-6, time=0.6, t_null=0.5),
    ]
    assert edge[0].solve_time == 2.0
    assert choose(edge, budget=2.0) == Choice(0, WHY_TARGET, RULE_NAME, 1e-7, 2.0)
    assert choose(edge, budget=1.99).index == 1
    assert choose(edge, budget=2.0, target_error=9e-8).why == WHY_2D
    assert choose(edge, budget=2.0, target_error=9e-8).index == 0


def test_duplicate_configs_are_measured_once():
    # the shared rung p1 n=64 does not stop its chains: both walk past it
    model = Model()
    seen: list[int] = []
    chains = [chain(1, [16, 64, 128]), chain(1, [32, 64, 256])]
    trials, choice = search(chains, model, budget=BUDGET_2D, progress=lambda i, t: seen.append(i))
    assert model.calls == [(1, 16), (1, 64), (1, 128), (1, 32), (1, 256)]
    assert walk(trials) == [
        (0, 0, 1, 16, None),
        (0, 1, 1, 64, None),
        (0, 2, 1, 128, None),
        (1, 0, 1, 32, None),
        (1, 2, 1, 256, None),
    ]
    assert seen == [0, 1, 2, 3, 4]
    assert chosen(trials, choice) == (1, 256)

    # a shared rung that reached the target stops the second chain too
    model = Model()
    chains = [chain(3, [8, 32, 64]), [{"degree": 3, "n": 32}, *chain(3, [64, 128])]]
    trials, choice = search(chains, model, budget=BUDGET_2D)
    assert model.calls == [(3, 8), (3, 32)]
    assert walk(trials) == [(0, 0, 3, 8, None), (0, 1, 3, 32, "target")]
    assert chosen(trials, choice) == (3, 32) and choice.why == WHY_TARGET

    # and a shared failed rung stops the second chain as well
    model = Model(failures={(2, 16): "F-Exec crash"})
    trials, choice = search(
        [chain(2, [8, 16, 32]), chain(2, [16, 32]), chain(2, [4])], model, budget=BUDGET_2D
    )
    assert model.calls == [(2, 8), (2, 16), (2, 4)]
    assert [t.stopped for t in trials] == [None, "failed", None]
    assert chosen(trials, choice) == (2, 8)


def test_2d_and_3d_budgets():
    assert (BUDGET_2D, BUDGET_3D) == (2.0, 8.0)
    assert budget_for(2) == 2.0 and budget_for(3) == 8.0
    for bad in (1, 4, 0, True, 2.0, "2"):
        with pytest.raises(ValueError):
            budget_for(bad)  # type: ignore[arg-type]

    # 3-D p1: n=32 solve 0.36 s, n=64 solve 2.75 s, n=128 solve 21.5 s
    ladder = [chain(1, [16, 32, 64, 128])]
    model = Model(dim=3)
    trials, choice = search(ladder, model, budget=budget_for(2))
    assert model.calls == [(1, 16), (1, 32), (1, 64)]
    assert chosen(trials, choice) == (1, 32)
    assert choice.budget == 2.0

    model = Model(dim=3)
    trials, choice = search(ladder, model, budget=budget_for(3))
    assert model.calls == [(1, 16), (1, 32), (1, 64), (1, 128)]
    assert [t.stopped for t in trials] == [None, None, None, "budget"]
    assert trials[2].solve_time == pytest.approx(K * 65**3)
    assert chosen(trials, choice) == (1, 64)
    assert choice.why == "most accurate within budget 8 s" and choice.budget == 8.0


# -- inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chains", "match"),
    [
        ([], "empty"),
        ([[]], "chain 0 is empty"),
        ([chain(1, [8]), []], "chain 1 is empty"),
        ([[{"degree": 1, "n": 8}, ("degree", 1)]], "chain 0 rung 1 must be a settings dict"),
        ([["degree=1"]], "settings dict"),
        ({"degree": 1}, "list of chains"),
        ([{"degree": 1, "n": 8}], "chain 0 must be a list"),
        ("abc", "list of chains"),
    ],
)
def test_bad_ladders_are_rejected_before_measuring(chains, match):
    model = Model()
    with pytest.raises(ValueError, match=match):
        search(chains, model, budget=BUDGET_2D)
    assert model.calls == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"budget": 0.0},
        {"budget": -1.0},
        {"budget": math.nan},
        {"budget": math.inf},
        {"budget": 2.0, "target_error": 0.0},
        {"budget": 2.0, "target_error": -1e-7},
        {"budget": 2.0, "target_error": math.nan},
    ],
)
def test_bad_budget_or_target_is_rejected(kwargs):
    model = Model()
    with pytest.raises(ValueError):
        search([chain(1, [8])], model, **kwargs)
    assert model.calls == []
    with pytest.raises(ValueError):
        choose([model({"degree": 1, "n": 8})], **kwargs)


def test_an_exception_in_measure_propagates():
    class HarnessBroke(Exception):
        pass

    calls: list[dict[str, Any]] = []

    def measure(config: dict[str, Any]) -> Trial:
        calls.append(config)
        if config["n"] == 16:
            raise HarnessBroke("sandbox unavailable")
        return Model()(config)

    with pytest.raises(HarnessBroke, match="sandbox unavailable"):
        search([chain(1, [8, 16, 32]), chain(2, [8])], measure, budget=BUDGET_2D)
    assert [c["n"] for c in calls] == [8, 16]


def test_measure_must_answer_the_config_it_was_asked():
    def wrong_config(config: dict[str, Any]) -> Trial:
        return Trial(config={**config, "n": 999}, error=1e-3, time=1.0, t_null=T_NULL)

    with pytest.raises(ValueError, match="when asked for"):
        search([chain(1, [8])], wrong_config, budget=BUDGET_2D)

    def not_a_trial(config: dict[str, Any]) -> Any:
        return {"error": 1e-3}

    with pytest.raises(TypeError, match="not a Trial"):
        search([chain(1, [8])], not_a_trial, budget=BUDGET_2D)


def test_search_fills_chain_rung_and_stopped_and_copies_the_config():
    def measure(config: dict[str, Any]) -> Trial:
        # a measure that sets chain/rung/stopped wrongly: the search overrides them
        return attrs.evolve(Model()(config), chain=7, rung=7, stopped="budget")

    ladder = [chain(3, [8, 32])]
    trials, _ = search(ladder, measure, budget=BUDGET_2D)
    assert walk(trials) == [(0, 0, 3, 8, None), (0, 1, 3, 32, "target")]
    ladder[0][0]["n"] = 1000  # the caller's dicts are not the stored ones
    assert trials[0].config == {"degree": 3, "n": 8}


def test_trial_fields_are_checked():
    with pytest.raises(ValueError):
        Trial(config={}, error=-1e-3, time=1.0, t_null=0.1)
    with pytest.raises(ValueError):
        Trial(config={}, error=1e-3, time=-1.0, t_null=0.1)
    with pytest.raises(ValueError):
        Trial(config={}, error=1e-3, time=1.0, t_null=math.nan)
    with pytest.raises(TypeError):
        Trial(config={}, error="1e-3", time=1.0, t_null=0.1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Trial(config=[("n", 8)], error=1e-3, time=1.0, t_null=0.1)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Trial(config={}, error=1e-3, time=1.0, t_null=0.1, stopped="bored")
    with pytest.raises(ValueError):
        Trial(config={}, error=1e-3, time=1.0, t_null=0.1, rung=-1)
    with pytest.raises(TypeError):
        Trial(config={}, error=None, time=None, t_null=0.1, failure="")
    ok = Trial(config={}, error=1e-3, time=1.0, t_null=0.25)
    assert ok.solve_time == 0.75 and not ok.failed and ok.problem is None
    # numpy scalars (what a measure computes with) are stored as plain floats
    numpy = pytest.importorskip("numpy")
    np_trial = Trial(config={}, error=numpy.float32(0.5), time=numpy.int64(2), t_null=0.5)
    assert type(np_trial.error) is float and np_trial.error == 0.5 and np_trial.time == 2.0
    assert json.dumps(trials_to_table([np_trial]), allow_nan=False)
    assert Trial(config={}, error=1e-3, time=math.inf, t_null=0.25).failed


# -- tables ---------------------------------------------------------------------------


def _mixed_trials() -> list[Trial]:
    failures: dict[tuple[int, int], Trial | str] = {
        (2, 64): "F-Exec timeout: killed after 60 s",
        (3, 16): Trial(config={}, error=0.5, time=0.45, t_null=T_NULL, failure="F-Artifact: x"),
    }
    model = Model(failures=failures)
    chains = [
        chain(1, [128, 256, 512, 1024]),
        chain(2, [16, 32, 64, 128]),
        chain(3, [4, 8, 16]),
        chain(4, [8, 16, 32]),
    ]
    trials, _ = search(chains, model, budget=BUDGET_2D)
    assert {t.stopped for t in trials} == {None, "budget", "failed", "target"}
    return trials


def test_table_round_trip():
    trials = _mixed_trials()
    table = trials_to_table(trials)
    assert list(table[0]) == [
        "config",
        "error",
        "time",
        "t_null",
        "solve_time",
        "failure",
        "chain",
        "rung",
        "stopped",
    ]
    assert trials_from_table(table) == trials
    assert trials_from_table(roundtrip(trials)) == trials
    failed = next(row for row in table if row["failure"] == "F-Exec timeout: killed after 60 s")
    assert failed["error"] is None and failed["time"] is None and failed["solve_time"] is None
    assert failed["stopped"] == "failed"
    assert table[0]["solve_time"] == pytest.approx(K * 129**2)
    assert trials_to_table([]) == [] and trials_from_table([]) == []


def _row() -> dict[str, Any]:
    trial = Trial(config={"degree": 2, "n": 8}, error=1e-4, time=0.6, t_null=0.4)
    return trials_to_table([trial])[0]


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(row: dict[str, Any]) -> None:
        row[key] = value

    return change


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    def change(row: dict[str, Any]) -> None:
        del row[key]

    return change


HOSTILE_ROWS: dict[str, Callable[[dict[str, Any]], None]] = {
    "missing config": _drop("config"),
    "missing t_null": _drop("t_null"),
    "missing stopped": _drop("stopped"),
    "unknown key": _set("chosen", True),
    "error as string": _set("error", "1e-4"),
    "error as bool": _set("error", True),
    "error NaN": _set("error", math.nan),
    "error infinite": _set("error", math.inf),
    "error negative": _set("error", -1e-4),
    "time negative": _set("time", -0.6),
    "time NaN": _set("time", math.nan),
    "time as list": _set("time", [0.6]),
    "t_null missing value": _set("t_null", None),
    "t_null negative": _set("t_null", -0.1),
    "solve_time forged": _set("solve_time", 0.01),
    "solve_time without time": _set("solve_time", None),
    "config as list": _set("config", [["degree", 2]]),
    "config as string": _set("config", "degree=2"),
    "chain negative": _set("chain", -1),
    "chain as float": _set("chain", 0.0),
    "rung as bool": _set("rung", False),
    "stopped unknown": _set("stopped", "bored"),
    "failure as number": _set("failure", 1),
    "failure empty": _set("failure", ""),
    "no failure but no error": _set("error", None),
}


@pytest.mark.parametrize("hostile", sorted(HOSTILE_ROWS))
def test_hostile_table_rows_are_rejected(hostile):
    row = _row()
    assert trials_from_table([row])  # the untouched row is fine
    HOSTILE_ROWS[hostile](row)
    with pytest.raises(ValueError, match="row 1"):
        trials_from_table([_row(), row])


@pytest.mark.parametrize(
    "table",
    [{"rows": []}, "[]", None, 3, [None], [[("config", {})]], [_row(), "row"]],
    ids=["dict", "string", "none", "int", "row none", "row list", "row string"],
)
def test_hostile_tables_are_rejected(table):
    with pytest.raises(ValueError):
        trials_from_table(table)


def test_a_failed_row_may_keep_its_numbers_or_not():
    row = _row()
    row["failure"] = "F-Artifact: wrong shape"
    assert trials_from_table([row])[0].failed
    row.update(error=None, time=None, solve_time=None)
    assert trials_from_table([row])[0].failed


# -- recompute ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chains", "dim", "budget"),
    [
        ([chain(2, [8, 16, 32, 64, 128, 256]), chain(3, [4, 8, 16, 32, 64])], 2, BUDGET_2D),
        ([chain(1, [64, 128, 256, 512, 1024]), chain(2, [16, 32, 64])], 2, BUDGET_2D),
        ([chain(1, [16, 32, 64, 128]), chain(2, [8, 16, 32])], 3, BUDGET_3D),
        ([chain(1, [16, 32, 64, 128]), chain(2, [8, 16, 32])], 3, BUDGET_2D),
    ],
)
def test_recompute_gives_the_search_choice(chains, dim, budget):
    trials, choice = search(chains, Model(dim=dim), budget=budget)
    table = roundtrip(trials)
    assert recompute(table, budget=budget, target_error=TARGET_ERROR) == choice
    # and a stored table re-checked under another rule parameter can differ
    assert recompute(copy.deepcopy(table), budget=budget, target_error=1e-12).why.startswith(
        "most accurate"
    )


def test_recompute_on_the_mixed_table():
    trials = _mixed_trials()
    direct = choose(trials, budget=BUDGET_2D)
    assert recompute(roundtrip(trials), budget=BUDGET_2D, target_error=TARGET_ERROR) == direct
    # p4 n=16 reaches the target (9.5e-8) cheapest: solve 0.0042 s
    assert trials[direct.index].config == {"degree": 4, "n": 16}
    assert direct.why == WHY_TARGET

    # the same trials met again, one chain each, give the same choice
    def replay(config: dict[str, Any]) -> Trial:
        return next(t for t in trials if t.config == config)

    again, choice = search([[t.config] for t in trials], replay, budget=BUDGET_2D)
    assert [t.config for t in again] == [t.config for t in trials]
    assert choice == direct
    with pytest.raises(ValueError):
        recompute(roundtrip(trials), budget=0.0, target_error=TARGET_ERROR)


class CompiledModel(Model):
    """A library whose every run pays a fixed per-problem compile cost of 3 s."""

    def time(self, p: int, n: int) -> float:
        return T_NULL + 3.0 + K * (p * n + 1) ** self.dim


def test_budget_floor_when_no_first_rung_fits_the_budget():
    """Every first rung costs 3 s of compilation beyond t_null: nothing fits 2 s, so the
    budget applies beyond the fastest first rung (3 s + its tiny solve), the walk goes on
    with it, and the stored table recomputes to the same choice and budget."""
    from pdeagent.evaluation.frontier import effective_budget, search_with_floor

    chains = [chain(3, [4, 8, 16, 32, 64, 128]), chain(2, [8, 16, 32, 64, 128, 256])]
    model = CompiledModel()
    with pytest.raises(FrontierError, match="no trial ran within the solve budget of 2 s"):
        search(chains, CompiledModel(), budget=BUDGET_2D)
    trials, choice = search_with_floor(chains, model, budget=BUDGET_2D)
    fastest_first = 3.0 + K * (3 * 4 + 1) ** 2  # p3 n=4 beats p2 n=8 (17^2)
    assert choice.budget == pytest.approx(BUDGET_2D + fastest_first)
    assert effective_budget(trials, BUDGET_2D) == pytest.approx(choice.budget)
    # with 2 s beyond the compile cost the solver reaches the target as without it: p3 n=32
    assert chosen(trials, choice) == (3, 32) and choice.why == WHY_TARGET
    assert len(model.calls) == len(set(model.calls))  # the first walk's rungs reused
    table = roundtrip(trials)
    assert recompute(table, budget=BUDGET_2D, target_error=TARGET_ERROR) == choice
    # a library that fits the budget keeps it: the floor never widens a reachable budget
    plain, plain_choice = search_with_floor(chains, Model(), budget=BUDGET_2D)
    assert plain_choice.budget == BUDGET_2D == effective_budget(plain, BUDGET_2D)
