"""Hostile submissions (issue #9): a catalogue of attacks and the checks around each.

Every :class:`Attack` is a submission (a Python ``solve(case_spec)`` file or a C++
``./solver case_spec.json OUTDIR`` program, a real source file under ``attacks/``) with
the verdict and F-Exec reason the real pipeline must give it, and the (small) limits it
runs under. :func:`run_attack` sets traps on the host, grades the rendered submission
through :func:`pdeagent.evaluation.pipeline.evaluate_source` on a given sandbox backend,
and checks afterwards:

- **verdict**: the expected verdict and reason;
- **secrets**: random tokens planted in a fake evaluator dataset (``dataset_dir``), in a
  path given as ``hide``, in an environment variable of the harness and of a bystander
  host process never appear in the report, the program's output or any file it wrote,
  and no read of a secret target (those, the real dataset and the harness source)
  returned its real content;
- **processes**: no process of the run is left: none with the run's token in its command
  line, its dirs in its environment or as its working directory, none seen running as
  part of the run, and (harness as root) none of the sandbox user in a PID namespace of
  the run (a watcher records those while the run goes on; see ``strict_user``); for
  ``docker`` no labelled container mounting the run's dirs;
- **files**: a world-writable canary dir on the host is unchanged, nothing was created
  in ``/etc``, ``/usr``, ``/var/tmp``, the repository or the package dir, watched host
  files are unchanged, and the work dir does not change after the run has ended;
- **network**: a TCP listener on ``127.0.0.1``, an abstract and a path unix socket of the
  harness accepted no connection, and no connection the program tried succeeded;
- **harness**: a bystander host process that the attacks try to kill is still alive;
- **attack**: the attack's own expectations (e.g. a fork bomb stayed within
  ``Limits.processes``, a fake ``meta.json`` time was ignored).

The attacker is assumed to know the layout (paths, ports, pids are template
parameters), never the secret tokens. Attacks that could harm the machine if the
sandbox failed are written to detect that and stop short (``kill(-1)`` only when no
host process is visible; existing host files are only opened for appending, never
written).

The package:

- ``attacks/python/*.py``, ``attacks/cpp/*.cc``: the programs, with ``__NAME__``
  placeholders and lint-only blocks (:mod:`.render` says how they become a submission);
  ``_prelude.*`` is put before each, ``_lint.*`` only stands in for the parameters;
- :mod:`.model`: :class:`Attack`, :class:`CheckContext`, the secret targets;
- :mod:`.catalogue`: :data:`ATTACKS` (name, file, language, expected outcome, ...);
- :mod:`.checks`: each attack's own expectations;
- :mod:`.render`: files + parameters -> the submission;
- :mod:`.traps`, :mod:`.probes`, :mod:`.runner`: setting the traps, watching the host,
  running an attack and checking everything after it.
"""

from __future__ import annotations

from pdeagent.adversarial.catalogue import ATTACKS, attacks_for, get_attack
from pdeagent.adversarial.model import (
    LIST_TARGETS,
    PRIVATE_PREFIXES,
    READ_TARGETS,
    SECRET_ENV_VAR,
    Attack,
    CheckContext,
)
from pdeagent.adversarial.render import render_source
from pdeagent.adversarial.runner import (
    AttackOutcome,
    assert_attack_held,
    run_attack,
    visible_scratch_dir,
)

__all__ = [
    "ATTACKS",
    "LIST_TARGETS",
    "PRIVATE_PREFIXES",
    "READ_TARGETS",
    "SECRET_ENV_VAR",
    "Attack",
    "AttackOutcome",
    "CheckContext",
    "assert_attack_held",
    "attacks_for",
    "get_attack",
    "render_source",
    "run_attack",
    "visible_scratch_dir",
]
