#!/usr/bin/env bash
# Benchmark: release build, default page in headless Chromium; prints one JSON line last.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$ROOT/scripts/install-tools.sh" --browser
cd "$ROOT"
trunk build --release
node tests/e2e/bench.mjs
