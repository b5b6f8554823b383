"""``pdeagent report --out`` opened in a headless Chromium (issue #23): the report, the
leaderboard and two walkthrough pages load every picture, and the numbers they show are
the ones in report.json (the run's, for a walkthrough page; the report folder's, for
the leaderboard). Screenshots are saved under the test's temp dir."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pdeagent.runs.layout import attempt_dir
from pdeagent.runs.walkthrough import field_format
from pdeagent.testing import runtime_missing

from .test_run import make_cases

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

IMAGES_LOADED = """async () => {
  for (const img of document.images) {  // lazy pictures load once scrolled into view
    img.scrollIntoView();
    try { await img.decode(); } catch (e) { /* reported below as not loaded */ }
  }
  return Array.from(document.images).map(i => [i.getAttribute("src"), i.complete, i.naturalWidth]);
}"""


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        runtime_missing("chromium is not installed (scripts/setup-dev.sh --tests installs it)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        runtime_missing("playwright is not installed (pip install -e '.[test]')")
    return path


def cli(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pdeagent.cli.main", *args],
                          capture_output=True, text=True, timeout=900, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory) -> tuple[Path, Path]:
    """Two cases of the sample track graded by its baseline, and the report with pictures."""
    root = tmp_path_factory.mktemp("browser")
    cases = make_cases(root, n=2)
    run = root / "run"
    cli("run", "--track", "numpy_fd", "--provider", "baseline", "--cases-file", str(cases),
        "--no-cache", "--out", str(run))  # fmt: skip
    out = root / "report"
    cli("report", str(run), "--out", str(out), "--jobs", "2")  # pictures drawn by workers
    return run, out


def lookup(data: Any, path: list[Any]) -> Any:
    for key in path:
        data = data[key]
    return data


def test_pages_load_their_pictures_and_show_report_json(report_dir, tmp_path):
    from playwright.sync_api import sync_playwright

    chromium = _chromium()
    run, out = report_dir
    pages = sorted((out / "cases").rglob("index.html"))
    assert len(pages) == 2
    board = json.loads((out / "report.json").read_text())["leaderboard"]
    shown_code: dict[str, int] = {}
    code_links: dict[str, list[str]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            targets = [("report", out / "report.html"), ("leaderboard", out / "leaderboard.html")]
            targets += [(f"walkthrough-{i}", path) for i, path in enumerate(pages)]
            for name, target in targets:
                page.goto(target.as_uri(), wait_until="load")
                images = page.evaluate(IMAGES_LOADED)
                broken = [src for src, complete, width in images if not (complete and width > 0)]
                assert not broken, f"{name}: pictures that did not load: {broken}"
                page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
                assert (tmp_path / f"{name}.png").stat().st_size > 10_000

                if name == "report":
                    assert page.eval_on_selector_all("a[href='leaderboard.html']", "e => e.length")
                if name == "leaderboard":
                    entries = {e["label"]: e for e in board["entries"]}
                    cells = page.eval_on_selector_all(
                        "[data-series][data-pass-rate][data-ci-low]:not([data-family])",
                        "els => els.map(e => [e.dataset.series, e.dataset.passRate,"
                        " e.dataset.ciLow, e.dataset.ciHigh])",
                    )
                    assert cells, "no pass-rate cell on the leaderboard"
                    for series, rate, low, high in cells:
                        entry = entries[series]
                        assert json.loads(rate) == entry["pass_rate"]["rate"] == 1.0
                        assert json.loads(low) == entry["interval"]["low"]
                        assert json.loads(high) == entry["interval"]["high"] == 1.0
                    links = page.eval_on_selector_all("a[href*='cases/']", "els => els.length")
                    assert links == 2  # one matrix cell per case, each linking its page
                if name.startswith("walkthrough"):
                    case_id = target.parts[-3]
                    saved = json.loads(
                        (
                            attempt_dir(run, "numpy_fd", "baseline", case_id, 0) / "report.json"
                        ).read_text()
                    )
                    shown = page.eval_on_selector_all(
                        "[data-field][data-path]",
                        "els => els.map(e => [e.dataset.field, e.dataset.path, e.textContent])",
                    )
                    fields = {field for field, _, _ in shown}
                    assert {"verdict", "error", "tau_acc", "runtime_sec", "tau_time"} <= fields
                    for field, path, text in shown:
                        value = lookup(saved, json.loads(path))
                        assert text.strip() == field_format(field)(value), (field, path)
                    assert images and len(images) >= 3  # submission, reference, error
                    shown_code[name] = page.eval_on_selector_all("div.code pre", "e => e.length")
                    code_links[name] = page.eval_on_selector_all(
                        "a[href$='#code']", "els => els.map(e => e.href)"
                    )
            # the two cases were solved by one program: shown on the first page only, the
            # second links to it
            assert sorted(shown_code.values()) == [0, 2], shown_code
            (link,) = [url for links in code_links.values() for url in links]
            page.goto(link, wait_until="load")
            assert page.eval_on_selector_all("#code ~ div.code pre", "e => e.length") == 2
            assert page.url.split("#")[0] == pages[0].as_uri()
        finally:
            browser.close()
