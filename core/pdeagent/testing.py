"""pytest plugin for plugin authors (auto-loaded through the ``pytest11`` entry point).

Fixtures:

- ``pdeagent_host``: a fresh :class:`~pdeagent.plugins.PluginHost` with every installed
  plugin loaded strictly (a plugin that fails to import fails the test).
- ``pdeagent_host_factory``: call it with ``extra_plugins=[...]`` (e.g. a scripted fake
  provider module or object) to get a fresh host that also has those registered.
- ``sandbox_backend``: parametrized over every sandbox backend (``docker``, ``bwrap``,
  ``local``); its value is the backend's name (``get_sandbox(name)`` gives an
  instance). An unavailable backend skips, except under ``PDEAGENT_REQUIRE_RUNTIMES``
  (CI), where it fails with the reason.

Helpers:

- :func:`require_runtime` / :func:`runtime_missing`: the "runtime required" check. A
  missing runtime (library, toolchain, browser, backend) skips the test, except when
  ``PDEAGENT_REQUIRE_RUNTIMES`` is truthy (``1``, ``true``, ``yes``; CI), where it fails.
- :func:`run_baseline_sample` runs the main job for a track (``pdeagent run --provider
  baseline --sample N``) in a subprocess, as a user would, and returns the report's JSON
  summary and the run manifest.
- :func:`screening_agreement` measures a case's first rungs both screened (frontier-2)
  and as pristine runs; :func:`check_screening_agreement` asserts that the errors agree.
- :func:`check_agent_session` checks that a track's agent shell (``--mode agent``) runs
  the track's calibration solver for a case the way the shell's ``how_to_run`` says.

Conformance suite: :class:`TrackConformance`, a test class a track package subclasses
in its own tests (``class TestMyTrack(TrackConformance): track_name = "mytrack"``;
``cases_file = ...``) to check what the core relies on: hooks answer for their own track
only, the prompt renders for every case the track supports, the calibration baseline
passes a small sample through the real pipeline, and the hostile submissions of
:mod:`pdeagent.adversarial` are held.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest

from pdeagent.plugins import PluginHost, load_plugins

REQUIRE_RUNTIMES_ENV = "PDEAGENT_REQUIRE_RUNTIMES"
_TRUTHY = ("1", "true", "yes")


def runtimes_required() -> bool:
    """Whether ``PDEAGENT_REQUIRE_RUNTIMES`` is truthy (``1``, ``true``, ``yes``, any
    case): a missing runtime then fails a test instead of skipping it."""
    return os.environ.get(REQUIRE_RUNTIMES_ENV, "").strip().lower() in _TRUTHY


def runtime_missing(reason: str) -> NoReturn:
    """Skip the calling test because a runtime it needs is missing (``reason`` says what
    and how to get it), or fail it when :func:`runtimes_required`."""
    if runtimes_required():
        pytest.fail(f"{reason} ({REQUIRE_RUNTIMES_ENV} is set: runtimes are required)")
    pytest.skip(reason)


def require_runtime[T](check: Callable[[], T]) -> T:
    """Call ``check`` (e.g. ``pdeagent_dolfinx.runtime_python``) and return its value; when
    it raises ``ImportError`` or :class:`~pdeagent.stages.TrackUnavailable`, the runtime
    is missing: :func:`runtime_missing` with the exception's message."""
    from pdeagent.stages import TrackUnavailable

    try:
        return check()
    except (ImportError, TrackUnavailable) as exc:
        runtime_missing(str(exc))


@pytest.fixture
def pdeagent_host_factory() -> Callable[..., PluginHost]:
    def make(**kwargs: Any) -> PluginHost:
        kwargs.setdefault("strict", True)
        return load_plugins(**kwargs)

    return make


_BACKEND_STATUS: dict[str, str | None] = {}


@pytest.fixture(params=["docker", "bwrap", "local"])
def sandbox_backend(request: pytest.FixtureRequest) -> str:
    from pdeagent.sandbox.select import BACKENDS, backend_status

    name = str(request.param)
    assert name in BACKENDS
    if not _BACKEND_STATUS:
        _BACKEND_STATUS.update(backend_status())
    why = _BACKEND_STATUS[name]
    if why is not None:
        runtime_missing(f"sandbox backend {name} unavailable: {why}")
    return name


@pytest.fixture
def pdeagent_host(pdeagent_host_factory: Callable[..., PluginHost]) -> PluginHost:
    return pdeagent_host_factory()


def run_baseline_sample(
    track: str, sample: int, out: Path, *, timeout_sec: float = 1800
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``pdeagent run --track TRACK --provider baseline --sample SAMPLE --no-cache --out
    OUT`` then ``pdeagent report OUT --json``: (the report summary, the run manifest).
    Fails the calling test with the command's stderr when either command fails."""
    cli = [sys.executable, "-m", "pdeagent.cli.main"]
    run = subprocess.run(
        [*cli, "run", "--track", track, "--provider", "baseline", "--sample", str(sample),
         "--no-cache", "--out", str(out)],
        capture_output=True, text=True, timeout=timeout_sec, check=False,
    )  # fmt: skip
    if run.returncode != 0:
        pytest.fail(f"pdeagent run failed ({run.returncode}):\n{run.stderr[-3000:]}")
    report = subprocess.run(
        [*cli, "report", str(out), "--json", "--no-figures"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if report.returncode != 0:
        pytest.fail(f"pdeagent report failed ({report.returncode}):\n{report.stderr[-3000:]}")
    manifest = json.loads((out / "run.json").read_text(encoding="utf-8"))
    return json.loads(report.stdout), manifest


def screening_agreement(
    host: PluginHost, track_name: str, case: Any, workroot: Path, *, rungs: int = 2
) -> list[tuple[dict[str, Any], float | None, float | None]]:
    """For a track with a screening program (frontier-2): the first ``rungs`` rungs of the
    first chain of the case's ladder, screened in one run, and each also measured as a
    pristine rung of its own (frontier-1), in the track's default sandbox. Returns
    ``(config, pristine error, screened error)`` per rung; the test asserts that they
    agree (the screening program runs the baseline as a submission would). Fails the
    test when the track offers no screening program or a rung fails."""
    from pdeagent.evaluation.frontier import budget_for
    from pdeagent.evaluation.frontier_calibration import (
        ladder_for,
        measure_rung,
        screening_source,
    )
    from pdeagent.evaluation.screening import Screener
    from pdeagent.sandbox import default_sandbox

    track = host.get_track(track_name)
    source = screening_source(host, track, case)
    if source is None:
        pytest.fail(f"track {track_name!r} offers no screening program")
    chain = ladder_for(host, track, case)[0][:rungs]
    budget = budget_for(case.case_spec.eval_grid.dim)
    sandbox = default_sandbox()
    rows = []
    with Screener(
        host, track, case, source, sandbox=sandbox, workroot=workroot / "screening", t_null=0.0
    ) as screener:
        screener.start_chain(chain, budget)
        screened = [screener.measure(config) for config in chain]
    for i, (config, trial) in enumerate(zip(chain, screened, strict=True)):
        pristine = measure_rung(
            host, track, case, config, sandbox=sandbox, workroot=workroot / f"pristine-{i}",
            t_null=0.0, budget=budget,
        )  # fmt: skip
        for what, measured in (("screened", trial), ("pristine", pristine)):
            if measured.failed:
                pytest.fail(f"{what} rung {config!r} of {case.id} failed: {measured.problem}")
        rows.append((config, pristine.error, trial.error))
    return rows


def check_screening_agreement(
    track_name: str, family: str, records: Path, workroot: Path, *, rel: float = 1e-6
) -> None:
    """:func:`screening_agreement` on the first case of ``family`` in ``records`` that
    ``track_name`` supports (a 2-D one when there is one), asserting that every rung's
    screened error is its pristine error within ``rel``."""
    from pdeagent.cases.io import load_cases

    cases = [
        c for c in load_cases(records) if c.family == family and track_name in c.supported_libraries
    ]
    if not cases:
        pytest.fail(f"no {family} case of {records} is supported by {track_name}")
    case = next((c for c in cases if c.case_spec.eval_grid.dim == 2), cases[0])
    rows = screening_agreement(load_plugins(strict=True), track_name, case, workroot)
    for config, pristine, screened in rows:
        assert screened == pytest.approx(pristine, rel=rel), (case.id, config)


# --- the conformance suite for track packages --------------------------------------------


def per_track_hooks() -> list[str]:
    """Names of the hook specs that take a ``track`` argument (the hooks the core calls on
    the track's owner only)."""
    from pdeagent import hookspecs

    return sorted(
        name
        for name, fn in vars(hookspecs).items()
        if name.startswith("pdeagent_")
        and inspect.isfunction(fn)
        and "track" in inspect.signature(fn).parameters
    )


PROBE_TRACK = "pdeagent_conformance_probe"
"""The track the dispatch check's unguarded probe plugin registers."""


def unguarded_probe(track_name: str = PROBE_TRACK) -> Any:
    """A plugin that registers the track ``track_name`` and implements every per-track hook
    for ANY track, without checking which (the mistake the core guards against): each
    call is recorded in ``probe.calls`` as ``(hook, track name)`` and answered ``None``."""
    from pdeagent import hookimpl
    from pdeagent.stages import Track

    track = Track(track_name, "Probe", "python", "solver.py", description="conformance probe")
    calls: list[tuple[str, str]] = []

    def recorder(hook: str) -> Callable[..., None]:
        def impl(track: Any) -> None:
            calls.append((hook, track.name))

        impl.__name__ = hook
        return hookimpl(impl)

    members: dict[str, Any] = {name: recorder(name) for name in per_track_hooks()}
    members["pdeagent_register_tracks"] = hookimpl(lambda register: register(track))
    probe = type("UnguardedProbe", (), {})()
    for name, value in members.items():
        setattr(probe, name, value)
    probe.__name__ = f"unguarded-probe-{track_name}"
    probe.track = track
    probe.calls = calls
    return probe


def dummy_hook_kwargs(name: str, host: PluginHost, case_view: dict[str, Any], tmp: Path) -> dict:
    """Harmless arguments for every argument of per-track hook ``name`` (a dispatch probe:
    the call must reach no real track plugin, so nothing is really built or run)."""
    dummies: dict[str, Any] = {
        "case_view": case_view, "mode": "single", "source": "", "build_dir": tmp / "build",
        "sandbox": None, "hide": [], "workdir": tmp / "work", "workroot": tmp / "root",
        "execution": None, "force": False, "log": lambda message: None,
        "calibration_config": None, "reference_config": None, "fidelity": "reference",
    }  # fmt: skip
    spec = getattr(host.pm.hook, name).spec
    return {arg: dummies.get(arg) for arg in spec.argnames if arg != "track"}


class TrackConformance:
    """Drop-in conformance tests for a track package (the way pytest offers pytester).

    Subclass it in the package's tests and name the track and a cases file::

        from pdeagent.testing import TrackConformance

        class TestMyTrack(TrackConformance):
            track_name = "mytrack"
            cases_file = Path(__file__).parent / "cases.jsonl"

    Options (class attributes): ``baseline_sample`` (cases graded with the calibration
    baseline, one per family first; default 2), ``attacks`` (names of the hostile
    submissions to run; default every attack of the track's language), ``backend``
    (sandbox backend of the baseline and the attacks; default the strongest available).
    The baseline and attack tests need the track's runtime and a sandbox: a missing one
    skips them (fails under ``PDEAGENT_REQUIRE_RUNTIMES``), via :meth:`require_track_runtime`,
    which a subclass overrides to check its runtime (e.g. ``require_runtime(runtime_python)``).
    """

    track_name: str = ""
    cases_file: Path | None = None
    baseline_sample: int = 2
    attacks: tuple[str, ...] | None = None
    backend: str | None = None

    # -- fixtures -------------------------------------------------------------------------

    @pytest.fixture(scope="class")
    @classmethod
    def conformance_host(cls) -> PluginHost:
        if not cls.track_name:
            pytest.fail(f"{cls.__name__}: set track_name = '<your track>'")
        return load_plugins(strict=True)

    @pytest.fixture(scope="class")
    @classmethod
    def conformance_track(cls, conformance_host: PluginHost) -> Any:
        return conformance_host.get_track(cls.track_name)

    @pytest.fixture(scope="class")
    @classmethod
    def conformance_cases(cls, conformance_host: PluginHost) -> list[Any]:
        """The cases of ``cases_file`` offered on the track."""
        from pdeagent.cases.io import load_cases
        from pdeagent.cases.validate import KNOWN_LIBRARIES

        if cls.cases_file is None:
            pytest.fail(f"{cls.__name__}: set cases_file = Path('<a cases .jsonl>')")
        known = {*KNOWN_LIBRARIES, *conformance_host.tracks}
        cases = load_cases(cls.cases_file, known_libraries=known)
        mine = [c for c in cases if cls.track_name in c.supported_libraries]
        if not mine:
            pytest.fail(f"{cls.cases_file} offers no case on track {cls.track_name!r}")
        return mine

    def require_track_runtime(self) -> None:
        """Override to skip (or, under ``PDEAGENT_REQUIRE_RUNTIMES``, fail) the tests that
        run programs when the track's runtime is missing: call :func:`require_runtime`."""

    def sandbox_name(self) -> str:
        from pdeagent.sandbox.base import SandboxError
        from pdeagent.sandbox.select import resolve_backend

        try:
            return resolve_backend(self.backend)
        except SandboxError as exc:
            runtime_missing(f"no sandbox backend for the conformance run: {exc}")

    # -- the checks -----------------------------------------------------------------------

    def test_track_is_registered_by_one_plugin(self, conformance_host, conformance_track):
        owner = conformance_host.track_owner.get(conformance_track.name)
        assert owner, f"track {self.track_name!r} has no owning plugin"
        assert conformance_track.name == self.track_name

    def test_hooks_answer_for_their_own_track_only(self, conformance_cases, tmp_path):
        """The dispatch check: with an unguarded plugin installed next to the track, the
        track's stage calls never reach that plugin, and the probe track's calls never
        reach the track's plugin; the track answers its own prompt and invocation."""
        from pdeagent.cases.agent_view import agent_view

        probe = unguarded_probe()
        host = load_plugins(strict=True, extra_plugins=[probe])
        track = host.get_track(self.track_name)
        owner = host.track_owner[track.name]
        seen: list[tuple[str, Any, list[str]]] = []

        def before(hook_name: str, impls: list[Any], kwargs: dict[str, Any]) -> None:
            who = kwargs.get("track")
            seen.append((hook_name, getattr(who, "name", None), [i.plugin_name for i in impls]))

        undo = host.pm.add_hookcall_monitoring(before, lambda *args: None)
        try:
            view = agent_view(conformance_cases[0], track.name)
            assert host.hook.pdeagent_prompt_pieces(track=track, case_view=view, mode="single")
            workdir = tmp_path / "own"
            workdir.mkdir()
            assert host.hook.pdeagent_invocation(track=track, workdir=workdir, case_view=view)
            host.hook.pdeagent_calibration_source(
                track=track, case_view=view, calibration_config=None
            )
            for name in per_track_hooks():
                with contextlib.suppress(Exception):  # the probe answers None to all
                    host.call_track_hook(
                        probe.track, name, **dummy_hook_kwargs(name, host, view, tmp_path)
                    )
        finally:
            undo()
        assert [c for c in probe.calls if c[1] != PROBE_TRACK] == [], (
            f"track {self.track_name!r}'s stage calls reached another track's plugin"
        )
        reached = sorted({hook for hook, who, plugins in seen
                          if who == PROBE_TRACK and owner in plugins})  # fmt: skip
        assert reached == [], f"the probe track's calls reached plugin {owner!r}: {reached}"
        others = set(host.track_owner.values()) - {owner}
        leaked = sorted({(hook, p) for hook, who, plugins in seen if who == track.name
                         for p in plugins if p in others})  # fmt: skip
        assert leaked == [], f"track {self.track_name!r}'s calls reached other tracks: {leaked}"

    @pytest.mark.parametrize("mode", ["single", "template"])
    def test_prompt_renders_for_every_case(self, mode, conformance_host, conformance_track,
                                           conformance_cases):  # fmt: skip
        from pdeagent.cases.agent_view import agent_view
        from pdeagent.prompts.builder import build_prompt

        failures = []
        for case in conformance_cases:
            view = agent_view(case, conformance_track.name)
            try:
                pieces = conformance_host.call_track_hook(
                    conformance_track, "pdeagent_prompt_pieces", case_view=view, mode=mode
                )
                if pieces is None:
                    raise AssertionError("pdeagent_prompt_pieces answered None")
                if mode == "template" and not pieces.scaffold:
                    raise AssertionError("no scaffold for the template mode")
                text = build_prompt(case, conformance_track, pieces, mode=mode)
                if not text.strip() or pieces.guide.strip()[:40] not in text:
                    raise AssertionError("the prompt lacks the track's guide")
            except Exception as exc:
                failures.append(f"{case.id}: {type(exc).__name__}: {exc}")
        assert failures == [], "\n".join(failures)

    @pytest.mark.sandbox
    def test_baseline_passes_a_small_sample(self, conformance_host, conformance_track,
                                            conformance_cases, tmp_path):  # fmt: skip
        from pdeagent.cases.agent_view import agent_view
        from pdeagent.evaluation.pipeline import evaluate_source, resolve_thresholds
        from pdeagent.sandbox.select import get_sandbox

        self.require_track_runtime()
        sandbox = get_sandbox(self.sandbox_name())
        graded = [
            c for c in conformance_cases if self.track_name in c.evaluation_metadata.thresholds
        ]
        if not graded:
            pytest.fail(f"{self.cases_file} has no thresholds for track {self.track_name!r}")
        firsts = list({c.family: c for c in reversed(graded)}.values())[::-1]
        sample = (firsts + [c for c in graded if c not in firsts])[: self.baseline_sample]
        verdicts = {}
        for i, case in enumerate(sample):
            source = conformance_host.call_track_hook(
                conformance_track, "pdeagent_calibration_source",
                case_view=agent_view(case, conformance_track.name),
                calibration_config=case.evaluation_metadata.calibration_config,
            )  # fmt: skip
            assert source, f"no calibration baseline for case {case.id}"
            report = evaluate_source(
                conformance_host, conformance_track, case, source, sandbox=sandbox,
                workroot=tmp_path / f"eval-{i}",
                thresholds=resolve_thresholds(case, conformance_track.name),
                dataset_dir=Path(self.cases_file).parent,
            )  # fmt: skip
            verdicts[case.id] = (report.verdict, report.reason, report.message[:300])
        failed = {k: v for k, v in verdicts.items() if v[0] != "PASS"}
        assert failed == {}, f"the calibration baseline did not pass: {failed}"

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "conformance_attack" not in metafunc.fixturenames:
            return
        from pdeagent.adversarial import attacks_for

        try:
            language = load_plugins(strict=True).get_track(self.track_name).language
        except Exception:  # reported by test_track_is_registered_by_one_plugin
            language = "python"
        chosen = [a for a in attacks_for(language)
                  if self.attacks is None or a.name in self.attacks]  # fmt: skip
        params = [pytest.param(a, id=a.name, marks=[pytest.mark.slow] if a.slow else [])
                  for a in chosen]  # fmt: skip
        metafunc.parametrize("conformance_attack", params)

    @pytest.mark.sandbox
    def test_hostile_submission_is_held(
        self, conformance_attack, conformance_host, conformance_track, conformance_cases, tmp_path
    ):
        from pdeagent.adversarial import assert_attack_held

        self.require_track_runtime()
        mms = [c for c in conformance_cases
               if c.evaluation_metadata.construction_method == "manufactured_solution"]  # fmt: skip
        if not mms:
            pytest.fail(f"{self.cases_file} has no manufactured-solution case for the attacks")
        assert_attack_held(
            conformance_attack, host=conformance_host, track_name=conformance_track.name,
            case=mms[0], backend=self.sandbox_name(), workroot=tmp_path / "attack",
        )  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers the conformance suite uses (a track package's own pytest
    configuration need not know them)."""
    config.addinivalue_line(
        "markers", "sandbox: needs Linux namespaces (unshare) and root or user namespaces"
    )
    config.addinivalue_line("markers", "slow: slow test")


def check_agent_session(
    host: PluginHost,
    track_name: str,
    case_id: str,
    root: Path,
    *,
    command: str,
    extra_files: Callable[[str], dict[str, str]] | None = None,
) -> None:
    """An agent's session on ``track_name`` (issue #22) runs the track's own calibration
    solver for ``case_id`` (of the shipped dataset) with ``command`` (which the shell's
    ``how_to_run`` must name), on bwrap, and what the run leaves passes the grader's
    output adapter. ``extra_files(source)`` gives files to write beside the solver.
    Fails the calling test otherwise. ``root`` is an empty directory."""
    import shutil

    from pdeagent.agent.session import AgentSession, SessionLimits
    from pdeagent.cases.agent_view import agent_view
    from pdeagent.cases.io import find_case, load_cases
    from pdeagent.cli.common import default_dataset
    from pdeagent.sandbox.select import get_sandbox

    track = host.get_track(track_name)
    case = find_case(load_cases(default_dataset(), known_libraries=set(host.tracks)), case_id)
    view = agent_view(case, track_name)
    source = host.hook.pdeagent_calibration_source(
        track=track, case_view=view,
        calibration_config=case.evaluation_metadata.calibration_config,
    )  # fmt: skip
    assert source, f"no calibration solver of {track_name} for {case_id}"
    session = AgentSession(
        host=host, track=track, case_view=view, sandbox=get_sandbox("bwrap"),
        workdir=root / "work", hide=[default_dataset().parent],
        limits=SessionLimits(command_wall_sec=300.0),
    )  # fmt: skip
    shell = session.start()
    for part in command.split(" && "):
        assert part in shell.how_to_run, (part, shell.how_to_run)
    session.write_file(track.source_filename, source)
    for name, text in (extra_files(source) if extra_files else {}).items():
        session.write_file(name, text)
    out = session.run(command)
    assert out.exit_code == 0, out.text[-3000:]
    graded = root / "graded"
    shutil.copytree(session.workdir, graded, symlinks=True)
    adapted = host.call_track_hook(track, "pdeagent_adapt_output", workdir=graded, case_view=view)
    assert adapted is not None and adapted.npz_path is not None, adapted
