"""Code extraction from model replies: language, completeness, F-Gen reasons."""

from __future__ import annotations

import pytest

from pdeagent.extraction import extract_code, fenced_blocks

PY = "def solve(case_spec):\n    return None"


def test_single_python_block():
    reply = f"Here it is:\n\n```python\n{PY}\n```\n\nDone."
    got = extract_code(reply, "python")
    assert got.reason is None and got.code == PY + "\n"


def test_language_tag_beats_untagged_and_other_languages_are_ignored():
    reply = (
        '```json\n{"a": 1}\n```\n'
        "```\nprint('untagged and much longer than the tagged block, padding padding')\n```\n"
        f"```py\n{PY}\n```\n"
    )
    assert extract_code(reply, "python").code == PY + "\n"
    only_json = '```json\n{"a": 1}\n```'
    assert extract_code(only_json, "python").reason == "no_code"


def test_complete_block_beats_a_longer_truncated_one():
    reply = f"```python\n{PY}\n```\nA longer version:\n```python\n{PY}\n    x = 1\n    y = 2\n"
    got = extract_code(reply, "python", finish_reason="length")
    assert got.reason is None and got.code == PY + "\n"


def test_truncated_reply_is_f_gen_truncated():
    reply = f"```python\n{PY}\n    x = 1"
    got = extract_code(reply, "python", finish_reason="length")
    assert got.code is None and got.reason == "truncated"
    assert "token limit" in got.message
    assert extract_code(reply, "python").reason == "truncated"


def test_no_code_is_f_gen_no_code():
    got = extract_code("I cannot help with that.", "python")
    assert got.code is None and got.reason == "no_code" and got.blocks == 0
    assert "token limit" in extract_code("Sure, the", "python", finish_reason="length").message


def test_longest_then_last_among_equals():
    a = "```python\nx = 1\n```"
    b = "```python\nx = 2\n```"
    assert extract_code(f"{a}\n{b}", "python").code == "x = 2\n"
    long = "```python\nx = 1\ny = 2\n```"
    assert extract_code(f"{long}\n{b}", "python").code == "x = 1\ny = 2\n"


def test_cpp_tags_and_nested_fences():
    cpp = "#include <cstdio>\nint main() { return 0; }"
    reply = f"````cpp\n{cpp}\n```\nnot a close\n```\n````\n"
    got = extract_code(reply, "cpp")
    assert got.reason is None and got.code.startswith("#include") and "not a close" in got.code
    assert extract_code(f"```c++\n{cpp}\n```", "cpp").code == cpp + "\n"
    assert extract_code(f"```python\n{PY}\n```", "cpp").reason == "no_code"


def test_tilde_fences_and_empty_blocks():
    assert extract_code(f"~~~python\n{PY}\n~~~", "python").code == PY + "\n"
    assert extract_code("```python\n\n```", "python").reason == "no_code"
    blocks = fenced_blocks("```python\na\n```\n```\nb")
    assert [(b.code, b.complete) for b in blocks] == [("a", True), ("b", False)]


def test_hostile_replies():
    assert extract_code("x" * 2_000_001, "python").reason == "too_long"
    many = "```python\n" * 5000
    assert extract_code(many, "python").reason in ("no_code", "truncated")
    with pytest.raises(ValueError, match="unknown language"):
        extract_code("", "fortran")
