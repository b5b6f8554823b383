"""The provider interface: one prompt in, one generation out."""

from __future__ import annotations

from typing import Any, Protocol

from attrs import define, field


@define(frozen=True)
class GenerationRequest:
    prompt: str
    model: str
    temperature: float | None = 0.0
    max_tokens: int = 16000
    attempt: int = 0
    """Index of the sample/attempt (feedback mode: 0, 1, ...)."""
    case_id: str | None = None
    track: str | None = None
    system: str | None = None


@define(frozen=True)
class Generation:
    text: str
    finish_reason: str | None = None
    """``stop``, ``length`` (cut off by the token limit), ..."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    raw: dict[str, Any] = field(factory=dict)


class Provider(Protocol):
    """An LLM provider registered through ``pdeagent_register_providers``."""

    name: str
    description: str

    def generate(self, request: GenerationRequest) -> Generation:
        """Return one completion; raise on errors (the caller records and retries)."""
        ...
