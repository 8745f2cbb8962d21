#!/usr/bin/env bash
# Benchmark: release build, the page in headless Chromium, and the NumPy baseline in the same
# run; prints one JSON object as its last line (see README, "Benchmark"). Never fails on timing.
# BENCH_SKIP_PEER=1 leaves out the models' peers, transformers.js and wllama (docs/benchmark.md).
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
if [[ -z "${BENCH_SKIP_PEER:-}" ]]; then
  # The peer's packages, here and not in scripts/test.sh. npm without install scripts:
  # onnxruntime-node's downloads from a host that is not reachable, and only onnxruntime-web is
  # used. Each step is skipped when what it installs is already there.
  if [[ ! bench/peer/node_modules/.package-lock.json -nt bench/peer/package-lock.json ]]; then
    echo "==> installing the peer's npm packages (bench/peer/package-lock.json)" >&2
    (cd bench/peer && npm ci --ignore-scripts --no-audit --no-fund) >&2
  fi
  peer_python="$ROOT/tools/peer-python"
  if ! cmp -s bench/peer/requirements.txt "$peer_python/.requirements.txt"; then
    echo "==> installing the peer's Python packages into tools/peer-python (bench/peer/requirements.txt)" >&2
    rm -rf "$peer_python"
    python3 -m pip install --quiet --disable-pip-version-check --target "$peer_python" -r bench/peer/requirements.txt >&2
    cp bench/peer/requirements.txt "$peer_python/.requirements.txt"
  fi
  # The ONNX files from the cached model, checked against the lab's forward (cached when newer).
  PYTHONPATH="$peer_python:$PYTHONPATH" python3 bench/peer/make_onnx.py >&2
fi
node tests/e2e/model-bench.mjs
# The language model's view against wllama on the same GGUF (its own JSON line).
node tests/e2e/lm-bench.mjs
# Decoding token by token (issue 49, item 2): the lab's decoder in WebAssembly in Node
# (examples/forward_wasm.rs, built as the model worker is) against wllama in Chromium, in one
# JSON line (docs/benchmark.md, "Decoding token by token").
CARGO_TARGET_DIR=target/test-release/worker RUSTFLAGS="-C target-feature=$RELAXED_TARGET_FEATURES" \
  cargo rustc --release --target wasm32-unknown-unknown --example forward_wasm \
  --no-default-features --features text-model --crate-type cdylib >&2
wasm-bindgen --target nodejs --out-dir target/decode-bench/fw \
  target/test-release/worker/wasm32-unknown-unknown/release/examples/forward_wasm.wasm >&2
DECODE_LAB_JS=target/decode-bench/fw/forward_wasm.js node tests/e2e/decode-bench.mjs
node tests/e2e/bench.mjs
