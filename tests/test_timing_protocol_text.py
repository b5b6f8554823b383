"""The prompt's evaluation section states the timing protocol as the evaluator runs it
(issue #24, SPEC §7): what is timed, how many timed repeats and their statistic, that
they follow a passed accuracy run, the state every run starts from and the wall-clock
limit, all generated from the values the evaluator resolves (not retyped numbers)."""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

import attrs
import pytest

from pdeagent.cases.model import (
    ALL_RUNS_TIMED_PROTOCOL,
    LEGACY_PROTOCOL,
    PRISTINE_PROTOCOL,
    Thresholds,
    case_from_dict,
)
from pdeagent.evaluation import pipeline
from pdeagent.evaluation.pipeline import GradingPolicy
from pdeagent.evaluation.timing import timed_repeats
from pdeagent.prompts.builder import build_prompt, timing_protocol
from pdeagent.sandbox.base import ExecutionResult
from pdeagent.stages import Track

from .test_prompts import PIECES, TRACK, record

HEADER = "Timing protocol (how stage 3 measures the runtime):"
PRISTINE_LINE = "Nothing a run writes survives it, so caching compiled kernels"
LEGACY_LINE = "the cache directory is kept across the runs of your program"
COMPILE_LINE = "the compile time is recorded separately and is not part of the runtime"


def make(protocol: int | None = None, *, drop: bool = False, **config: Any):
    data = record("poisson")
    data["evaluation_config"].update(config)
    thresholds = data["evaluation_metadata"]["thresholds"]
    if drop:
        thresholds.pop("demo")
    elif protocol is not None:
        thresholds["demo"]["protocol"] = protocol
    return case_from_dict(data)


def section(prompt: str) -> str:
    """The timing protocol paragraph of section 5."""
    start = prompt.index(HEADER)
    end = prompt.index("\nSandbox:", start)
    assert prompt.index("## 5. Output") < start < prompt.index("## 6.")
    return prompt[start:end]


def test_what_is_timed_and_the_statistic() -> None:
    text = section(build_prompt(make(PRISTINE_PROTOCOL), TRACK, PIECES))
    assert "from the start of its process to its exit" in text
    assert "measured by the harness outside the program" in text
    assert "JIT compilation" in text and "importing or loading libraries" in text
    assert "Only after it passed, the program is run 3 more times" in text
    assert "the runtime is the median of the 3 wall-clock times" in text
    assert "must pass stages 1 and 2 as well" in text
    assert "hard wall-clock limit of 321 seconds" in text
    assert PRISTINE_LINE in text and "fresh, empty caches" in text
    assert LEGACY_LINE not in text
    assert COMPILE_LINE not in text  # a Python track compiles nothing ahead of its runs


def test_protocol_3_states_that_every_run_is_timed() -> None:
    text = section(build_prompt(make(ALL_RUNS_TIMED_PROTOCOL), TRACK, PIECES))
    assert "the program is run 3 times, one at a time, and every run is timed" in text
    assert "The first run is also the accuracy run of stages 1 and 2" in text
    assert "only after it passed, the program is run 2 more times" in text
    assert "the runtime is the median of the 3 wall-clock times" in text
    assert "its time does not count" not in text
    assert "must pass stages 1 and 2 as well" in text
    assert PRISTINE_LINE in text and "(the accuracy run and each timed run)" not in text
    one = build_prompt(make(ALL_RUNS_TIMED_PROTOCOL, timed_repeats=1), TRACK, PIECES)
    assert "the program is run 1 time, one at a time" in section(one)
    assert "the runtime is its wall-clock time" in section(one)
    two = build_prompt(make(ALL_RUNS_TIMED_PROTOCOL, timed_repeats=2), TRACK, PIECES)
    assert "the program is run 1 more time;" in section(two)


def test_the_statistic_stated_is_the_one_timed_repeats_computes() -> None:
    walls = iter([0.9, 5.0, 0.2, 1.7, 0.4])

    def run() -> ExecutionResult:
        return ExecutionResult(0, None, False, False, next(walls), "", "")

    result = timed_repeats(run, 5)
    assert result.samples == [0.9, 5.0, 0.2, 1.7, 0.4]
    assert result.median == statistics.median(result.samples) == 0.9
    text = section(build_prompt(make(PRISTINE_PROTOCOL, timed_repeats=5), TRACK, PIECES))
    assert "the runtime is the median of the 5 wall-clock times" in text


def test_repeats_and_limit_follow_the_case_and_the_run_policy() -> None:
    case = make(PRISTINE_PROTOCOL, timed_repeats=5, timeout_sec=47.5)
    text = section(build_prompt(case, TRACK, PIECES))
    assert "run 5 more times" in text and "hard wall-clock limit of 47.5 seconds" in text
    policy = GradingPolicy(timed_repeats=7, timeout_sec=90.0)
    text = section(build_prompt(case, TRACK, PIECES, policy=policy))
    assert "run 7 more times" in text and "median of the 7 wall-clock times" in text
    assert "hard wall-clock limit of 90 seconds" in text
    prompt = build_prompt(case, TRACK, PIECES, policy=GradingPolicy(timed_repeats=1))
    assert "run 1 more time (the timed runs)" in section(prompt)
    assert "the wall-clock time of that run" in section(prompt)
    assert "within the hard wall-clock limit of 47.5 seconds" in prompt  # stage 1 agrees


def test_protocol_of_the_shipped_thresholds() -> None:
    legacy = section(build_prompt(make(LEGACY_PROTOCOL), TRACK, PIECES))
    assert LEGACY_LINE in legacy and PRISTINE_LINE not in legacy
    pristine = section(build_prompt(make(PRISTINE_PROTOCOL), TRACK, PIECES))
    assert PRISTINE_LINE in pristine and LEGACY_LINE not in pristine
    # a run graded with a local calibration passes the protocol its thresholds carry
    given = section(build_prompt(make(LEGACY_PROTOCOL), TRACK, PIECES, protocol=2))
    assert given == pristine
    with pytest.raises(ValueError, match="unknown timing protocol 9"):
        build_prompt(make(PRISTINE_PROTOCOL), TRACK, PIECES, protocol=9)


def test_current_protocol_constant_drives_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without shipped thresholds the evaluator grades under CURRENT_PROTOCOL; so does
    the prompt, read from the evaluator's constant at render time."""
    case = make(drop=True)
    assert pipeline.CURRENT_PROTOCOL == ALL_RUNS_TIMED_PROTOCOL
    current = section(build_prompt(case, TRACK, PIECES))
    assert PRISTINE_LINE in current and "every run is timed" in current
    monkeypatch.setattr(pipeline, "CURRENT_PROTOCOL", LEGACY_PROTOCOL)
    assert timing_protocol(case, TRACK)["protocol"] == LEGACY_PROTOCOL
    text = section(build_prompt(case, TRACK, PIECES))
    assert LEGACY_LINE in text and PRISTINE_LINE not in text


def test_compiled_track_states_compile_time_apart() -> None:
    cpp = Track("democpp", "DemoCpp", "cpp", "solver.cpp")
    data = record("poisson")
    data["supported_libraries"].append("democpp")
    text = section(build_prompt(case_from_dict(data), cpp, PIECES))
    assert COMPILE_LINE in text
    assert timing_protocol(case_from_dict(data), cpp)["compiled"] is True


# --------------------------------------------------------------------------- the evaluator


@pytest.mark.sandbox
@pytest.mark.parametrize("protocol", [ALL_RUNS_TIMED_PROTOCOL, PRISTINE_PROTOCOL, LEGACY_PROTOCOL])
def test_stated_protocol_is_what_the_evaluator_does(host, track, case, protocol) -> None:
    """Grade the sample track's baseline with the protocol and repeats the prompt states:
    as many timed runs as stated (protocol 3: the accuracy run among them), each in a
    fresh work dir, and per run a fresh cache dir (pristine) or one cache dir for all
    runs (legacy)."""
    from pdeagent.cases.agent_view import agent_view
    from pdeagent.sandbox import default_sandbox

    from .test_sample_track import BASELINE

    shipped = case.evaluation_metadata.thresholds["numpy_fd"]
    ours = attrs.evolve(shipped, protocol=protocol, t_null=0.5 if protocol >= 2 else None)
    assert isinstance(ours, Thresholds)
    meta = attrs.evolve(case.evaluation_metadata, thresholds={"numpy_fd": ours})
    graded = attrs.evolve(case, evaluation_metadata=meta)
    policy = GradingPolicy(timed_repeats=3)
    pieces = host.hook.pdeagent_prompt_pieces(
        track=track, case_view=agent_view(graded, "numpy_fd"), mode="single"
    )
    text = section(build_prompt(graded, track, pieces, policy=policy))
    all_timed = protocol == ALL_RUNS_TIMED_PROTOCOL
    assert ("run 2 more times" if all_timed else "run 3 more times") in text
    assert (PRISTINE_LINE in text) == (protocol >= PRISTINE_PROTOCOL)
    with tempfile.TemporaryDirectory(prefix="pdeagent-test-", dir="/var/tmp") as d:
        root = Path(d) / "eval"
        report = pipeline.evaluate_source(
            host,
            track,
            graded,
            BASELINE.read_text(),
            sandbox=default_sandbox(),
            workroot=root,
            thresholds=pipeline.resolve_thresholds(graded, "numpy_fd", policy),
            policy=policy,
        )
        execs = sorted(p.name for p in root.glob("exec-*"))
        caches = sorted(p.name for p in root.glob("cache*"))
    assert report.verdict == "PASS", report.message
    assert report.protocol == protocol
    assert len(report.runtime_samples) == 3
    assert report.runtime_sec == statistics.median(report.runtime_samples)
    assert len(report.repeat_errors) == 3  # every timed run was checked and scored
    runs = 3 if all_timed else 4
    assert execs == [f"exec-{k}" for k in range(runs)]
    if all_timed:  # the accuracy run is the first timing sample
        assert report.runtime_samples[0] == report.accuracy_run_wall_sec
    if protocol >= PRISTINE_PROTOCOL:
        assert caches == [f"cache-{k}" for k in range(runs)]
    else:
        assert caches == ["cache"]
