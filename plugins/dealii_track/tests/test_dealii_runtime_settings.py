"""The bundled deal.II programs read their numerical settings at run time: the bundle's
first line carries them, the compile stage writes them beside the binary and leaves
that line out of its cache key, so every settings variant of a family runs one compiled
binary, and the settings still decide the discretisation (a convergence order)."""

from __future__ import annotations

import json
import math
import subprocess
import tempfile
from pathlib import Path

import pytest
from dealii_harness import Setup

from pdeagent.cases.agent_view import agent_view
from pdeagent_dealii.bundle import DEFAULTS, FAMILIES, SETTINGS_FILE, bundle, settings_of

CASE = "poisson_unit_square_smooth_mms_000"


# ------------------------------------------------------------ the bundle (no compiler)


def test_every_variant_of_a_family_is_the_same_program_after_its_settings_line():
    for family in FAMILIES:
        base = bundle(family)
        carried, program = settings_of(base)
        assert carried is not None and set(DEFAULTS[family]) <= set(carried), family
        assert all(carried[k] == v for k, v in DEFAULTS[family].items()), family
        assert "pdeagent-settings:" not in program.splitlines()[0], family
        key = next(iter(DEFAULTS[family]))
        value = DEFAULTS[family][key]
        varied = bundle(family, {key: value + 1})
        assert varied != base
        assert settings_of(varied)[1] == program, family
        assert settings_of(varied)[0][key] == value + 1, family


def test_the_settings_line_counts_only_as_the_first_line_and_only_as_a_json_object():
    plain = 'int main() { return 0; }\n// pdeagent-settings: {"resolution": 8}\n'
    assert settings_of(plain) == (None, plain)
    not_an_object = "// pdeagent-settings: [8]\nint main() { return 0; }\n"
    assert settings_of(not_an_object) == (None, not_an_object)
    broken = "// pdeagent-settings: {resolution: 8}\nint main() { return 0; }\n"
    assert settings_of(broken) == (None, broken)
    given = '// pdeagent-settings: {"resolution": 8}\nint main() { return 0; }\n'
    assert settings_of(given) == ({"resolution": 8}, "int main() { return 0; }\n")


@pytest.mark.parametrize("value", [True, "32", None, [32]])
def test_a_setting_that_is_not_a_number_is_refused(value):
    with pytest.raises(ValueError, match="bad setting 'resolution'"):
        bundle("poisson", {"resolution": value})


# -------------------------------------------------------------- compiled and run


@pytest.fixture(scope="module")
def setup():
    return Setup()


@pytest.mark.dealii
@pytest.mark.slow
def test_two_resolutions_run_one_binary_and_converge_at_order_three(setup, tmp_path):
    case = setup.case(CASE)
    coarse_source = bundle("poisson", {"resolution": 8})
    fine_source = bundle("poisson", {"resolution": 16})
    first = setup.prepare(coarse_source, tmp_path / "a")
    assert first.ok, first.log[-2000:]
    second = setup.prepare(fine_source, tmp_path / "b")
    assert second.ok and second.log.startswith("reused the binary"), second.log[-2000:]
    assert (tmp_path / "a" / "solver").read_bytes() == (tmp_path / "b" / "solver").read_bytes()
    written = json.loads((tmp_path / "b" / SETTINGS_FILE).read_text())
    assert written == settings_of(fine_source)[0] and written["resolution"] == 16

    coarse = setup.grade(case, coarse_source, tau_acc=1.0)
    fine = setup.grade(case, fine_source, tau_acc=1.0)
    assert coarse.diagnostics["solver_info"]["mesh_resolution"] == 8, coarse
    assert fine.diagnostics["solver_info"]["mesh_resolution"] == 16, fine
    order = math.log2(coarse.error / fine.error)
    assert 2.5 < order < 3.6, (coarse.error, fine.error, order)


@pytest.mark.dealii
@pytest.mark.slow
def test_a_bundled_binary_without_its_settings_file_fails_loudly(setup, tmp_path):
    build = tmp_path / "build"
    prepared = setup.prepare(bundle("poisson", {"resolution": 8}), build)
    assert prepared.ok, prepared.log[-2000:]
    (build / SETTINGS_FILE).unlink()
    invocation = setup.host.call_track_hook(
        setup.track, "pdeagent_invocation", workdir=build,
        case_view=agent_view(setup.case(CASE), "dealii"),
    )  # fmt: skip
    for name, content in invocation.files.items():
        (build / name).write_bytes(content)
    with tempfile.TemporaryDirectory() as out:
        ran = subprocess.run(
            [*invocation.argv[:-1], out], cwd=build, env=invocation.env,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert ran.returncode != 0, ran.stdout
        assert f"{SETTINGS_FILE} is missing" in ran.stderr, ran.stderr[-2000:]
        assert not list(Path(out).glob("solution*")), "no solution may be written"
