"""A track declares its language: display name, submission file, fence tags (issue #21).

A Julia track is added by a plugin alone: its prompt names Julia and its code is taken
from a ```julia or ```jl block, with no change to the core's tables.
"""

from __future__ import annotations

import importlib.metadata
import json

import pytest
from typer.testing import CliRunner

from pdeagent import hookimpl
from pdeagent.cases.validate import validate_records
from pdeagent.cli import common
from pdeagent.cli.main import app
from pdeagent.extraction import extract_code
from pdeagent.plugins import load_plugins
from pdeagent.stages import LANGUAGES, PromptPieces, Track

from .conftest import SAMPLE_CASES

JULIA = Track(
    "juliafem",
    "Gridap",
    "julia",
    "solver.jl",
    display_language="Julia",
    fence_tags=("julia", "jl"),
)
JULIA_CODE = "using Gridap\nfunction solve(spec)\nend"


def test_python_and_cpp_tracks_keep_their_defaults():
    py = Track("p", "P", "python", "solver.py")
    cpp = Track("c", "C", "cpp", "solver.cc")
    assert py.display_language == "Python" and py.fence_tags == LANGUAGES["python"].fence_tags
    assert cpp.display_language == "C++" and "c++" in cpp.fence_tags
    assert (py.prepare_verb, cpp.prepare_verb) == ("imports", "compiles")
    # a track may override the table's defaults; tags are compared in lower case
    narrow = Track("c2", "C", "cpp", "main.cpp", fence_tags=("CPP",))
    assert narrow.fence_tags == ("cpp",) and narrow.display_language == "C++"
    assert extract_code("```c++\nint x;\n```", narrow).reason == "no_code"
    assert extract_code("```cpp\nint x;\n```", narrow).code == "int x;\n"


def test_an_undeclared_language_defaults_to_its_own_name():
    track = Track("r", "R", "rust", "main.rs")
    assert track.display_language == "Rust" and track.fence_tags == ("rust",)
    assert track.prepare_verb == "loads"
    assert extract_code("```rust\nfn main() {}\n```", track).code == "fn main() {}\n"


def test_julia_code_is_extracted_by_the_tracks_fence_tags():
    for tag in ("julia", "jl", "Julia"):
        reply = f"Here:\n```python\nprint(1)\n```\n```{tag}\n{JULIA_CODE}\n```\n"
        assert extract_code(reply, JULIA).code == JULIA_CODE + "\n", tag
    untagged = f"```\n{JULIA_CODE}\n```"
    assert extract_code(untagged, JULIA).code == JULIA_CODE + "\n"
    only_python = "```python\nprint(1)\n```"
    got = extract_code(only_python, JULIA)
    assert got.reason == "no_code" and "julia" in got.message
    assert extract_code(f"```jl\n{JULIA_CODE}", JULIA).reason == "truncated"


@pytest.fixture
def julia_cli(fake_module, tmp_path, monkeypatch):
    """The CLI with one plugin installed: a Julia track (registration + prompt pieces)."""

    @hookimpl
    def pdeagent_register_tracks(register):
        register(JULIA)

    @hookimpl
    def pdeagent_prompt_pieces(track, case_view, mode):
        return PromptPieces(contract="Write solver.jl defining `solve(spec)`.", guide="Gridap.")

    fake_module(
        "fake_julia_track",
        pdeagent_register_tracks=pdeagent_register_tracks,
        pdeagent_prompt_pieces=pdeagent_prompt_pieces,
    )
    entry = importlib.metadata.EntryPoint(
        name="juliafem", value="fake_julia_track", group="pdeagent"
    )
    host = load_plugins(entry_points=[entry], strict=True)
    record = json.loads(SAMPLE_CASES.read_text().splitlines()[0])
    record["supported_libraries"] = ["juliafem"]
    thresholds = record["evaluation_metadata"]["thresholds"]
    thresholds["juliafem"] = thresholds.pop("numpy_fd")
    cases = tmp_path / "julia_cases.jsonl"
    cases.write_text(json.dumps(record) + "\n")
    monkeypatch.setattr(common, "_host", host)
    yield CliRunner(), cases, record["id"]
    common.reset_host()


def test_a_julia_tracks_prompt_says_julia(julia_cli):
    runner, cases, case_id = julia_cli
    result = runner.invoke(
        app, ["prompt", "--track", "juliafem", "--case", case_id, "--cases-file", str(cases)]
    )
    assert result.exit_code == 0, result.output
    assert "Write a Julia program that uses Gridap" in result.stdout
    assert "Runs: the program loads," in result.stdout  # not "imports": it is not Python
    assert "julia program" not in result.stdout


def test_the_cli_learns_library_names_from_the_registered_tracks(julia_cli):
    runner, cases, _ = julia_cli
    assert "juliafem" in common.known_tracks()
    result = runner.invoke(app, ["cases", "validate", str(cases)])
    assert result.exit_code == 0, result.output
    # without the plugin the name is unknown (the validator's default names)
    record = json.loads(cases.read_text())
    problems = validate_records([record])
    assert any("unknown library 'juliafem'" in p.message for p in problems)
    # the benchmark's own track names stay accepted without their plugins installed
    assert {"dolfinx", "firedrake", "dealii"} <= common.known_tracks()
