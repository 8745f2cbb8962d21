#!/usr/bin/env bash
# Trunk post-build hook: builds the three Web Workers that compute everything into Trunk's
# staging directory, each twice, as Trunk's `data-type="worker"` would but with other target
# features:
# - `kernel-worker` (the kernel view's tasks, the probe, the data panel: what the first view
#   needs), built without the feature `optimised-a` (no argmin: a third of this worker), and
#   `full-worker` (every request: the attention view's parts, and the kernel view's when an
#   estimator needs the optimised A; started only when one of those is first asked for), and
#   `model-worker` (the text view: the tokenizer and the model, feature `text-model`, with the
#   optimised A, since the attention view's parts on the reader's text run there);
# - `NAME` with `+relaxed-simd`: the worker's kernel is about 2.5 times faster with
#   WebAssembly's fused multiply-add and relaxed conversions;
# - `NAME-simd128` with `simd128` only, for a browser without relaxed SIMD.
# The page (src/ui/pool.rs) checks once which one the browser can run and loads only that.
# Each flag set has its own target directory under CARGO_TARGET_DIR (default target/), so they
# do not rebuild each other's cache, and the two sets build at the same time: a set's link and
# wasm-opt each use one core. wasm-opt is scripts/cached/wasm-opt (scripts/env.sh puts it first
# on PATH): a worker whose bytes did not change is not optimised again. WORKER_WASM_OPT_LEVEL
# (default -O3) is its level: scripts/test.sh's build takes -O1 (the same semantics, about a
# quarter of the time: 21 against 85 s for the model worker on a two-core machine).
set -Eeuo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
root="${TRUNK_SOURCE_DIR:-$ROOT}"
staging="${TRUNK_STAGING_DIR:?run by trunk, or set TRUNK_STAGING_DIR}"
profile="${TRUNK_PROFILE:-release}"
cd "$root"
release=()
[[ "$profile" == "release" ]] && release=(--release)
target_base="${CARGO_TARGET_DIR:-$root/target}"

# bindgen BIN NAME TARGET_DIR WASM_OPT_FLAGS...: one built worker into the staging directory.
bindgen() {
  local bin="$1" name="$2" target_dir="$3"
  shift 3
  wasm-bindgen --target no-modules --no-typescript --out-dir "$staging" --out-name "$name" \
    "$target_dir/wasm32-unknown-unknown/$profile/$bin.wasm"
  if [[ "$profile" == "release" ]]; then
    wasm-opt "${WORKER_WASM_OPT_LEVEL:--O3}" "$@" --enable-simd --enable-bulk-memory --enable-bulk-memory-opt \
      --enable-sign-ext --enable-nontrapping-float-to-int --enable-mutable-globals \
      --enable-reference-types --enable-multivalue \
      -o "$staging/${name}_bg.wasm" "$staging/${name}_bg.wasm"
  fi
  # The worker's entry script (what Trunk's loader shim would be).
  printf 'importScripts("./%s.js");wasm_bindgen({ module_or_path: "./%s_bg.wasm" });\n' \
    "$name" "$name" > "$staging/${name}_loader.js"
}

# worker BIN FEATURES SUFFIX TARGET_DIR TARGET_FEATURES WASM_OPT_FLAGS...: one worker built
# with one flag set (none of them has the feature `page`, the UI).
worker() {
  local bin="$1" features="$2" suffix="$3" target_dir="$4" target_features="$5"
  shift 5
  CARGO_TARGET_DIR="$target_dir" RUSTFLAGS="-C target-feature=$target_features" \
    cargo build --quiet --target wasm32-unknown-unknown --bin "$bin" \
    --no-default-features ${features:+--features "$features"} "${release[@]}"
  bindgen "$bin" "$bin$suffix" "$target_dir" "$@"
}

# flag_set SUFFIX TARGET_DIR TARGET_FEATURES WASM_OPT_FLAGS...: the three workers with one flag
# set, one after the other (the crate's features differ, so three cargo invocations):
# kernel-worker without `optimised-a`, full-worker with it, and the text view's model-worker
# (the tokenizer and the model's forward, feature `text-model`; its dense layers fuse
# multiply-adds with relaxed SIMD).
flag_set() {
  local suffix="$1" target_dir="$2" target_features="$3"
  shift 3
  # The kernel worker is part of the first view's download: its passes run until they
  # change nothing more (--converge, the same -O3 semantics; about 350 bytes gzipped less).
  worker kernel-worker "" "$suffix" "$target_dir" "$target_features" "$@" --converge
  worker full-worker optimised-a "$suffix" "$target_dir" "$target_features" "$@"
  worker model-worker optimised-a,text-model "$suffix" "$target_dir" "$target_features" "$@"
}

flag_set "" "$target_base/worker" "$RELAXED_TARGET_FEATURES" --enable-relaxed-simd &
relaxed_set=$!
flag_set -simd128 "$target_base/worker-simd128" "+simd128" &
simd128_set=$!
status=0
wait "$relaxed_set" || status=$?
wait "$simd128_set" || status=$?
if ((status != 0)); then
  echo "build-worker.sh: a worker build failed (exit $status); its error is above" >&2
  exit "$status"
fi

# The models beside the page when scripts/fetch-model.sh has cached them (MiniLM's converted
# file, SmolLM2's GGUF); without one, its view says how to get it, and everything else works.
for print_flag in --print-path --print-lm-path; do
  model_file="$("$root/scripts/fetch-model.sh" "$print_flag")"
  if [[ -f "$model_file" ]]; then
    mkdir -p "$staging/model"
    cp "$model_file" "$staging/model/"
    chmod 0644 "$staging/model/$(basename "$model_file")"
  else
    echo "build-worker.sh: no model at $model_file (scripts/fetch-model.sh fetches it): its view will say so"
  fi
done
echo "build-worker.sh: kernel-worker, full-worker and model-worker, each with relaxed SIMD and simd128 only ($profile) in $(basename "$staging")"
