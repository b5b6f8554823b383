#!/usr/bin/env bash
# The main job: the offline baseline provider on a small stratified DOLFINx sample
# (12 cases, every family), then the report. No network, no API key.
# Set PDEAGENT_DEMO_OUT to choose the run directory (default: runs/demo, replaced).
set -euo pipefail
cd "$(dirname "$0")/.."
PDEAGENT=.venv/bin/pdeagent
OUT=${PDEAGENT_DEMO_OUT:-runs/demo}
WORKERS=$(( $(nproc) >= 2 ? 2 : 1 ))
echo "== pdeagent providers list"
$PDEAGENT providers list
echo "== pdeagent run --track dolfinx --provider baseline --sample 12 --workers $WORKERS --out $OUT"
rm -rf "$OUT"
$PDEAGENT run --track dolfinx --provider baseline --sample 12 --workers "$WORKERS" --out "$OUT"
echo "== pdeagent report $OUT --out $OUT/report"
$PDEAGENT report "$OUT" --out "$OUT/report"
# The track's own calibration solvers must pass (nearly) everything.
$PDEAGENT report "$OUT" --json --no-figures | .venv/bin/python -c '
import json, sys
stage = json.load(sys.stdin)["stages"][0]
passed, graded = stage["counts"]["PASS"], stage["graded"]
print(f"baseline passed {passed}/{graded} cases")
sys.exit(0 if graded == 12 and passed >= 11 else 1)'
echo "== done: HTML report at $OUT/report/report.html"
