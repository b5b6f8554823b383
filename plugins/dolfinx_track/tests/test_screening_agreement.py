"""The DOLFINx screening program (frontier-2) runs the baseline as a submission would:
for one case of every family, the first two rungs of its ladder's first chain have the
same error screened (one warm run) as in pristine runs of their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdeagent.testing import check_screening_agreement
from pdeagent_dolfinx.bundle import FAMILIES

pytestmark = [pytest.mark.dolfinx, pytest.mark.slow]
RECORDS = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v2-records.jsonl"


@pytest.mark.parametrize("family", FAMILIES)
def test_screened_errors_are_the_pristine_errors(family, tmp_path):
    check_screening_agreement("dolfinx", family, RECORDS, tmp_path)
