"""Input caps and numeric tolerances of the upstream import."""

from __future__ import annotations

LEAK_TOLERANCE = 1e-3
"""Leak threshold of the import report: a case is listed in :attr:`UpstreamImport.leaks`
when sampling its whole-boundary Dirichlet expression (at ``t_end``) or its initial condition
on the evaluation grid gives a relative L2 error below this against the manufactured solution
(scored points only). Such a "cheat" would pass typical accuracy thresholds: the upstream
paper's calibrated e_base has median 2.3e-4, and tau_acc is alpha_acc (10) * e_base.

It only counts leaks for the report. Two other leak limits measure other things and stay
separate constants: the validator's rejection rule
:data:`pdeagent.cases.validate.LEAK_TOLERANCE` (raised to the case's largest tau_acc; on a
coarse interior lattice; every primary Dirichlet entry and initial field) decides which
imported cases are written, so ``pdeagent cases validate`` may reject more cases than this
reports (see :attr:`UpstreamImport.rejected_by_validator`); the case builder's
:data:`pdeagent.cases.build.CHEAT_FLOOR` (the scored case error of each cheat) refuses a case
before any solve."""

MAX_LINE_BYTES = 1_000_000
"""Longest accepted input line; a longer line is skipped unread."""
MAX_RECORDS = 100_000
"""Records read from one file at most; the rest is reported as skipped."""
MAX_GRID_POINTS = 4_000_000
"""Largest evaluation grid an imported case may have (checked before sampling anything)."""
MAX_ID_CHARS = 120
"""Longest case id produced (``upstream_`` plus the sanitised upstream id)."""
CONSISTENCY_RTOL = 1e-6
"""Relative tolerance of the checks that boundary and initial data agree with the
manufactured solution (on the boundary, at ``t0``)."""
FORCING_RTOL = 1e-6
"""Relative max-norm difference above which a recomputed forcing is reported as different."""
CHECK_POINTS = 20_000
"""Interior points used (at most) for the consistency and forcing comparisons."""
