"""The sample track runs pdeagent's conformance suite, as any track package would: its
hooks answer for its own track only, its prompt renders for every case of its cases file,
its calibration baseline passes them through the real pipeline, and the hostile
submissions of ``pdeagent.adversarial`` are held on the default sandbox backend. Also the
"runtime required" helpers a track's tests use."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdeagent.testing import TrackConformance, require_runtime, runtime_missing


class TestSampleFdConformance(TrackConformance):
    track_name = "numpy_fd"
    cases_file = Path(__file__).resolve().parents[1] / "cases.jsonl"
    baseline_sample = 1


def _missing() -> None:
    from pdeagent.stages import TrackUnavailable

    raise TrackUnavailable("NumPy runtime missing: pip install numpy")


@pytest.mark.parametrize("value", ["", "0", "no", "false"])
def test_a_missing_runtime_skips_unless_required(monkeypatch, value):
    monkeypatch.setenv("PDEAGENT_REQUIRE_RUNTIMES", value)
    with pytest.raises(pytest.skip.Exception, match="pip install numpy"):
        require_runtime(_missing)


@pytest.mark.parametrize("value", ["1", "true", "YES", "True"])
def test_a_missing_runtime_fails_when_runtimes_are_required(monkeypatch, value):
    monkeypatch.setenv("PDEAGENT_REQUIRE_RUNTIMES", value)
    with pytest.raises(pytest.fail.Exception, match="pip install numpy"):
        require_runtime(_missing)
    with pytest.raises(pytest.fail.Exception, match="chromium not installed"):
        runtime_missing("chromium not installed")


def test_a_present_runtime_returns_what_the_check_found(monkeypatch):
    monkeypatch.setenv("PDEAGENT_REQUIRE_RUNTIMES", "1")
    assert require_runtime(lambda: Path("/usr/bin/python3")) == Path("/usr/bin/python3")
