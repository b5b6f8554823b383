"""Hooks reach only their owner: a per-track hook is called on the plugin that registered
the track (and on plugins that register no track), never on another track's plugin, so a
track plugin that forgets to check ``track`` cannot grade someone else's submissions.

The unguarded plugin below registers its own Python track and answers every stage hook
for ANY track (it would win every ``firstresult`` hook: pluggy calls the last registered
plugin first); the sample track's run through the real pipeline must not reach it.
"""

from __future__ import annotations

import inspect
import math
import tempfile
from pathlib import Path
from typing import Any

import attrs
import pytest

from pdeagent import hookimpl, hookspecs
from pdeagent.cases.agent_view import agent_view
from pdeagent.contracts.python import contract_text, prepare_python, python_invocation
from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source, resolve_thresholds
from pdeagent.plugins import load_plugins
from pdeagent.sandbox import default_sandbox, python_runtime_expose
from pdeagent.sandbox.base import Limits
from pdeagent.stages import PromptPieces, Track

from .conftest import SAMPLE_TRACK_DIR

UNGUARDED = Track("unguarded_py", "NumPy", "python", "solver.py", description="no _mine()")
GUIDE = "# the unguarded plugin's guide\n"
PER_TRACK_HOOKS = sorted(
    name
    for name, fn in vars(hookspecs).items()
    if name.startswith("pdeagent_") and callable(fn) and "track" in inspect.signature(fn).parameters
)


class Unguarded:
    """A complete Python track that never looks at ``track``: it answers every stage hook
    with a working implementation and records ``(hook, track name)`` for each call."""

    __name__ = "unguarded"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def _seen(self, hook: str, track: Track) -> None:
        self.calls.append((hook, track.name))

    @hookimpl
    def pdeagent_register_tracks(self, register):
        register(UNGUARDED)

    @hookimpl
    def pdeagent_prompt_pieces(self, track, case_view, mode):
        self._seen("pdeagent_prompt_pieces", track)
        return PromptPieces(contract=contract_text("NumPy"), guide=GUIDE, scaffold="# todo\n")

    @hookimpl
    def pdeagent_prepare(self, track, source, build_dir, sandbox, hide):
        self._seen("pdeagent_prepare", track)
        return prepare_python(source, build_dir, "solver.py")

    @hookimpl
    def pdeagent_invocation(self, track, workdir, case_view):
        self._seen("pdeagent_invocation", track)
        import sys

        python = Path(sys.executable)
        return python_invocation(python, filename="solver.py", expose=python_runtime_expose(python))

    @hookimpl
    def pdeagent_adapt_output(self, track, workdir, case_view):
        self._seen("pdeagent_adapt_output", track)
        return None  # the core's built-in adapter reads solution.npz

    @hookimpl
    def pdeagent_diagnostics(self, track, workdir, case_view, execution):
        self._seen("pdeagent_diagnostics", track)
        return {"graded_by": "unguarded"}

    @hookimpl
    def pdeagent_explain_crash(self, track, source, workroot, case_view, sandbox, hide,
                               execution):  # fmt: skip
        self._seen("pdeagent_explain_crash", track)
        return "explained by the unguarded plugin"

    @hookimpl
    def pdeagent_calibration_source(self, track, case_view, calibration_config):
        self._seen("pdeagent_calibration_source", track)
        return "def solve(case_spec):\n    raise RuntimeError('the unguarded baseline')\n"

    @hookimpl
    def pdeagent_null_source(self, track, case_view):
        self._seen("pdeagent_null_source", track)
        return "def solve(case_spec):\n    pass\n"

    @hookimpl
    def pdeagent_calibration_ladder(self, track, case_view):
        self._seen("pdeagent_calibration_ladder", track)
        return [[{"unguarded": True}]]

    @hookimpl
    def pdeagent_reference_source(self, track, case_view, reference_config, fidelity):
        self._seen("pdeagent_reference_source", track)
        return "def solve(case_spec):\n    pass\n"

    @hookimpl
    def pdeagent_doctor(self, track):
        self._seen("pdeagent_doctor", track)
        return []

    @hookimpl
    def pdeagent_setup_environment(self, track, force, log):
        self._seen("pdeagent_setup_environment", track)
        return []

    @hookimpl
    def pdeagent_runtime_packages(self, track):
        self._seen("pdeagent_runtime_packages", track)
        return {"unguarded": True}


def _add_generic_recorders() -> None:
    """Per-track hooks added to the specs later are answered (and recorded) too."""
    for name in PER_TRACK_HOOKS:
        if not hasattr(Unguarded, name):

            def impl(self, track, _name=name):
                self._seen(_name, track)
                return {"unguarded": True}

            impl.__name__ = name
            setattr(Unguarded, name, hookimpl(impl))


_add_generic_recorders()

pytestmark = pytest.mark.sandbox

CASE_ID = "sample_poisson_unit_square_001"


@pytest.fixture
def unguarded():
    return Unguarded()


@pytest.fixture
def host(unguarded):
    return load_plugins(strict=True, extra_plugins=[unguarded])


@pytest.fixture
def workroot():
    with tempfile.TemporaryDirectory(prefix="pdeagent-test-", dir="/var/tmp") as d:
        yield Path(d) / "eval"


def test_the_unguarded_plugin_answers_every_per_track_hook():
    missing = [n for n in PER_TRACK_HOOKS if not hasattr(Unguarded, n)]
    assert missing == [] and len(PER_TRACK_HOOKS) >= 12


def test_the_sample_track_is_graded_by_its_own_plugin_only(host, unguarded, case, workroot):
    track = host.get_track("numpy_fd")
    view = agent_view(case, track.name)
    source = host.call_track_hook(
        track, "pdeagent_calibration_source", case_view=view, calibration_config=None
    )
    policy = GradingPolicy()
    report = evaluate_source(
        host, track, case, source, sandbox=default_sandbox(), workroot=workroot,
        thresholds=resolve_thresholds(case, track.name, policy), policy=policy,
        limits=Limits(wall_time_sec=60.0, address_space_bytes=4 * 1024**3),
        dataset_dir=SAMPLE_TRACK_DIR,
    )  # fmt: skip
    assert report.verdict == "PASS", report
    assert "graded_by" not in report.diagnostics
    assert [c for c in unguarded.calls if c[1] == "numpy_fd"] == []


def test_a_crash_of_the_sample_track_is_not_explained_by_another_track(host, unguarded, case,
                                                                       workroot):  # fmt: skip
    track = host.get_track("numpy_fd")
    policy = GradingPolicy(timed_repeats=1, explain_crashes=True)
    report = evaluate_source(
        host, track, case, "def solve(case_spec):\n    raise RuntimeError('boom')\n",
        sandbox=default_sandbox(), workroot=workroot,
        thresholds=resolve_thresholds(case, track.name, policy), policy=policy,
    )  # fmt: skip
    assert (report.verdict, report.reason) == ("F-Exec", "runtime_error")
    assert "crash_explanation" not in report.diagnostics
    assert unguarded.calls == []


def test_its_own_track_still_works(host, unguarded, case, workroot):
    baseline = (SAMPLE_TRACK_DIR / "pdeagent_sample_fd" / "fd_poisson.py").read_text()
    case = attrs.evolve(case, supported_libraries=[*case.supported_libraries, UNGUARDED.name])
    report = evaluate_source(
        host, UNGUARDED, case, baseline, sandbox=default_sandbox(), workroot=workroot,
        thresholds=None, policy=GradingPolicy(timed_repeats=1),
    )  # fmt: skip
    assert report.verdict is None and report.reason is None, report
    assert report.error is not None and math.isfinite(report.error) and report.error < 2e-3
    assert report.diagnostics["graded_by"] == "unguarded"
    hooks = {hook for hook, name in unguarded.calls if name == UNGUARDED.name}
    assert {"pdeagent_prepare", "pdeagent_invocation", "pdeagent_diagnostics"} <= hooks
    assert {name for _, name in unguarded.calls} == {UNGUARDED.name}


def test_host_hook_routes_per_track_calls_to_the_owner(host, unguarded, case):
    sample = host.get_track("numpy_fd")
    view = agent_view(case, sample.name)
    pieces = host.hook.pdeagent_prompt_pieces(track=sample, case_view=view, mode="single")
    assert pieces.guide != GUIDE and "NumPy finite-difference guide" in pieces.guide
    own = host.hook.pdeagent_prompt_pieces(track=UNGUARDED, case_view=view, mode="single")
    assert own.guide == GUIDE
    assert unguarded.calls == [("pdeagent_prompt_pieces", UNGUARDED.name)]
    with pytest.raises(TypeError, match="per-track hook"):
        host.hook.pdeagent_prompt_pieces(case_view=view, mode="single")


def test_every_per_track_hook_is_routed(host, unguarded, tmp_path):
    """Called for the sample track with harmless arguments, no per-track hook reaches the
    unguarded plugin; called for its own track, every one does."""
    from pdeagent.testing import dummy_hook_kwargs

    sample = host.get_track("numpy_fd")
    view: dict[str, Any] = {"case_spec": {}, "target_library": "numpy_fd"}
    for name in PER_TRACK_HOOKS:
        caller = host.track_hook_caller(name, sample)
        assert "unguarded" not in [i.plugin_name for i in caller.get_hookimpls()], name
        own = host.track_hook_caller(name, UNGUARDED)
        assert "unguarded" in [i.plugin_name for i in own.get_hookimpls()], name
        host.call_track_hook(UNGUARDED, name, **dummy_hook_kwargs(name, host, view, tmp_path))
    assert sorted({h for h, _ in unguarded.calls}) == PER_TRACK_HOOKS
    assert {n for _, n in unguarded.calls} == {UNGUARDED.name}


def test_an_unregistered_track_reaches_no_track_plugin(host, unguarded, tmp_path):
    stranger = Track("nobody", "X", "python", "s.py")
    assert host.hook.pdeagent_invocation(track=stranger, workdir=tmp_path, case_view={}) is None
    assert unguarded.calls == []


def test_a_plugin_without_a_track_is_an_extension_of_every_track(tmp_path):
    """A plugin that registers no track (the core's built-ins, a crash explainer, a
    diagnostics collector) is cross-cutting: it is called for every track."""

    class Extension:
        __name__ = "extension"

        @hookimpl
        def pdeagent_diagnostics(self, track, workdir, case_view, execution):
            return {"seen": track.name}

    host = load_plugins(strict=True, extra_plugins=[Extension(), Unguarded()])
    for name in ("numpy_fd", UNGUARDED.name):
        got = host.call_track_hook(
            host.get_track(name), "pdeagent_diagnostics", workdir=tmp_path, case_view={},
            execution=None,
        )  # fmt: skip
        assert {"seen": name} in got


def test_a_plugin_whose_track_failed_to_register_reaches_no_track(tmp_path):
    """A track plugin whose registration failed (here: a taken name, non-strict loading)
    owns nothing, and is not mistaken for a cross-cutting extension."""

    class Squatter(Unguarded):
        __name__ = "squatter"

        @hookimpl
        def pdeagent_register_tracks(self, register):
            register(Track("numpy_fd", "NumPy", "python", "solver.py"))

    squatter = Squatter()
    host = load_plugins(strict=False, extra_plugins=[squatter])
    assert [f.name for f in host.failures] == ["squatter"]
    assert host.track_owner["numpy_fd"] == "sample_fd"
    track = host.get_track("numpy_fd")
    inv = host.hook.pdeagent_invocation(track=track, workdir=tmp_path, case_view={})
    assert inv is not None and squatter.calls == []


def test_call_track_hook_refuses_a_hook_without_a_track(host):
    with pytest.raises(TypeError, match="not a per-track hook"):
        host.call_track_hook(UNGUARDED, "pdeagent_register_tracks", register=lambda t: None)
