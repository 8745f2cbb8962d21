#!/usr/bin/env bash
# The README's second command, and what CI runs: installs what is missing, then runs every
# check: formatting, clippy (native and wasm), the native tests, the browser tests
# (wasm-bindgen-test in headless Chromium) and the end-to-end tests on the release build.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$ROOT/scripts/install-tools.sh" --browser
cd "$ROOT"

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all --check

step "clippy (native and wasm32)"
cargo clippy --all-targets -- -D warnings
cargo clippy --target wasm32-unknown-unknown --all-targets -- -D warnings

step "native tests (math, statistics)"
cargo test

step "browser tests (wasm-bindgen-test, headless Chromium)"
cargo test --target wasm32-unknown-unknown --test browser

step "browser tests again, built like the worker (+relaxed-simd, its own target dir)"
CARGO_TARGET_DIR="$ROOT/target/worker" RUSTFLAGS="-C target-feature=+simd128,+relaxed-simd" \
  cargo test --target wasm32-unknown-unknown --test browser

step "release build (trunk)"
trunk build --release

step "end-to-end tests (release build in headless Chromium, Playwright)"
(cd tests/e2e && npm test)
