#!/usr/bin/env bash
# The README's second command, and what CI runs: installs what is missing, then runs every
# check: formatting, clippy (native and wasm), the native tests, the browser tests
# (wasm-bindgen-test in headless Chromium and Firefox ESR) and the end-to-end tests on the
# release build (in both browsers too).
set -Eeuo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$ROOT/scripts/install-tools.sh" --browser --shellcheck
cd "$ROOT"

# Each step prints the seconds since the start, so a slow step shows in CI's log.
step() { printf '\n==> [%4d s] %s\n' "$SECONDS" "$*"; }
trap 'printf "\n==> [%4d s] done (exit %d)\n" "$SECONDS" "$?"' EXIT

step "shellcheck (every shell script) and the installer's test on a simulated bare machine"
shellcheck scripts/*.sh .ci/run tests/scripts/*.sh
bash tests/scripts/install-from-nothing.sh

step "cargo fmt --check"
cargo fmt --all --check

step "clippy (native and wasm32; a first run compiles every dependency: about 6 minutes on two cores)"
cargo clippy --all-targets -- -D warnings
# The page and the browser tests are built without `text-model` (the model lives in model-worker).
page_features=(--no-default-features --features "optimised-a,page")
cargo clippy --target wasm32-unknown-unknown --all-targets "${page_features[@]}" -- -D warnings
# The workers as scripts/build-worker.sh builds them: without the features `page` (and, for
# kernel-worker, `optimised-a`).
cargo clippy --target wasm32-unknown-unknown --bin kernel-worker --no-default-features -- -D warnings
cargo clippy --target wasm32-unknown-unknown --bin full-worker --no-default-features \
  --features optimised-a -- -D warnings
cargo clippy --target wasm32-unknown-unknown --bin model-worker --no-default-features \
  --features text-model -- -D warnings

step "the model for the text view and its tests (scripts/fetch-model.sh: once, then cached)"
scripts/fetch-model.sh

step "native tests (numerics, lab, statistics, CLI, the model, doc tests; about 1.5 minutes)"
cargo test

# wasm-bindgen-test-runner prefers GECKODRIVER to CHROMEDRIVER, and with neither set takes the
# first driver on PATH: each run names its driver and unsets the other. (No `cargo test -q`
# here: cargo would pass --quiet on to the runner, which rejects it.)
in_chromium() { env -u GECKODRIVER CHROMEDRIVER=/usr/bin/chromedriver "$@"; }
in_firefox() { env -u CHROMEDRIVER GECKODRIVER="$(command -v geckodriver)" "$@"; }
worker_like=(env CARGO_TARGET_DIR="$ROOT/target/worker" RUSTFLAGS="-C target-feature=+simd128,+relaxed-simd")

step "browser tests (wasm-bindgen-test, headless Chromium; a first run about 2 minutes)"
in_chromium cargo test --target wasm32-unknown-unknown --test browser "${page_features[@]}"

step "browser tests (wasm-bindgen-test, headless Firefox ESR)"
in_firefox cargo test --target wasm32-unknown-unknown --test browser "${page_features[@]}"

step "browser tests again in Chromium, built like the worker (+relaxed-simd, its own target dir; a first run about 6 minutes)"
in_chromium "${worker_like[@]}" cargo test --target wasm32-unknown-unknown --test browser "${page_features[@]}"

step "browser tests again in Firefox ESR, built like the worker (+relaxed-simd)"
in_firefox "${worker_like[@]}" cargo test --target wasm32-unknown-unknown --test browser "${page_features[@]}"

step "release build (trunk: the page and four worker builds; about 4 minutes)"
trunk build --release

step "end-to-end tests in headless Chromium (release build, Playwright; about 2 minutes)"
(cd tests/e2e && E2E_BROWSER=chromium npm test)

step "end-to-end tests in headless Firefox ESR (release build, Playwright over WebDriver BiDi; about 2.5 minutes)"
(cd tests/e2e && E2E_BROWSER=firefox npm test)

step "end-to-end test of the served page (./scripts/serve.sh, loaded in both browsers)"
(cd tests/e2e && npm run test:serve)
