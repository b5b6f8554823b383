from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).parent
REPO_ROOT = TESTS_DIR.parent
SAMPLE_TRACK_DIR = TESTS_DIR / "sample_track"
SAMPLE_CASES = SAMPLE_TRACK_DIR / "cases.jsonl"
SAMPLE_CASE_ID = "sample_poisson_unit_square_001"


@pytest.fixture(scope="module")
def host():
    """The installed plugins (strict: a broken plugin fails the test)."""
    from pdeagent.plugins import load_plugins

    return load_plugins(strict=True)


@pytest.fixture(scope="module")
def track(host):
    """The sample third-party track (tests/sample_track, found by its entry point)."""
    return host.get_track("numpy_fd")


@pytest.fixture(scope="module")
def case():
    """The sample track's Poisson case."""
    from pdeagent.cases.io import find_case, load_cases

    known = {"numpy_fd", "dolfinx", "firedrake", "dealii"}
    return find_case(load_cases(SAMPLE_CASES, known_libraries=known), SAMPLE_CASE_ID)


@pytest.fixture
def sample_dataset(tmp_path: Path) -> Path:
    """The sample track's cases as a dataset of version 1.0.0 (``tmp_path/d/cases.jsonl``)."""
    import json

    path = tmp_path / "d" / "cases.jsonl"
    path.parent.mkdir()
    lines = []
    for line in SAMPLE_CASES.read_text().splitlines():
        record = json.loads(line)
        record["dataset_version"] = "1.0.0"
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def cli():
    """A CLI runner; the CLI's plugin host is loaded afresh for the test and dropped after."""
    from typer.testing import CliRunner

    from pdeagent.cli import common

    common.reset_host()
    yield CliRunner()
    common.reset_host()


@pytest.fixture
def fake_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., types.ModuleType]]:
    """Create an importable module from functions, removed again after the test."""

    def make(name: str, **attrs: object) -> types.ModuleType:
        mod = types.ModuleType(name)
        for key, value in attrs.items():
            setattr(mod, key, value)
        monkeypatch.setitem(sys.modules, name, mod)
        return mod

    yield make


def dom_with_probe(chromium: str, html: str, probe: str, page: Path, profile: Path) -> str:
    """The DOM headless Chromium builds from a checking copy of ``html`` written to
    ``page``: the page's CSP also allows one inline script, ``probe``, inserted before
    ``</body>`` (the pages themselves have no scripts: their CSP forbids them)."""
    import subprocess

    checked = html.replace("default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';")
    page.write_text(checked.replace("</body>", probe + "</body>"), encoding="utf-8")
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
         f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout
