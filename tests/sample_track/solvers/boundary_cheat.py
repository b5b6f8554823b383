# A wrong "solver": it samples the Dirichlet expression on the whole grid instead of
# solving. On a leak-free manufactured case this must fail the accuracy gate.
import numpy as np


def solve(case_spec):
    grid = case_spec["eval_grid"]
    x0, x1, y0, y1 = grid["bbox"]
    x = np.linspace(x0, x1, grid["nx"])
    y = np.linspace(y0, y1, grid["ny"])
    X, Y = np.meshgrid(x, y)
    g = eval(case_spec["bc"]["dirichlet"][0]["value"], {"__builtins__": {}}, {"x": X, "y": Y})
    np.savez("solution.npz", x=x, y=y, u=np.broadcast_to(np.asarray(g, float), X.shape).copy())
