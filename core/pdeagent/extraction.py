"""Code extraction from a model reply (issue #5): which fenced block is the submission.

Rules:
- fenced blocks are Markdown fences (three or more backticks or tildes, an optional
  info string, closed by a fence of the same character at least as long);
- a block tagged with one of the track's fence tags (:attr:`Track.fence_tags`, by
  default those of its language in :data:`pdeagent.stages.LANGUAGES`) wins over an
  untagged one; blocks tagged with another language are never chosen;
- a complete block wins over a truncated one (a final fence that never closes); among
  complete blocks of the same rank the longest wins (ties: the last one, the model's
  final answer);
- a reply cut off by the token limit (``finish_reason == "length"``) whose only
  candidate is truncated, or a truncated block without a complete one, is
  ``F-Gen truncated``; a reply without any candidate block is ``F-Gen no_code``. Both
  are generation failures, never execution failures.
"""

from __future__ import annotations

import re
from typing import Literal

from attrs import define

from pdeagent.stages import LANGUAGES, Track

MAX_REPLY_CHARS = 2_000_000
"""Longer replies are refused (``F-Gen too_long``) before any parsing."""

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)$")


@define(frozen=True)
class Block:
    info: str
    code: str
    complete: bool


@define(frozen=True)
class Extraction:
    code: str | None
    reason: Literal["no_code", "truncated", "too_long"] | None
    """None when ``code`` was found; else the F-Gen reason."""
    message: str
    blocks: int = 0


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced block of ``text`` in order; an unclosed last block is incomplete."""
    blocks: list[Block] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match or (match["fence"][0] == "`" and "`" in match["info"]):
            i += 1
            continue
        fence, info = match["fence"], match["info"].strip()
        body: list[str] = []
        j = i + 1
        closed = False
        while j < len(lines):
            close = _FENCE.match(lines[j])
            if (
                close
                and close["fence"][0] == fence[0]
                and len(close["fence"]) >= len(fence)
                and not close["info"].strip()
            ):
                closed = True
                break
            body.append(lines[j])
            j += 1
        blocks.append(Block(info=info, code="\n".join(body), complete=closed))
        i = j + 1
    return blocks


def _tag(info: str) -> str:
    first = info.split()[0] if info.split() else ""
    return first.strip("{}.").lower()


def _tags_of(language: str | Track) -> tuple[str, frozenset[str]]:
    """(language name, accepted fence tags) of a track, or of a language of
    :data:`~pdeagent.stages.LANGUAGES` given by name."""
    if isinstance(language, Track):
        return language.language, frozenset(language.fence_tags)
    if language not in LANGUAGES:
        raise ValueError(
            f"unknown language {language!r}; known: {sorted(LANGUAGES)} "
            "(pass the Track for a language it declares itself)"
        )
    return language, frozenset(LANGUAGES[language].fence_tags)


def extract_code(
    text: str, language: str | Track, *, finish_reason: str | None = None
) -> Extraction:
    """The submission in ``text`` for ``language``: a :class:`~pdeagent.stages.Track`
    (its declared fence tags), or a language name of :data:`~pdeagent.stages.LANGUAGES`."""
    language, tags = _tags_of(language)
    if len(text) > MAX_REPLY_CHARS:
        return Extraction(None, "too_long", f"reply of {len(text)} characters refused")
    blocks = [b for b in fenced_blocks(text) if b.code.strip()]
    ranked = []
    for index, block in enumerate(blocks):
        tag = _tag(block.info)
        if tag in tags:
            rank = 2
        elif tag == "":
            rank = 1
        else:
            continue  # another language (json, bash, text, ...)
        ranked.append((block.complete, rank, len(block.code), index, block))
    if not ranked:
        cut = " (the reply was cut off by the token limit)" if finish_reason == "length" else ""
        return Extraction(
            None, "no_code", f"no {language} code block in the reply{cut}", blocks=len(blocks)
        )
    complete, _rank, _size, _index, best = max(ranked, key=lambda r: r[:4])
    if not complete:
        why = "cut off by the token limit" if finish_reason == "length" else "never closed"
        return Extraction(
            None,
            "truncated",
            f"the only {language} code block is truncated ({why})",
            blocks=len(blocks),
        )
    return Extraction(best.code.rstrip() + "\n", None, "", blocks=len(blocks))
