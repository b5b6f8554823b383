"""Cases: the record model, its JSON Schema, validation and the agent view."""

from pdeagent.cases.model import Case, CaseSpec, converter

__all__ = ["Case", "CaseSpec", "converter"]
