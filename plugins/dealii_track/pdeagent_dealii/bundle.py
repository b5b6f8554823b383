"""Single-file sources of the deal.II track's calibration and reference programs.

A program (``programs/<family>.cc``) includes the shared headers with
``#include "common.h"`` (which includes ``meshing.h``); :func:`bundle` inlines them,
so the result is one file that compiles with the harness's own command, exactly like a
submission.

The numerical settings are read at run time, so every settings variant of a family
(the calibration settings of each case, the reference fidelities, a ladder's rungs, a
convergence test's resolutions) runs one compiled binary. The bundle's first line is
``// pdeagent-settings: {...}`` (:data:`SETTINGS_LINE`), which the track's compile
stage writes beside the binary as ``pdeagent_settings.json`` (:data:`SETTINGS_FILE`)
and leaves out of its cache key (a comment line: it does not change the binary); the
bundle defines each ``PDEAGENT_<NAME>`` the program uses as a call that reads that file
once. A program names its settings and their defaults in ``#ifndef PDEAGENT_<NAME>``
blocks; the bundle gives every one of them a runtime value.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

_PROGRAMS = resources.files(__name__.rsplit(".", 1)[0]).joinpath("programs")
_DECLARED = re.compile(r"^// pdeagent-(?P<kind>calibration|reference): (?P<value>\{.*\})\s*$", re.M)


def _declared_settings() -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Each program declares its calibration and reference settings in two comment
    lines, ``// pdeagent-calibration: {...}`` and ``// pdeagent-reference: {...}``."""
    calibration: dict[str, dict[str, Any]] = {}
    reference: dict[str, dict[str, Any]] = {}
    for entry in sorted(_PROGRAMS.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".cc"):
            continue
        family = entry.name[: -len(".cc")]
        found = {m["kind"]: json.loads(m["value"]) for m in _DECLARED.finditer(entry.read_text())}
        if set(found) != {"calibration", "reference"}:
            raise RuntimeError(f"programs/{entry.name} does not declare both settings lines")
        calibration[family], reference[family] = found["calibration"], found["reference"]
    return calibration, reference


DEFAULTS, REFERENCE = _declared_settings()
"""Calibration settings (the competent baseline the thresholds are measured with) and
high-fidelity settings (no-exact references), per family."""
FAMILIES = tuple(DEFAULTS)
"""Families with a deal.II program (``programs/<family>.cc``)."""

_INCLUDE = re.compile(r'^#include "(?P<name>[A-Za-z0-9_]+\.h)"\s*$', re.M)
_SETTING = re.compile(r"^[a-z_]+$")
_PROGRAM_DEFAULT = re.compile(
    r"^#ifndef PDEAGENT_(?P<name>[A-Z_]+)\n#\s*define PDEAGENT_(?P=name) (?P<value>\S+)\s*$", re.M
)

SETTINGS_FILE = "pdeagent_settings.json"
"""The settings a bundled program reads at run time, in its working directory."""
SETTINGS_LINE = re.compile(r"\A// pdeagent-settings: (?P<value>\{[^\n]*\})\n")
"""The bundle's first line: the settings, for the compile stage to write as
:data:`SETTINGS_FILE`."""

_READER = """\
#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>
#include <string>

namespace pdeagent_settings
{
  // The settings of this run, read once from the working directory.
  inline const nlohmann::json &all()
  {
    static const nlohmann::json values = [] {
      std::ifstream in("%(file)s");
      if (!in)
        throw std::runtime_error("%(file)s is missing from the working directory");
      return nlohmann::json::parse(in);
    }();
    return values;
  }

  template <typename T>
  T get(const char *name)
  {
    const auto &values = all();
    if (!values.contains(name))
      throw std::runtime_error(std::string("%(file)s lacks the setting ") + name);
    return values.at(name).get<T>();
  }
} // namespace pdeagent_settings
"""


def _read(name: str) -> str:
    return _PROGRAMS.joinpath(name).read_text(encoding="utf-8")


def _program_defaults(family: str, program: str) -> dict[str, int | float]:
    """The settings a program declares with ``#ifndef PDEAGENT_<NAME>`` and its defaults."""
    found: dict[str, int | float] = {}
    for match in _PROGRAM_DEFAULT.finditer(program):
        text = match["value"]
        try:
            value: int | float = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise RuntimeError(
                    f"programs/{family}.cc: PDEAGENT_{match['name']} has a default that is "
                    f"not a number: {text!r}"
                ) from None
        found[match["name"].lower()] = value
    return found


def bundle(family: str, settings: dict[str, Any] | None = None) -> str:
    """The program of ``family`` as one source file that runs with ``settings`` (over the
    family's calibration settings and the program's own defaults)."""
    if family not in FAMILIES:
        raise KeyError(f"no deal.II program for family {family!r} (have: {', '.join(FAMILIES)})")
    program = _read(f"{family}.cc")
    values = {**_program_defaults(family, program), **DEFAULTS[family], **(settings or {})}
    lines = [
        f"// pdeagent-settings: {json.dumps(values, sort_keys=True, separators=(',', ':'))}",
        f"// pdeagent deal.II calibration program: {family} (generated by bundle.py)",
        _READER % {"file": SETTINGS_FILE},
    ]
    for name, value in sorted(values.items()):
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not _SETTING.match(name) or not number:
            raise ValueError(f"bad setting {name!r}={value!r} for the {family} program")
        kind = "int" if isinstance(value, int) else "double"
        macro = f"PDEAGENT_{name.upper()}"
        lines.append(
            f"inline {kind} pdeagent_setting_{name}() "
            f'{{ static const {kind} v = pdeagent_settings::get<{kind}>("{name}"); return v; }}'
        )
        lines.append(f"#define {macro} (pdeagent_setting_{name}())")
    return "\n".join(lines) + "\n" + inline_headers(program)


def settings_of(source: str) -> tuple[dict[str, Any] | None, str]:
    """The settings a bundled source carries on its first line (``None`` for any other
    source), and the source without that line."""
    match = SETTINGS_LINE.match(source)
    if match is None:
        return None, source
    try:
        values = json.loads(match["value"])
    except ValueError:
        return None, source
    if not isinstance(values, dict):
        return None, source
    return values, source[match.end() :]


def inline_headers(source: str) -> str:
    """``source`` with every ``#include "x.h"`` of the track's headers inlined, once
    each, recursively."""
    inlined: set[str] = set()

    def inline(match: re.Match[str]) -> str:
        name = match["name"]
        if name in inlined:
            return ""
        inlined.add(name)
        text = _INCLUDE.sub(inline, _read(name))  # headers may include headers
        return f"// ---- {name} (inlined) ----\n{text}\n// ---- end of {name} ----"

    return _INCLUDE.sub(inline, source)
