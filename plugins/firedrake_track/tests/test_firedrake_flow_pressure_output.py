"""The optional pressure output of flow cases (``output.pressure``) with the Firedrake
Stokes solver: the written arrays are the velocity components followed by
``output.pressure.array``; ``zero_mean`` (velocity on the whole boundary) is reported with
zero mean, ``absolute`` (a pressure / traction condition fixes it) as computed.
Manufactured solutions from ``pdeagent.solver_checks``."""

from __future__ import annotations

import firedrake_harness as H
import pytest

from pdeagent.solver_checks import (
    ABSOLUTE_PRESSURE,
    ZERO_MEAN_PRESSURE,
    enclosed_flow_mms,
    flow_case_spec,
    flow_errors,
    open_flow_mms,
)

pytestmark = pytest.mark.firedrake


def _solve(mms, pressure, tmp_path):
    u, p, bc = mms
    spec = flow_case_spec("stokes", 1.0, u, p, bc, pressure)
    (rec,) = H.run_solver("stokes", spec, [{"resolution": 16}], tmp_path)
    assert sorted(set(rec["arrays"]) - {"x", "y"}) == ["p", "u_x", "u_y"]
    err = flow_errors(spec, rec["arrays"], u, p)
    print(f"\nfiredrake stokes {pressure['normalization']} res 16: {err}")
    assert err.velocity < 1e-3 and err.pressure < 1e-2
    return rec, err


def test_stokes_zero_mean_pressure_output(tmp_path):
    rec, err = _solve(enclosed_flow_mms(), ZERO_MEAN_PRESSURE, tmp_path)
    assert abs(err.mean) < 1e-2 * err.rms  # the reported pressure has zero mean
    assert rec["meta"]["solver_info"]["pressure_null_space"] != "none"


def test_stokes_absolute_pressure_output_is_not_shifted(tmp_path):
    """The boundary fixes the pressure: it must be reported as it is (mean about 1/2)."""
    rec, err = _solve(open_flow_mms(1.0), ABSOLUTE_PRESSURE, tmp_path)
    assert err.pressure_absolute < 1e-2 and abs(err.mean - err.exact_mean) < 1e-3
    assert rec["meta"]["solver_info"]["pressure_null_space"] == "none"
