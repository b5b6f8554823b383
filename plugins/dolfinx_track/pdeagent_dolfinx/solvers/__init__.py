"""The DOLFINx family solvers and their runtime modules.

A solver module imports the core's library-neutral runtime modules
(``pdeagent.solver_runtime``: ``_geometry``, ...) as siblings (``from ._geometry
import ...``); the bundler inlines them into a submission file. For importing this
package directly (the DOLFINx runtime's tests, which have no pdeagent installed), the
core's runtime folder of this source tree joins the package path.
"""

from pathlib import Path

_SHARED_RUNTIME = Path(__file__).resolve().parents[4] / "core" / "pdeagent" / "solver_runtime"
if _SHARED_RUNTIME.is_dir():
    __path__.append(str(_SHARED_RUNTIME))
