"""The optional pressure output of flow cases (``output.pressure``) with the DOLFINx
Stokes and Navier-Stokes solvers: the written arrays are the velocity components
followed by ``output.pressure.array``; with ``normalization: zero_mean`` (velocity on the
whole boundary) the reported pressure has zero mean, with ``absolute`` (a pressure /
traction condition fixes it) it is reported as computed, not shifted.

Manufactured solutions (``pdeagent.solver_checks``): u = curl psi, psi = psi_g + phi^2 chi
with phi vanishing on the velocity boundary.
"""

from __future__ import annotations

import pytest
from dolfinx_harness import run_solver

from pdeagent.solver_checks import (
    ABSOLUTE_PRESSURE,
    ZERO_MEAN_PRESSURE,
    enclosed_flow_mms,
    flow_case_spec,
    flow_errors,
    open_flow_mms,
)

pytestmark = pytest.mark.dolfinx


def _solve(family, nu, mms, pressure, tmp_path):
    u, p, bc = mms
    spec = flow_case_spec(family, nu, u, p, bc, pressure)
    (rec,) = run_solver(family, spec, [{"resolution": 16}], tmp_path)
    assert sorted(set(rec["arrays"]) - {"x", "y"}) == ["p", "u_x", "u_y"]
    err = flow_errors(spec, rec["arrays"], u, p)
    print(f"\n{family} {pressure['normalization']} res 16: {err}")
    assert err.velocity < 1e-3 and err.pressure < 1e-2
    return rec, err


@pytest.mark.parametrize(("family", "nu"), [("stokes", 1.0), ("navier_stokes", 0.1)])
def test_zero_mean_pressure_output(family, nu, tmp_path):
    rec, err = _solve(family, nu, enclosed_flow_mms(), ZERO_MEAN_PRESSURE, tmp_path)
    assert abs(err.mean) < 1e-2 * err.rms  # the reported pressure has zero mean
    assert rec["meta"]["solver_info"]["pressure_null_space"] != "none"


def test_stokes_absolute_pressure_output_is_not_shifted(tmp_path):
    """The boundary fixes the pressure: it must be reported as it is (mean about 1/2)."""
    rec, err = _solve("stokes", 1.0, open_flow_mms(1.0), ABSOLUTE_PRESSURE, tmp_path)
    assert err.pressure_absolute < 1e-2 and abs(err.mean - err.exact_mean) < 1e-3
    assert rec["meta"]["solver_info"]["pressure_null_space"] == "none"
