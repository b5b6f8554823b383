"""Lint-only stand-ins: what ruff and the AST test see in place of the rendered values.

Never part of a submission. The attack files import these names inside their
``# adv: lint-only {`` ... ``# adv: lint-only }`` blocks, which rendering removes; each
``__NAME__`` placeholder is then replaced by the literal of the run's value (see
``pdeagent.adversarial.render``). ``solve`` stands for the track's baseline solver that
the ``uses_baseline`` attacks are appended to.
"""

__ATTACK_NAME__ = "attack"
__RUN_TOKEN__ = "pdeagentadv0"
__READS__: dict[str, str] = {}
__LISTS__: dict[str, str] = {}
__PORT__ = 1
__ABSTRACT_SOCKET__ = "socket"
__UNIX_SOCKET__ = "/nonexistent/socket"
__HOST_ADDRS__: list[str] = []
__BYSTANDER_PID__ = 0
__HARNESS_PID__ = 0
__CANARY_DIR__ = "/nonexistent"
__CANARY_FILE__ = "/nonexistent/canary.txt"
__OUTSIDE_NEW__: list[str] = []
__OUTSIDE_EXISTING__: list[str] = []
__REFERENCE_NPZ__ = "/nonexistent/reference.npz"
__PWNED_MARKER__ = "/nonexistent/pwned"
__SLEEP_SEC__ = 1.5


def solve(case_spec):
    """The track's baseline solver."""
    return None
