import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# Tests under runtime/ run with the DOLFINx runtime's own interpreter (see test_runtime_suite.py).
collect_ignore = ["runtime"]
