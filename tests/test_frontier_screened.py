"""The screened walk of the frontier search (rule frontier-2): the stops it adds
(predicted over budget, pruned), the chain callback, and that its tables recompute.

Solver models as in tests/test_frontier.py (error = 0.1 h**(p+1), solve = 1e-5 dofs s),
or a table of (error, solve seconds) per configuration where the numbers matter exactly.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pdeagent.evaluation.frontier import (
    BUDGET_2D,
    PREDICTED_BUDGET_MARGIN,
    PRUNE_FACTOR,
    RULE_NAME,
    SCREENED_RULE_NAME,
    STOP_PREDICTED,
    STOP_PRUNED,
    Trial,
    recompute,
    search,
    search_with_floor,
    trials_from_table,
    trials_to_table,
)
from tests.test_frontier import T_NULL, Model, chain, chosen, walk


class Table:
    """Measures from a table {n: (error, solve seconds)} of one degree; records calls."""

    def __init__(self, rows: dict[int, tuple[float, float]]):
        self.rows = rows
        self.calls: list[int] = []

    def __call__(self, config: dict[str, Any]) -> Trial:
        self.calls.append(config["n"])
        error, solve = self.rows[config["n"]]
        return Trial(config=config, error=error, time=T_NULL + solve, t_null=T_NULL)


def test_a_chain_stops_before_a_rung_predicted_over_the_budget():
    # p=1: solve 0.042, 0.166, 0.66, 2.63 s; at n=256 the next is predicted at
    # 0.66 * 0.66 / 0.166 = 2.62 s > 1.1 * 2 s, so n=512 is never run
    ladder = [chain(1, [64, 128, 256, 512])]
    model = Model()
    trials, choice = search(ladder, model, budget=BUDGET_2D, screened=True)
    assert walk(trials) == [
        (0, 0, 1, 64, None),
        (0, 1, 1, 128, None),
        (0, 2, 1, 256, STOP_PREDICTED),
    ]
    assert (1, 512) not in model.calls
    assert chosen(trials, choice) == (1, 256) and choice.rule == SCREENED_RULE_NAME

    # frontier-1 walks the same chain to the rung over the budget, and chooses the same
    model = Model()
    trials, choice = search(ladder, model, budget=BUDGET_2D)
    assert [t.stopped for t in trials] == [None, None, None, "budget"]
    assert (1, 512) in model.calls
    assert chosen(trials, choice) == (1, 256) and choice.rule == RULE_NAME


@pytest.mark.parametrize(
    ("solves", "stopped_at"),
    [
        ([0.5, 1.0, 2.0], 2),  # at n=2: 1.0 * 2 = 2.0 <= 2.2, so n=3 runs (within budget)
        ([0.5, 1.1, 2.0], 1),  # at n=2: 1.1 * 2.2 = 2.42 > 2.2: n=3 is not run
        ([0.5, 0.4, 2.0], 2),  # no growth from n=1 to n=2: nothing to predict from
    ],
)
def test_the_prediction_margin(solves, stopped_at):
    assert PREDICTED_BUDGET_MARGIN == 1.1
    rows = {n: (1e-3 / n, s) for n, s in zip((1, 2, 3), solves, strict=True)}
    table = Table(rows)
    trials, _ = search([chain(1, [1, 2, 3])], table, budget=2.0, screened=True)
    assert len(trials) == stopped_at + 1
    assert trials[-1].stopped == STOP_PREDICTED
    assert table.calls == [1, 2, 3][: stopped_at + 1]


def test_a_chain_that_cannot_beat_the_best_error_within_budget_is_pruned():
    # no rung reaches a target of 1e-12. p=3 (walked first) reaches 3.7e-10 at n=128
    # (solve 1.48 s; n=256 predicted at 5.9 s). p=1 at n=64 extrapolates to
    # 2.44e-5 * (2 / 0.0423) ** -1.02 = 4.8e-7 at the budget: far above 3 * 3.7e-10
    ladder = [chain(3, [16, 32, 64, 128, 256]), chain(1, [32, 64, 128, 256])]
    model = Model()
    trials, choice = search(ladder, model, budget=BUDGET_2D, target_error=1e-12, screened=True)
    assert walk(trials) == [
        (0, 0, 3, 16, None),
        (0, 1, 3, 32, None),
        (0, 2, 3, 64, None),
        (0, 3, 3, 128, STOP_PREDICTED),
        (1, 0, 1, 32, None),
        (1, 1, 1, 64, STOP_PRUNED),
    ]
    assert (1, 128) not in model.calls and (1, 256) not in model.calls
    assert chosen(trials, choice) == (3, 128)
    assert choice.why == "most accurate within budget 2 s"


def test_pruning_compares_with_the_factor():
    assert PRUNE_FACTOR == 3.0
    best = {1: (1e-4, 0.1), 2: (1e-6, 0.2)}  # the first chain's best within budget: 1e-6
    # second chain: error 4e-5 -> 2e-5 while the solve doubles 0.5 -> 1.0 s: slope -1,
    # so 1e-5 at the 2 s budget: pruned against 1e-6 (10x), kept against 1e-5 * 0.5
    slow = {10: (4e-5, 0.5), 20: (2e-5, 1.0), 30: (1e-7, 1.5)}

    def measure(config: dict[str, Any]) -> Trial:
        error, solve = (best if config["degree"] == 2 else slow)[config["n"]]
        return Trial(config=config, error=error, time=T_NULL + solve, t_null=T_NULL)

    ladder = [chain(2, [1, 2]), chain(1, [10, 20, 30])]
    trials, _ = search(ladder, measure, budget=2.0, target_error=1e-12, screened=True)
    assert [t.stopped for t in trials][-1] == STOP_PRUNED and len(trials) == 4

    best[2] = (5e-6, 0.2)  # 1e-5 at the budget is below 3 * 5e-6: the chain goes on
    trials, choice = search(ladder, measure, budget=2.0, target_error=1e-12, screened=True)
    assert len(trials) == 5 and trials[choice.index].config == {"degree": 1, "n": 30}


def test_no_pruning_once_a_rung_reached_the_target():
    # p=3 reaches 1e-7 at n=32 (solve 0.094 s); p=1 then stops on the dominated rule
    # (n=128: 0.166 s > 0.094 s), never as pruned, though it could never reach 1e-7
    ladder = [chain(3, [16, 32]), chain(1, [32, 64, 128, 256])]
    trials, choice = search(ladder, Model(), budget=BUDGET_2D, screened=True)
    assert [t.stopped for t in trials] == [None, "target", None, None, "dominated"]
    assert chosen(trials, choice) == (3, 32)


def test_on_chain_is_told_each_chain_and_the_budget_of_each_walk():
    # every first rung takes 3 s > 2 s: the floor walks again with 2 + 3 = 5 s
    rows = {1: (1e-3, 3.0), 2: (1e-4, 4.5), 3: (1e-5, 12.0)}
    seen: list[tuple[int, list[int], float]] = []

    def on_chain(index: int, configs: list[dict[str, Any]], budget: float) -> None:
        seen.append((index, [c["n"] for c in configs], budget))

    table = Table(rows)
    trials, choice = search_with_floor(
        [chain(1, [1, 2, 3])], table, budget=2.0, screened=True, on_chain=on_chain
    )
    assert seen == [(0, [1, 2, 3], 2.0), (0, [1, 2, 3], 5.0)]
    # n=1 is measured once; at n=2, n=3 is predicted at 4.5 * 1.5 = 6.75 s > 1.1 * 5 s
    assert table.calls == [1, 2]
    assert [t.stopped for t in trials] == [None, STOP_PREDICTED]
    assert choice.budget == 5.0 and trials[choice.index].config["n"] == 2
    assert choice.rule == SCREENED_RULE_NAME


def test_screened_tables_round_trip_and_recompute():
    ladder = [chain(3, [16, 32, 64, 128, 256]), chain(1, [32, 64, 128, 256])]
    trials, choice = search(ladder, Model(), budget=BUDGET_2D, target_error=1e-12, screened=True)
    table = json.loads(json.dumps(trials_to_table(trials), allow_nan=False))
    assert trials_from_table(table) == trials  # the new stop reasons are valid in a table
    assert recompute(table, budget=BUDGET_2D, target_error=1e-12).index == choice.index
