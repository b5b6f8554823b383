"""Reading the untrusted JSONL input: capped lines, strict JSON, checked values."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pdeagent.cases.expressions import ExpressionError, parse_expression
from pdeagent.cases.upstream.limits import MAX_ID_CHARS, MAX_LINE_BYTES


class _Skip(Exception):
    """The record cannot be imported faithfully (message: why)."""


# ----------------------------------------------------------------------------- reading


def _lines(path: Path) -> Iterator[tuple[int, str | None, str | None]]:
    """(line number, text or None, problem or None) for each line, with the length cap."""
    with path.open("rb") as fh:
        number = 0
        while True:
            chunk = fh.readline(MAX_LINE_BYTES + 1)
            if not chunk:
                return
            number += 1
            if len(chunk) > MAX_LINE_BYTES and not chunk.endswith(b"\n"):
                while True:
                    rest = fh.readline(1 << 20)
                    if not rest or rest.endswith(b"\n"):
                        break
                yield number, None, f"line longer than {MAX_LINE_BYTES} bytes"
                continue
            try:
                text = chunk.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                yield number, None, "line is not valid UTF-8"
                continue
            yield number, text, None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _parse_line(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise _Skip("malformed JSON: nested too deeply") from None
    except ValueError as exc:
        raise _Skip(f"malformed JSON: {exc}") from None


def sanitize_id(upstream_id: str) -> str:
    """``upstream_<id>`` lower-cased, runs of characters outside ``[a-z0-9_]`` -> ``_``."""
    body = re.sub(r"[^a-z0-9_]+", "_", upstream_id.lower()).strip("_")
    return f"upstream_{body}"[:MAX_ID_CHARS].rstrip("_")


# ----------------------------------------------------------------------------- small parsers


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Skip(f"{where} must be a number, got {_short(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise _Skip(f"{where} must be finite")
    return number


def _integer(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Skip(f"{where} must be an integer, got {_short(value)}")
    return value


def _point(value: Any, where: str) -> list[float]:
    if not isinstance(value, list) or len(value) != 2:
        raise _Skip(f"{where} must be a pair of numbers, got {_short(value)}")
    return [_number(v, where) for v in value]


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _expression(value: Any, where: str) -> str:
    """An upstream scalar expression (string or number) as checked expression text."""
    if isinstance(value, str):
        text = value.strip()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        text = repr(_number(value, where) if isinstance(value, float) else value)
    else:
        raise _Skip(f"{where} must be an expression string or a number, got {_short(value)}")
    try:
        parse_expression(text)
    except ExpressionError as exc:
        raise _Skip(f"unparsable expression in {where}: {exc}") from None
    return text


def _vector(value: Any, dim: int, where: str, *, broadcast: bool) -> list[str]:
    if isinstance(value, list):
        if len(value) != dim:
            raise _Skip(f"{where} has {len(value)} components, expected {dim}")
        return [_expression(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if broadcast:
        return [_expression(value, where)] * dim
    raise _Skip(f"{where} must be a list of {dim} expressions")


def _dict(value: Any, where: str, *, required: bool = False) -> dict[str, Any]:
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise _Skip(f"{where} must be an object")
    return value
