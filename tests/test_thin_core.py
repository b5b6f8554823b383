"""A thin core (issue #21): docker, distributed and matplotlib are optional extras.

Without them every command that does not need them works, and one that does says in
one line which extra to install. The packages are installed in the test venv (the
``test`` extra pulls them in), so their absence is simulated: a subprocess blocks
their import with a meta path finder before pdeagent is imported, and drives the CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from pdeagent import extras
from pdeagent.extras import EXTRAS, MissingExtra, missing_message, require

from .conftest import REPO_ROOT, SAMPLE_CASES

BLOCKED = ("docker", "distributed", "dask", "matplotlib")

# Runs in a fresh interpreter: block the optional packages, then run CLI commands (argv
# lists from stdin) and print each one's exit code, stdout and stderr as JSON.
DRIVER = r"""
import importlib.abc, json, sys

BLOCKED = set(sys.argv[1].split(","))


class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Block())
from typer.testing import CliRunner

from pdeagent.cli import common
from pdeagent.cli.main import app

results = []
for argv in json.load(sys.stdin):
    common.reset_host()
    r = CliRunner().invoke(app, argv)
    tb = None
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        import traceback
        tb = "".join(traceback.format_exception(r.exception))
    results.append({"code": r.exit_code, "out": r.stdout, "err": r.stderr, "tb": tb})
loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
print(json.dumps({"results": results, "loaded": loaded}))
"""


def run_without_extras(commands: list[list[str]], tmp_path: Path) -> list[dict]:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    for var in ("PDEAGENT_CASES", "PDEAGENT_SANDBOX"):
        env.pop(var, None)
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, ",".join(BLOCKED)],
        input=json.dumps(commands),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout.splitlines()[-1])
    assert data["loaded"] == [], data["loaded"]
    return data["results"]


def ok(result: dict) -> None:
    assert result["code"] == 0, (result["out"], result["err"], result["tb"])


def one_line_error(result: dict, phrase: str) -> None:
    assert result["code"] == 2, (result["out"], result["err"], result["tb"])
    err = result["err"].strip()
    assert err.startswith("error:") and "\n" not in err, err
    assert phrase in err, err


def test_core_dependencies_leave_out_the_optional_packages():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    hard = {Requirement(d).name for d in project["dependencies"]}
    optional = project["optional-dependencies"]
    for extra in EXTRAS.values():
        assert extra.package not in hard
        assert {Requirement(d).name for d in optional[extra.name]} == {extra.package}
    # the dev/CI setup (`.[test]`) and `.[all]` still get every optional feature
    for bundle in ("test", "all"):
        wanted = {e for d in optional[bundle] for e in Requirement(d).extras}
        assert wanted >= set(EXTRAS), bundle
    setup = (REPO_ROOT / "scripts" / "setup-dev.sh").read_text()
    assert "'.[test]'" in setup or "'.[all,test]'" in setup


def test_require_names_the_extra(monkeypatch):
    for name, extra in EXTRAS.items():
        monkeypatch.setitem(sys.modules, extra.module, None)
        with pytest.raises(MissingExtra) as info:
            require(name)
        assert str(info.value) == missing_message(name)
        assert f"pip install 'pdeagent[{name}]'" in str(info.value)
        assert "\n" not in str(info.value)
        assert not extras.available(name)
    monkeypatch.undo()
    assert require("report").__name__ == "matplotlib"


def test_docker_backend_is_unavailable_and_never_chosen_without_the_sdk(monkeypatch):
    from pdeagent.sandbox.docker import DockerSandbox
    from pdeagent.sandbox.select import BACKENDS, resolve_backend

    monkeypatch.setitem(sys.modules, "docker", None)
    monkeypatch.delenv("PDEAGENT_SANDBOX", raising=False)
    why = DockerSandbox.unavailable_reason()
    assert why == "the docker sandbox needs the docker package: pip install 'pdeagent[docker]'"
    status = {name: "n/a" for name in BACKENDS} | {"docker": why, "local": None}
    assert resolve_backend(status=status) == "local"


def test_report_figures_without_matplotlib_name_the_extra(monkeypatch):
    from pdeagent.runs.report import Summary
    from pdeagent.runs.report_render import make_figures

    empty: list = []
    summary = Summary([], [object()], *([empty] * 7))  # one series: something to draw
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtra, match=r"pip install 'pdeagent\[report\]'"):
        make_figures(summary)


@pytest.mark.slow  # up to ~90 s: it validates the 645-case benchmark when uncached
def test_cli_works_without_the_optional_packages(tmp_path):
    record = json.loads(SAMPLE_CASES.read_text().splitlines()[0])
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(record) + "\n")
    run = tmp_path / "run"
    report = tmp_path / "report"
    sample_run = ["run", "-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases),
                  "--cases", record["id"], "--no-cache"]  # fmt: skip
    results = run_without_extras(
        [
            ["--help"],
            ["cases", "list", "--json"],
            ["prompt", "--track", "dolfinx", "--case", "poisson_star_smooth_mms_008"],
            [*sample_run, "--out", str(run), "--json"],
            ["report", str(run), "--out", str(report), "--json"],
            ["sandbox", "status"],
            [*sample_run, "--out", str(tmp_path / "docker_run"), "--sandbox", "docker"],
            [
                *sample_run,
                "--out",
                str(tmp_path / "dask_run"),
                "--executor",
                "dask",
                "--scheduler",
                "tcp://127.0.0.1:9",
            ],
        ],
        tmp_path,
    )
    helped, listed, prompt, ran, reported, status, docker, dask = results
    ok(helped)
    ok(listed)
    assert len(json.loads(listed["out"])) == 645
    ok(prompt)
    assert "Write a Python program that uses DOLFINx" in prompt["out"]
    ok(ran)
    summary = json.loads(ran["out"])
    assert summary["counts"]["PASS"] == 1
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["config"]["sandbox"] in ("bwrap", "local")
    ok(reported)
    json.loads(reported["out"])  # stdout is the JSON only; the note is on stderr
    note = missing_message("report")
    assert [line for line in reported["err"].splitlines() if note in line] == [
        f"note: figures not drawn: {note}",
        f"note: walkthrough pictures not drawn: {note}",
    ]
    assert (report / "report.html").is_file() and (report / "stages.csv").is_file()
    assert not (report / "figures").exists()
    (page,) = (report / "cases").rglob("index.html")  # the pages, without pictures
    assert "pictures not drawn" in page.read_text(encoding="utf-8")
    assert not list(report.rglob("*.webp"))
    ok(status)
    one_line_error(docker, "pip install 'pdeagent[docker]'")
    assert "sandbox backend 'docker' is not available" in docker["err"]
    one_line_error(dask, "--executor dask needs the distributed package")
    assert "pip install 'pdeagent[dask]'" in dask["err"]
