"""Import of the PDEAgent-Bench authors' ``benchmark_v2.jsonl`` records as case records.

The manufactured solution moves to ``evaluation_metadata``, the forcing is recomputed with
:func:`pdeagent.cases.mms.forcing`, the upstream Dirichlet data are kept as given, and each
case is validated. The report lists leaking cases (SPEC §4), forcing differences and skipped
records. The input is untrusted: capped line length, safe expression parser only, and a bad
record is skipped with a reason. A geometry is mapped only when the shape the upstream oracle
meshes is one of our templates.

Values a record leaves implicit that the authors' oracles fill in silently (the Burgers end
time and step, viscosities, the zero-traction condition on boundary parts without Dirichlet
data) are stated in the case and listed in :attr:`UpstreamImport.import_notes` with the oracle
file they were read from; see docs/upstream-import.md.

Modules: :mod:`.reading` (capped, strict input), :mod:`.domain` (geometry mapping),
:mod:`.params` and :mod:`.conditions` (PDE data), :mod:`.convert` (one record -> one case),
:mod:`.checks` (consistency, forcing, leak errors), :mod:`.oracle` (the oracles' implicit
defaults), :mod:`.limits`, :mod:`.report` and :mod:`.importer` (the entry point).
"""

from pdeagent.cases.upstream.importer import import_upstream
from pdeagent.cases.upstream.limits import (
    CHECK_POINTS,
    CONSISTENCY_RTOL,
    FORCING_RTOL,
    LEAK_TOLERANCE,
    MAX_GRID_POINTS,
    MAX_ID_CHARS,
    MAX_LINE_BYTES,
    MAX_RECORDS,
)
from pdeagent.cases.upstream.oracle import (
    BURGERS_DT,
    BURGERS_NU,
    BURGERS_T_FINAL,
    FLOW_NU,
    UPSTREAM_REPO,
    ImportNote,
)
from pdeagent.cases.upstream.reading import sanitize_id
from pdeagent.cases.upstream.report import (
    ForcingDifference,
    LeakReport,
    UpstreamImport,
    summary_dict,
)

__all__ = [
    "BURGERS_DT",
    "BURGERS_NU",
    "BURGERS_T_FINAL",
    "CHECK_POINTS",
    "CONSISTENCY_RTOL",
    "FLOW_NU",
    "FORCING_RTOL",
    "LEAK_TOLERANCE",
    "MAX_GRID_POINTS",
    "MAX_ID_CHARS",
    "MAX_LINE_BYTES",
    "MAX_RECORDS",
    "UPSTREAM_REPO",
    "ForcingDifference",
    "ImportNote",
    "LeakReport",
    "UpstreamImport",
    "import_upstream",
    "sanitize_id",
    "summary_dict",
]
