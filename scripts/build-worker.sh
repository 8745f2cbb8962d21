#!/usr/bin/env bash
# Trunk post-build hook: builds the two Web Workers that compute everything into Trunk's
# staging directory, each twice, as Trunk's `data-type="worker"` would but with other target
# features:
# - `kernel-worker` (the kernel view's tasks, the probe, the data panel: what the first view
#   needs), built without the feature `optimised-a` (no argmin: a third of this worker), and
#   `full-worker` (every request: the attention view's parts, and the kernel view's when an
#   estimator needs the optimised A; started only when one of those is first asked for);
# - `NAME` with `+relaxed-simd`: the worker's kernel is about 2.5 times faster with
#   WebAssembly's fused multiply-add and relaxed conversions;
# - `NAME-simd128` with `simd128` only, for a browser without relaxed SIMD.
# The page (src/ui/pool.rs) checks once which one the browser can run and loads only that.
# Each flag set has its own target directory, so they do not rebuild each other's cache.
set -Eeuo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
root="${TRUNK_SOURCE_DIR:-$ROOT}"
staging="${TRUNK_STAGING_DIR:?run by trunk, or set TRUNK_STAGING_DIR}"
profile="${TRUNK_PROFILE:-release}"
cd "$root"
release=()
[[ "$profile" == "release" ]] && release=(--release)

# bindgen BIN NAME TARGET_DIR WASM_OPT_FLAGS...: one built worker into the staging directory.
bindgen() {
  local bin="$1" name="$2" target_dir="$3"
  shift 3
  wasm-bindgen --target no-modules --no-typescript --out-dir "$staging" --out-name "$name" \
    "$root/$target_dir/wasm32-unknown-unknown/$profile/$bin.wasm"
  if [[ "$profile" == "release" ]]; then
    wasm-opt -O3 "$@" --enable-simd --enable-bulk-memory --enable-bulk-memory-opt \
      --enable-sign-ext --enable-nontrapping-float-to-int --enable-mutable-globals \
      --enable-reference-types --enable-multivalue \
      -o "$staging/${name}_bg.wasm" "$staging/${name}_bg.wasm"
  fi
  # The worker's entry script (what Trunk's loader shim would be).
  printf 'importScripts("./%s.js");wasm_bindgen({ module_or_path: "./%s_bg.wasm" });\n' \
    "$name" "$name" > "$staging/${name}_loader.js"
}

# build SUFFIX TARGET_DIR FEATURES WASM_OPT_FLAGS...: both workers with one flag set (two
# cargo invocations: the crate's features differ). Neither has the feature `page` (the UI).
build() {
  local suffix="$1" target_dir="$2" features="$3"
  shift 3
  CARGO_TARGET_DIR="$root/$target_dir" RUSTFLAGS="-C target-feature=$features" \
    cargo build --quiet --target wasm32-unknown-unknown --bin kernel-worker \
    --no-default-features "${release[@]}"
  bindgen kernel-worker "kernel-worker$suffix" "$target_dir" "$@"
  CARGO_TARGET_DIR="$root/$target_dir" RUSTFLAGS="-C target-feature=$features" \
    cargo build --quiet --target wasm32-unknown-unknown --bin full-worker \
    --no-default-features --features optimised-a "${release[@]}"
  bindgen full-worker "full-worker$suffix" "$target_dir" "$@"
}

build "" target/worker "+simd128,+relaxed-simd" --enable-relaxed-simd
build -simd128 target/worker-simd128 "+simd128"

# The text view's worker: the tokenizer and the model's forward (feature `text-model`), with
# relaxed SIMD (its dense layers fuse multiply-adds) and simd128 only, chosen like the others.
model_worker() {
  local suffix="$1" target_dir="$2" features="$3"
  shift 3
  CARGO_TARGET_DIR="$root/$target_dir" RUSTFLAGS="-C target-feature=$features" \
    cargo build --quiet --target wasm32-unknown-unknown --bin model-worker \
    --no-default-features --features text-model "${release[@]}"
  bindgen model-worker "model-worker$suffix" "$target_dir" "$@"
}
model_worker "" target/worker "+simd128,+relaxed-simd" --enable-relaxed-simd
model_worker -simd128 target/worker-simd128 "+simd128"

# The converted model beside the page when scripts/fetch-model.sh has cached it; without it the
# text view says how to get it, and everything else works.
model_file="$("$root/scripts/fetch-model.sh" --print-path)"
if [[ -f "$model_file" ]]; then
  mkdir -p "$staging/model"
  cp "$model_file" "$staging/model/"
  chmod 0644 "$staging/model/$(basename "$model_file")"
else
  echo "build-worker.sh: no model at $model_file (scripts/fetch-model.sh fetches it): the text view will say so"
fi
echo "build-worker.sh: kernel-worker and full-worker, each with relaxed SIMD and simd128 only, and model-worker ($profile) in $(basename "$staging")"
