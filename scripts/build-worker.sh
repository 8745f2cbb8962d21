#!/usr/bin/env bash
# Trunk post-build hook: builds the `kernel-worker` binary (the Web Worker that computes the
# experiment) into Trunk's staging directory, as Trunk's `data-type="worker"` would, but with
# `+relaxed-simd`: the worker's kernel is about 2.5 times faster with WebAssembly's fused
# multiply-add and relaxed conversions. The page's own module is built without it, so the page
# still loads in a browser without relaxed SIMD (the pool then computes on the page).
# Its own target directory keeps the two flag sets from rebuilding each other's cache.
set -euo pipefail
root="${TRUNK_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
staging="${TRUNK_STAGING_DIR:?run by trunk, or set TRUNK_STAGING_DIR}"
profile="${TRUNK_PROFILE:-release}"
cd "$root"
release=()
[[ "$profile" == "release" ]] && release=(--release)
export CARGO_TARGET_DIR="$root/target/worker"
export RUSTFLAGS="-C target-feature=+simd128,+relaxed-simd"
cargo build --quiet --target wasm32-unknown-unknown --bin kernel-worker "${release[@]}"
wasm-bindgen --target no-modules --no-typescript --out-dir "$staging" --out-name kernel-worker \
  "$CARGO_TARGET_DIR/wasm32-unknown-unknown/$profile/kernel-worker.wasm"
if [[ "$profile" == "release" ]]; then
  wasm-opt -O3 --enable-simd --enable-relaxed-simd --enable-bulk-memory --enable-bulk-memory-opt \
    --enable-sign-ext --enable-nontrapping-float-to-int --enable-mutable-globals \
    --enable-reference-types --enable-multivalue \
    -o "$staging/kernel-worker_bg.wasm" "$staging/kernel-worker_bg.wasm"
fi
# The worker's entry script (what Trunk's loader shim would be).
printf 'importScripts("./kernel-worker.js");wasm_bindgen({ module_or_path: "./kernel-worker_bg.wasm" });\n' \
  > "$staging/kernel-worker_loader.js"
echo "build-worker.sh: kernel-worker ($profile, relaxed SIMD) in $(basename "$staging")"
