#!/usr/bin/env bash
# Benchmark: release build, the page in headless Chromium, and the NumPy baseline in the same
# run; prints one JSON object as its last line (see README, "Benchmark"). Never fails on timing.
set -Eeuo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$ROOT/scripts/install-tools.sh" --browser
cd "$ROOT"
if [[ -z "${BENCH_SKIP_NUMPY:-}" ]] && ! python3 -c 'import numpy' 2>/dev/null; then
  echo "==> installing NumPy for the baseline (bench/requirements.txt)" >&2
  python3 -m pip install --quiet -r bench/requirements.txt >&2
fi
trunk build --release >&2
# The text view's model worker against NumPy (its own JSON line, before the page's).
"$ROOT/scripts/fetch-model.sh" >&2
node tests/e2e/model-bench.mjs
node tests/e2e/bench.mjs
