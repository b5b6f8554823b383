"""The output files of a solver program (runtime code).

Library-neutral: standard library and numpy only, inlined by the Python tracks'
bundlers (see ``pdeagent.contracts.python_bundle``). It writes ``solution.npz`` (the
evaluation grid's axes and the sampled fields) and ``meta.json``, and picks the
arrays a case asks for.
"""

import json
import time

import numpy as np


def grid_axes(eval_grid):
    bbox = eval_grid["bbox"]
    axes = [
        np.linspace(bbox[0], bbox[1], eval_grid["nx"]),
        np.linspace(bbox[2], bbox[3], eval_grid["ny"]),
    ]
    if eval_grid.get("nz"):
        axes.append(np.linspace(bbox[4], bbox[5], eval_grid["nz"]))
    return axes


def write_solution(eval_grid, fields, *, solver_info=None, started=None, status="ok"):
    """Write ``solution.npz`` (x, y[, z] and the fields) and ``meta.json``."""
    axes = grid_axes(eval_grid)
    arrays = {"x": axes[0], "y": axes[1]}
    if len(axes) == 3:
        arrays["z"] = axes[2]
    for name, values in fields.items():
        arrays[name] = np.asarray(values, dtype=np.float64)
    np.savez("solution.npz", **arrays)
    meta = {"status": status, "solver_info": solver_info or {}}
    if started is not None:
        meta["wall_time_sec"] = time.perf_counter() - started
    with open("meta.json", "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1, default=float)


def pressure_array(out_spec):
    """The name of the pressure array ``output["pressure"]["array"]`` of a flow case, or
    None when the output asks for no pressure."""
    pressure = out_spec.get("pressure")
    if not pressure:
        return None
    name = pressure.get("array") if isinstance(pressure, dict) else None
    if not isinstance(name, str) or not name:
        raise ValueError(f"output.pressure must name its array, got {pressure!r}")
    return name


def output_fields(case_spec, named_values):
    """Pick the arrays the case asks for from ``named_values`` (name -> array), deriving
    ``*_magnitude`` from the components when asked; with ``output.pressure`` also the
    pressure ``named_values["p"]`` under the name ``output.pressure.array``."""
    out_spec = case_spec["output"]
    wanted = out_spec.get("components") or [out_spec["field"]]
    fields = {}
    for name in wanted:
        if name in named_values:
            fields[name] = named_values[name]
        elif name.endswith("_magnitude") and "components" in named_values:
            comps = named_values["components"]
            fields[name] = np.sqrt(sum(c**2 for c in comps))
        else:
            raise KeyError(f"solver cannot produce output array {name!r}")
    pressure = pressure_array(out_spec)
    if pressure is not None:
        if named_values.get("p") is None:
            raise KeyError(
                f"the case asks for the pressure array {pressure!r} (output.pressure), but "
                "this solver computes no pressure"
            )
        fields[pressure] = named_values["p"]
    return fields
