"""Rendering an attack's files into the submission the pipeline grades.

An attack is a real source file under ``attacks/<language>/`` (linted with the rest of
the repository; the C++ ones compile on their own), turned into a submission in two
explicit steps:

1. **lint-only blocks are removed.** A line that is exactly ``# adv: lint-only`` (Python)
   or ``// adv: lint-only`` (C++) starts a block that runs to the next blank line. The
   block holds only imports (``from _prelude import _note``, ``from _lint import
   __PORT__``), ``#include "_lint.hh"`` / ``#include "_prelude.hh"`` and ``#pragma once``:
   what linters and compilers need to see the names that the rendered submission gets from
   the prelude and the parameters. Anything else in a block is an error.
2. **placeholders are filled.** ``__NAME__`` (two underscores, upper-case letters, digits
   and underscores, two underscores) is replaced by the literal of ``params["NAME"]`` in
   the attack's language (:func:`literal`): ``repr`` for Python; for C++ a string, number,
   ``true``/``false``, or a braced initializer list for lists and dicts (pairs). The syntax
   is a valid identifier in both languages, so the files parse and compile with the
   lint-only stand-ins of ``_lint.py`` / ``_lint.hh``; a placeholder without a parameter
   raises ``KeyError``. (:class:`AttackTemplate` is a :class:`string.Template` with that
   placeholder pattern; f-strings and ``%`` formatting are never used on attack text.)

The submission is the language's prelude (``attacks/<language>/_prelude.*``: helpers that
record findings, read, list, write a ``meta.json``, ...) followed by the attack, or, for a
``uses_baseline`` attack, the track's own baseline solver followed by the attack.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from pdeagent.adversarial.model import Attack, read_attack_file

PRELUDES: dict[str, str] = {"python": "python/_prelude.py", "cpp": "cpp/_prelude.hh"}
"""Language -> the prelude file (relative to ``attacks/``) put before every attack that
does not use the track's baseline."""
KEEP_FIRST = ("// pdeagent-settings:",)
"""An attack file's first line that stays the submission's first line, before the
prelude: the deal.II compile stage reads a bundle's settings from line 1 only."""
LINT_STUBS: dict[str, str] = {"python": "python/_lint.py", "cpp": "cpp/_lint.hh"}
"""Language -> the lint-only stand-ins of the parameters; never part of a submission."""
LINT_ONLY_MARKERS = ("# adv: lint-only", "// adv: lint-only")
_LINT_ONLY_LINES = ("from ", "import ", "#include ", "#pragma once")


class AttackTemplate(string.Template):
    """``__NAME__`` placeholders (see the module docstring)."""

    flags = 0  # case-sensitive: ``__init__`` and ``__file__`` are not placeholders
    pattern = r"""
    (?<![A-Za-z0-9_])__(?:
      (?P<named>[A-Z](?:[A-Z0-9_]*[A-Z0-9])?)__
      | (?P<braced>(?!))
      | (?P<escaped>(?!))
      | (?P<invalid>(?!))
    )
    """


def strip_lint_only(text: str, where: str = "attack") -> str:
    """``text`` without its lint-only blocks (a marker line up to the next blank line)."""
    out: list[str] = []
    in_block = False
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if line.strip() in LINT_ONLY_MARKERS:
            in_block = True
            continue
        if in_block:
            if not line.strip():
                in_block = False
            elif line.startswith(_LINT_ONLY_LINES):
                continue
            else:
                raise ValueError(
                    f"{where}:{number}: a lint-only block may hold only imports and includes: "
                    f"end it with a blank line before {line.strip()[:60]!r}"
                )
        out.append(line)
    return "".join(out)


def literal(value: Any, language: str) -> str:
    """``value`` as a literal of ``language`` (``python`` or ``cpp``)."""
    if isinstance(value, Path):
        value = str(value)
    if language == "python":
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # ASCII-escaped: a valid C++ string literal for ASCII
    if isinstance(value, dict):
        pairs = ", ".join(f"{{{literal(k, language)}, {literal(v, language)}}}"
                          for k, v in value.items())  # fmt: skip
        return "{" + pairs + "}"
    if isinstance(value, list | tuple):
        return "{" + ", ".join(literal(v, language) for v in value) + "}"
    raise TypeError(f"cannot render {type(value).__name__} as {language}")


def fill(relpath: str, literals: dict[str, str]) -> str:
    """The file ``attacks/<relpath>`` without lint-only blocks, placeholders filled."""
    text = strip_lint_only(read_attack_file(relpath), relpath)
    return AttackTemplate(text).substitute(literals)


def render_source(attack: Attack, params: dict[str, Any], baseline: str | None = None) -> str:
    """The submission: the attack's file with ``params`` as literals of its language, after
    the language's prelude (or appended to ``baseline`` for ``uses_baseline`` attacks)."""
    literals = {k: literal(v, attack.language) for k, v in params.items()}
    body = fill(attack.source, literals).lstrip("\n")
    if attack.uses_baseline:
        if not baseline:
            raise ValueError(f"attack {attack.name} needs the track's baseline source")
        return baseline.rstrip() + "\n\n\n" + body
    prelude = fill(PRELUDES[attack.language], literals).rstrip("\n")
    first = ""
    if body.startswith(KEEP_FIRST):  # a line the compile stage reads only as line 1
        first, _, body = body.partition("\n")
        first += "\n"
    return first + prelude + ("\n\n\n" if attack.language == "python" else "\n\n") + body
