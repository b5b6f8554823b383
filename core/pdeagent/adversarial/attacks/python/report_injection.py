# adv: lint-only
from _prelude import _grid, _json, _note, sys

# The page of this attempt in `pdeagent report --out` shows this program, its stderr,
# its error message and its solver_info: each tries to become markup there.
# </code></pre></div></details><script>alert("PDEAGENT-REPORT-INJECTED code")</script>
HTML = (
    'PDEAGENT-REPORT-INJECTED </pre></code></div></details></td></table>'
    "<script>alert(1)</script><img src=x onerror=alert(2)>"
    '<a href="javascript:alert(3)">x</a><iframe src="//example.invalid/"></iframe>'
    "<style>body{display:none}</style><svg onload=alert(4)></svg>"
    '<!-- <base href="//example.invalid/"> --> &lt;{{ 7*7 }}{% raw %}'
)


def solve(case_spec):
    import numpy as np

    sys.stderr.write(HTML + "\n")
    sys.stderr.flush()
    coords, shape, names = _grid(case_spec)
    np.savez("solution.npz", **coords, **{name: np.zeros(shape) for name in names})
    meta = {
        "wall_time_sec": 0.5,
        "status": "ok",
        "message": HTML,
        "solver_info": {"ksp_type": HTML, "<script>alert(5)</script>": "pc", "iterations": 3},
    }
    with open("meta.json", "w") as fh:
        _json.dump(meta, fh)
    _note("written", True)
