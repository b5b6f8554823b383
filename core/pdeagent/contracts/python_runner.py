# Runner for the Python solver contract (SPEC §5). Copied into the sandbox work
# directory and run there with the track's interpreter: it loads solver.py, calls
# solve(case_spec) and, if solve returned a mapping of arrays instead of writing
# solution.npz itself, writes it. It uses only the standard library and numpy, and
# it runs in the same process as the untrusted code, so the harness trusts none of
# what it writes: exit codes only pick an F-Exec reason among failures.
import importlib.util
import json
import os
import sys
import traceback

EXIT_IMPORT_ERROR = 3
EXIT_NO_ENTRY_POINT = 4


def main() -> int:
    source = sys.argv[1] if len(sys.argv) > 1 else "solver.py"
    with open("case_spec.json", encoding="utf-8") as fh:
        case_spec = json.load(fh)
    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.spec_from_file_location("solver", source)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {source}")
        module = importlib.util.module_from_spec(spec)
        sys.modules["solver"] = module
        spec.loader.exec_module(module)
    except BaseException:
        traceback.print_exc()
        print(f"PDEAGENT: importing {source} failed", file=sys.stderr)
        return EXIT_IMPORT_ERROR
    solve = getattr(module, "solve", None)
    if not callable(solve):
        print(f"PDEAGENT: {source} defines no callable solve(case_spec)", file=sys.stderr)
        return EXIT_NO_ENTRY_POINT
    try:
        result = solve(case_spec)
    except SystemExit as exc:  # exit codes of the runner itself must stay unambiguous
        if exc.code in (None, 0):
            result = None
        else:
            print(f"PDEAGENT: solve() exited with {exc.code!r}", file=sys.stderr)
            return 1
    if result is not None and not os.path.exists("solution.npz"):
        import numpy as np

        if not hasattr(result, "keys"):
            print("PDEAGENT: solve() returned neither None nor a mapping", file=sys.stderr)
            return 1
        np.savez("solution.npz", **{str(k): np.asarray(v) for k, v in result.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
