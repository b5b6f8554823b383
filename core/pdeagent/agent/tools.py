"""The four tools of an agent episode, as offered to the model (issue #22).

The loop (:mod:`pdeagent.agent.loop`) carries them out; these are only their names,
descriptions and argument schemas, the same for every provider.
"""

from __future__ import annotations

from pdeagent.agent.protocol import ToolSpec

WRITE_FILE = "write_file"
READ_FILE = "read_file"
RUN = "run"
SUBMIT = "submit"

_PATH = {
    "type": "string",
    "description": "A path relative to your work directory (no '..', no absolute path).",
}

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        WRITE_FILE,
        "Create or overwrite a UTF-8 text file in your work directory.",
        {
            "type": "object",
            "properties": {
                "path": _PATH,
                "content": {"type": "string", "description": "The whole new file content."},
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        READ_FILE,
        "Read a text file of your work directory (long files are cut; the answer says so).",
        {
            "type": "object",
            "properties": {"path": _PATH},
            "required": ["path"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        RUN,
        "Run a shell command (/bin/sh -c) in your work directory, inside the sandbox that "
        "has the track's runtime. No network. Files persist between commands; processes do "
        "not. Each command has a wall-time limit; stdout and stderr are cut to a bound.",
        {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The shell command."}},
            "required": ["command"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        SUBMIT,
        "Submit a file of your work directory as your final solver and end the episode. It "
        "is graded exactly like a single-shot submission, in a fresh sandbox.",
        {
            "type": "object",
            "properties": {"path": _PATH},
            "required": ["path"],
            "additionalProperties": False,
        },
    ),
)
"""Every tool, in the order they are offered."""

TOOL_NAMES = tuple(t.name for t in TOOLS)
