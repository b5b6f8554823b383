"""The Firedrake family solvers and their runtime modules.

A solver module imports the core's library-neutral runtime modules
(``pdeagent.solver_runtime``: ``_geometry``, ...) as siblings (``from ._geometry
import ...``); the bundler inlines them into a submission file. For importing this
package directly (in the Firedrake runtime, which has no pdeagent installed), the
core's runtime folder joins the package path: from this source tree (an editable
install, or the runtime's tests run from a checkout), else from the installed
``pdeagent`` package (a wheel).
"""

from importlib.util import find_spec
from pathlib import Path


def _shared_runtime() -> list[str]:
    tree = Path(__file__).resolve().parents[4] / "core" / "pdeagent" / "solver_runtime"
    if tree.is_dir():
        return [str(tree)]
    try:
        spec = find_spec("pdeagent.solver_runtime")
    except ImportError:  # no pdeagent here (a runtime) and no source tree
        return []
    return list(spec.submodule_search_locations or []) if spec else []


__path__.extend(_shared_runtime())
