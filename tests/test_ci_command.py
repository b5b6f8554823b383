"""CI runs exactly the README's test command, and the scripts it names parse."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"Set up and run the tests[^\n]*\n+```bash\n(?P<command>[^\n]+)\n```", readme)
    assert found, "the README has no test command block"
    return found["command"]


def test_ci_runs_the_readme_test_command_as_its_last_line():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == _readme_test_command()


def test_the_scripts_of_the_test_command_are_valid_bash():
    scripts = re.findall(r"bash (scripts/[\w.-]+\.sh)", _readme_test_command())
    assert scripts == ["scripts/setup-dev.sh", "scripts/run-tests.sh"]
    for script in scripts:
        checked = subprocess.run(["bash", "-n", str(ROOT / script)], capture_output=True,
                                 text=True, check=False)  # fmt: skip
        assert checked.returncode == 0, (script, checked.stderr)
