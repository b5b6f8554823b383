"""The attack programs are real source files (``pdeagent/adversarial/attacks``): every
catalogue entry's file exists, no file there is left out of the catalogue, the Python
ones parse and are linted by ruff, the C++ ones compile on their own and once rendered,
rendering removes the lint-only blocks and fills every placeholder, and the wheel ships
the files."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pdeagent.adversarial import ATTACKS, attacks_for, render_source
from pdeagent.adversarial.catalogue import attack_files_on_disk, catalogue_files
from pdeagent.adversarial.model import attacks_dir
from pdeagent.adversarial.render import (
    LINT_ONLY_MARKERS,
    AttackTemplate,
    literal,
    strip_lint_only,
)

from .test_adversarial_checks import PARAMS

REPO_ROOT = Path(__file__).resolve().parents[2]
ATTACKS_DIR = attacks_dir()
PY_FILES = sorted(p for p in catalogue_files() if p.endswith(".py"))
CC_FILES = sorted(p for p in catalogue_files() if p.endswith(".cc"))
GXX = shutil.which("g++")


def test_every_catalogue_file_exists_and_every_file_is_catalogued():
    files = catalogue_files()
    assert {a.source for a in ATTACKS} <= set(files)
    missing = [p for p in files if not (ATTACKS_DIR / p).is_file()]
    assert missing == []
    orphans = sorted(set(attack_files_on_disk()) - set(files))
    assert orphans == [], f"files under {ATTACKS_DIR} that no catalogue entry uses"
    assert len(attack_files_on_disk()) == len(files)
    # one folder per language, each attack in its language's folder
    assert {a.source.split("/")[0] for a in ATTACKS} == {"python", "cpp"}
    assert {a.name for a in attacks_for("cpp")} == {
        Path(p).stem for p in files if p.endswith(".cc")
    }


@pytest.mark.parametrize("relpath", PY_FILES)
def test_every_python_attack_file_parses(relpath):
    tree = ast.parse((ATTACKS_DIR / relpath).read_text(), filename=relpath)
    assert tree.body


def test_ruff_lints_the_attack_files():
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.is_file():
        pytest.skip("ruff is not installed in this environment (pip install -e '.[test]')")
    shown = subprocess.run(
        [str(ruff), "check", "--show-files", str(ATTACKS_DIR)],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    linted = {Path(line.strip()).resolve() for line in shown.splitlines() if line.strip()}
    assert {(ATTACKS_DIR / p).resolve() for p in PY_FILES} <= linted
    result = subprocess.run(
        [str(ruff), "check", str(ATTACKS_DIR)], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_placeholders_are_parameters_and_lint_only_blocks_are_removed():
    for relpath in catalogue_files():
        if "_lint." in relpath:
            continue
        text = strip_lint_only((ATTACKS_DIR / relpath).read_text(), relpath)
        assert not any(m in text for m in LINT_ONLY_MARKERS), relpath
        assert set(AttackTemplate(text).get_identifiers()) <= set(PARAMS), relpath
    for attack in ATTACKS:
        baseline = "def solve(case_spec):\n    pass\n" if attack.uses_baseline else None
        source = render_source(attack, PARAMS, baseline)
        assert "adv: lint-only" not in source
        assert "_lint" not in source and '"_prelude.hh"' not in source
        assert "from _prelude" not in source
        assert AttackTemplate(source).get_identifiers() == [], attack.name  # all filled


def test_a_lint_only_block_holds_only_imports():
    text = "# adv: lint-only\nfrom _lint import __PORT__\n\nx = __PORT__\n"
    assert strip_lint_only(text) == "\nx = __PORT__\n"
    assert AttackTemplate(strip_lint_only(text)).substitute(PORT=literal(7, "python")) == (
        "\nx = 7\n"
    )
    with pytest.raises(ValueError, match="lint-only block may hold only imports"):
        strip_lint_only("# adv: lint-only\nfrom _lint import x\nsolve = None\n")
    with pytest.raises(KeyError, match="PORT"):
        AttackTemplate("x = __PORT__").substitute({})
    assert AttackTemplate("__init__ __file__ a__B__").get_identifiers() == []


DELIBERATE_ERRORS = {"cpp/feedback_injection_compile.cc": "static assertion failed"}
"""Attack files that must fail to compile, and the one error they must fail with."""


def assert_compiles(result: subprocess.CompletedProcess[str], relpath: str) -> None:
    """The file compiles, or fails with its deliberate error and no other."""
    deliberate = DELIBERATE_ERRORS.get(relpath)
    if deliberate is None:
        assert result.returncode == 0, result.stderr
        return
    errors = [line for line in result.stderr.splitlines() if ": error:" in line]
    assert result.returncode != 0 and errors, result.stderr
    assert all(deliberate in line for line in errors), result.stderr


@pytest.mark.skipif(GXX is None, reason="g++ is not installed")
@pytest.mark.parametrize("relpath", CC_FILES)
def test_every_cpp_attack_file_compiles_on_its_own(relpath):
    result = subprocess.run(
        [GXX, "-std=c++17", "-fsyntax-only", "-Wall", relpath],
        cwd=ATTACKS_DIR, capture_output=True, text=True,
    )  # fmt: skip
    assert_compiles(result, relpath)


@pytest.mark.skipif(GXX is None, reason="g++ is not installed")
@pytest.mark.parametrize("attack", [pytest.param(a, id=a.name) for a in attacks_for("cpp")])
def test_every_rendered_cpp_attack_compiles(attack, tmp_path):
    params = dict(PARAMS, INCLUDE_TARGET=str(tmp_path / "included.h"))
    (tmp_path / "included.h").write_text("")
    (tmp_path / "solver.cc").write_text(render_source(attack, params))
    result = subprocess.run(
        [GXX, "-std=c++17", "-fsyntax-only", "-Wall", "solver.cc"],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert_compiles(result, attack.source)


def test_the_wheel_ships_the_attack_files(tmp_path):
    pytest.importorskip("hatchling")
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(tmp_path)],
        cwd=REPO_ROOT, check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("pdeagent-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"pdeagent/adversarial/attacks/{p}" for p in catalogue_files()}
    assert shipped <= names, sorted(shipped - names)
