#!/usr/bin/env bash
# Print the path of a working Python >= 3.12 interpreter (pyenv shims on this kind of
# machine answer for python3.12 only when that version is selected, so check each).
set -euo pipefail
candidates=("${PDEAGENT_PYTHON:-}" python3.12 python3.13 python3)
for dir in "$HOME"/.pyenv/versions/3.12* "$HOME"/.pyenv/versions/3.13*; do
  [ -x "$dir/bin/python3" ] && candidates+=("$dir/bin/python3")
done
for c in "${candidates[@]}"; do
  [ -n "$c" ] || continue
  if path=$("$c" -c 'import sys; assert sys.version_info >= (3, 12); print(sys.executable)' 2>/dev/null); then
    echo "$path"
    exit 0
  fi
done
echo "error: no Python >= 3.12 found (set PDEAGENT_PYTHON)" >&2
exit 1
