"""The deal.II prompt names exactly the binary files the output adapter reads, and a
program that writes a differently named file is rejected with the expected name.
(No compiler needed: the adapter is pure Python.)"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import pytest

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import load_cases
from pdeagent.plugins import load_plugins
from pdeagent.prompts.builder import build_prompt
from pdeagent_dealii import TRACK, output_files, pdeagent_adapt_output, pdeagent_prompt_pieces

DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v1.jsonl"
LISTED = re.compile(r"^- `(solution_grid[^`]*\.bin)`: the array `([^`]+)`$", re.M)


@pytest.fixture(scope="module")
def views():
    cases = [c for c in load_cases(DATASET) if "dealii" in c.supported_libraries]
    assert cases
    return {c.id: (c, agent_view(c, "dealii")) for c in cases}


def listed_files(text: str) -> dict[str, str]:
    block = text.split("For this case the harness reads exactly", 1)[1]
    return dict(LISTED.findall(block.split("\n\n", 1)[0]))


def grid_shape(view) -> tuple[int, ...]:
    g = view["case_spec"]["eval_grid"]
    return (g["ny"], g["nx"]) if g.get("nz") is None else (g["nz"], g["ny"], g["nx"])


def write(path: Path, shape: tuple[int, ...], value: float = 1.0) -> None:
    path.write_bytes(np.full(shape, value, dtype="<f8").tobytes())


def test_every_prompt_lists_exactly_the_files_the_adapter_reads(views):
    track = load_plugins().get_track("dealii")
    kinds = set()
    for case, view in views.values():
        expected = output_files(view["case_spec"]["output"])
        pieces = pdeagent_prompt_pieces(track=TRACK, case_view=view, mode="single")
        prompt = build_prompt(case, track, pieces)
        assert listed_files(prompt) == expected, case.id
        assert list(listed_files(prompt)) == list(expected), case.id  # same order
        kinds.add(len(expected))
    assert kinds >= {1, 2, 3}  # single arrays, 2-D and 3-D vector outputs


@pytest.mark.parametrize("kind", ["scalar", "vector2", "vector3"])
def test_writing_the_listed_files_is_accepted(views, kind, tmp_path):
    def arrays(v):
        return len(output_files(v["case_spec"]["output"]))

    count = {"scalar": 1, "vector2": 2, "vector3": 3}[kind]
    _, view = next((c, v) for c, v in views.values() if arrays(v) == count)
    pieces = pdeagent_prompt_pieces(track=TRACK, case_view=view, mode="single")
    files = listed_files(pieces.contract)
    assert len(files) == count
    for k, name in enumerate(files):
        write(tmp_path / name, grid_shape(view), float(k))
    out = pdeagent_adapt_output(track=TRACK, workdir=tmp_path, case_view=view)
    assert out.npz_path is not None, out.message
    with np.load(out.npz_path) as data:
        assert [float(data[a].max()) for a in files.values()] == list(map(float, range(count)))


def test_the_field_name_instead_of_the_component_names_is_rejected(views, tmp_path):
    _, view = next((c, v) for c, v in views.values() if v["case_spec"]["output"].get("components"))
    output = view["case_spec"]["output"]
    write(tmp_path / f"solution_grid_{output['field']}.bin", grid_shape(view))
    out = pdeagent_adapt_output(track=TRACK, workdir=tmp_path, case_view=view)
    assert out.npz_path is None and out.reason == "missing_artifact"
    first = f"solution_grid_{output['components'][0]}.bin"
    assert out.message.startswith(f"{first} was not written"), out.message
    for name in output_files(output):
        assert name in out.message
    assert f"found instead: solution_grid_{output['field']}.bin" in out.message


def test_a_named_file_for_a_single_array_is_rejected(views, tmp_path):
    _, view = next(
        (c, v) for c, v in views.values() if len(output_files(v["case_spec"]["output"])) == 1
    )
    field = view["case_spec"]["output"]["field"]
    write(tmp_path / f"solution_grid_{field}.bin", grid_shape(view))
    out = pdeagent_adapt_output(track=TRACK, workdir=tmp_path, case_view=view)
    assert out.npz_path is None and out.reason == "missing_artifact"
    assert out.message.startswith("solution_grid.bin was not written"), out.message
    assert f"solution_grid_{field}.bin" in out.message


def test_a_flow_output_with_pressure_lists_the_pressure_file(views):
    _, base = next((c, v) for c, v in views.values() if c.family == "stokes")
    view = copy.deepcopy(base)
    view["case_spec"]["output"] = {
        "field": "velocity",
        "components": ["u_x", "u_y"],
        "format": "npz",
        "pressure": {"array": "p", "normalization": "zero_mean"},
    }
    pieces = pdeagent_prompt_pieces(track=TRACK, case_view=view, mode="single")
    assert listed_files(pieces.contract) == {
        "solution_grid_u_x.bin": "u_x",
        "solution_grid_u_y.bin": "u_y",
        "solution_grid_p.bin": "p",
    }
