"""Meta-tests: every hook spec is typed, documented in docs/plugins.md and has a test."""

from __future__ import annotations

import inspect

import pytest

from pdeagent import hookspecs

from .conftest import REPO_ROOT, TESTS_DIR

SPECS = sorted(
    name
    for name, obj in vars(hookspecs).items()
    if inspect.isfunction(obj) and name.startswith("pdeagent_")
)


def test_there_are_hook_specs_and_all_are_prefixed():
    assert len(SPECS) >= 7
    stray = [
        n
        for n, o in vars(hookspecs).items()
        if inspect.isfunction(o) and hasattr(o, "pdeagent_spec") and not n.startswith("pdeagent_")
    ]
    assert stray == []


@pytest.mark.parametrize("name", SPECS)
def test_hook_spec_is_typed_and_has_a_docstring(name):
    fn = getattr(hookspecs, name)
    assert (fn.__doc__ or "").strip(), f"{name} has no docstring"
    sig = inspect.signature(fn)
    assert sig.return_annotation is not inspect.Signature.empty
    for param in sig.parameters.values():
        assert param.annotation is not inspect.Parameter.empty, f"{name}({param.name}) untyped"


@pytest.mark.parametrize("name", SPECS)
def test_hook_spec_is_documented(name):
    doc = (REPO_ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    assert f"### `{name}(" in doc, f"{name} has no section in docs/plugins.md"


@pytest.mark.parametrize("name", SPECS)
def test_hook_spec_has_a_test(name):
    this = TESTS_DIR / "test_hookspecs.py"
    users = [
        p.name
        for p in TESTS_DIR.rglob("test_*.py")
        if p != this and f"def test_{name}" in p.read_text(encoding="utf-8")
    ]
    assert users, f"no test function named test_{name}* exercises hook {name}"
