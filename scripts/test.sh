#!/usr/bin/env bash
# The README's second command, and what CI runs: installs what is missing, then runs every
# check: shellcheck, formatting, clippy (native and wasm), the native tests, the browser tests
# (wasm-bindgen-test in headless Chromium and Firefox ESR), the end-to-end tests on a release
# build (in both browsers too) and the served page. Each thing is compiled once; the end prints
# a table of each step's seconds and tests passed (docs/testing.md has a cold and a warm run).
set -Eeuo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$ROOT/scripts/install-tools.sh" --browser --shellcheck
cd "$ROOT"

# Each step prints the seconds since the start, and its output is kept in target/test-logs/ so
# the closing table can count the tests each step passed (cargo's and wasm-bindgen-test's
# "test result: ok. N passed", node's "# pass N").
log_dir="$ROOT/target/test-logs"
rm -rf "$log_dir"
mkdir -p "$log_dir"
step_names=()
step_seconds=()
step_passed=()
step_started=$SECONDS
step_log=/dev/null

# Passed tests in a step's log.
passed_in() {
  awk '/^test result: ok\. [0-9]+ passed/ { n += $4 }
       /^# pass [0-9]+/ { n += $3 }
       END { print n + 0 }' "$1"
}

finish_step() {
  if ((${#step_names[@]} > ${#step_seconds[@]})); then
    step_seconds+=("$((SECONDS - step_started))")
    step_passed+=("$(passed_in "$step_log")")
  fi
}

step() {
  finish_step
  step_names+=("$1")
  step_started=$SECONDS
  step_log="$log_dir/$(printf '%02d' "${#step_names[@]}").log"
  : > "$step_log"
  printf '\n==> [%4d s] %s\n' "$SECONDS" "$1${2:+ ($2)}"
}

# run COMMAND...: runs it with its output shown and kept in the step's log; a failure names the
# command (the ERR trap alone would name `tee`, the pipeline's last command).
run() {
  local status=0
  "$@" 2>&1 | tee -a "$step_log" || status=$?
  if ((status != 0)); then
    printf '\nerror: exit status %s from: %s\n' "$status" "$*" >&2
    return "$status"
  fi
}

summary() {
  local status=$?
  finish_step
  printf '\n==> [%4d s] done (exit %d)\n\n' "$SECONDS" "$status"
  printf '| %-58s | %7s | %12s |\n' step seconds "tests passed"
  printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..60})" "$(printf -- '-%.0s' {1..9})" "$(printf -- '-%.0s' {1..14})"
  local i total_passed=0
  for i in "${!step_seconds[@]}"; do
    printf '| %-58s | %7d | %12s |\n' "${step_names[$i]}" "${step_seconds[$i]}" "${step_passed[$i]}"
    total_passed=$((total_passed + step_passed[i]))
  done
  printf '| %-58s | %7d | %12d |\n' "total" "$SECONDS" "$total_passed"
}
trap summary EXIT

step "shellcheck and the installer's test" "a simulated bare machine"
run shellcheck scripts/*.sh scripts/cached/wasm-opt .ci/run tests/scripts/*.sh
run bash tests/scripts/install-from-nothing.sh

step "cargo fmt --check"
run cargo fmt --all --check

step "the layout of src/lab" "scripts/check-layout.py: no arrow back up, no circle among rooms"
run python3 scripts/check-layout.py src

step "the model for the text view" "scripts/fetch-model.sh: once, then cached"
run scripts/fetch-model.sh

# Clippy lints every build below as it compiles: clippy-driver stands in for rustc on this
# crate (RUSTC_WORKSPACE_WRAPPER, as `cargo clippy` does it) and CLIPPY_ARGS denies warnings,
# so each target is linted with the features and target it is built with, and nothing is
# compiled a second time only to be checked (`cargo clippy` stops at metadata, which no build
# can reuse). Dependencies are compiled by rustc as always. docs/testing.md has the targets.
lint=(env RUSTC_WORKSPACE_WRAPPER="$(command -v clippy-driver)" CLIPPY_ARGS=-Dwarnings)

step "native tests and clippy" "numerics, lab, statistics, CLI, the model, doc tests; every target linted"
run "${lint[@]}" cargo test
# The command line whose output the end-to-end tests compare the page's exports with: the binary
# `cargo test` just built (tests/e2e/teaching.test.mjs would otherwise `cargo run` a dev build).
export KERNEL_LAB_BIN="$ROOT/target/debug/kernel-lab"
if [[ ! -x $KERNEL_LAB_BIN ]]; then
  echo "error: cargo test did not leave $KERNEL_LAB_BIN" >&2
  exit 1
fi

# Everything built for the browser, in one target directory per set of flags so that each
# dependency is compiled once: the shipping profiles (`page` for the page: opt-level z;
# `release` for the workers: opt-level 3) without fat link-time optimisation and with 16
# codegen units, so both cores work instead of one long single-threaded link, and binaryen's
# wasm-opt at -O1 instead of -O3 (workers) and -Oz (page): the same semantics (no pass of
# either changes a floating-point result), about 4 minutes of CPU less on a cold build; the
# shipping levels' sizes and speeds are the benchmark's to measure. Its own target
# directory, so `./scripts/serve.sh` and the benchmark keep their shipping builds. The browser
# tests below and the served page reuse it (same settings, same directories, wasm-opt's
# results cached by scripts/cached/wasm-opt).
test_release=("${lint[@]}" CARGO_TARGET_DIR="$ROOT/target/test-release"
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
  CARGO_PROFILE_PAGE_LTO=false CARGO_PROFILE_PAGE_CODEGEN_UNITS=16
  WORKER_WASM_OPT_LEVEL=-O1 PAGE_WASM_OPT_LEVEL=-O1)

step "release build and clippy for wasm32" "trunk: the page and six worker builds, each linted with its features"
run "${test_release[@]}" trunk build --release

# wasm-bindgen-test-runner prefers GECKODRIVER to CHROMEDRIVER, and with neither set takes the
# first driver on PATH: each run names its driver and unsets the other. (No `cargo test -q`
# here: cargo would pass --quiet on to the runner, which rejects it.)
in_chromium() { env -u GECKODRIVER CHROMEDRIVER=/usr/bin/chromedriver "$@"; }
in_firefox() { env -u CHROMEDRIVER GECKODRIVER="$(command -v geckodriver)" "$@"; }
# The browser tests as the page is built (profile `page`, .cargo/config.toml's flags, the
# page's features): only the tests themselves are compiled, the rest is the build above.
page_tests=("${test_release[@]}" cargo test --target wasm32-unknown-unknown --profile page
  --no-default-features --features "optimised-a,page" --test browser --test browser_worker)
# tests/browser_worker.rs again as `full-worker` is built (`+relaxed-simd`, profile `release`,
# its features, scripts/build-worker.sh's directory): the code that differs between the two
# builds is the workers' fused kernel. kernel_wasm (a development aid) is built there too.
worker_like=("${test_release[@]}" CARGO_TARGET_DIR="$ROOT/target/test-release/worker"
  RUSTFLAGS="-C target-feature=$RELAXED_TARGET_FEATURES")
worker_features=(--target wasm32-unknown-unknown --release --no-default-features --features optimised-a)

step "browser tests in headless Chromium" "wasm-bindgen-test: the page's build, then the workers'"
run in_chromium "${page_tests[@]}"
run in_chromium "${worker_like[@]}" cargo test "${worker_features[@]}" --test browser_worker
run "${worker_like[@]}" cargo build "${worker_features[@]}" --example kernel_wasm

step "browser tests in headless Firefox ESR" "the same two builds"
run in_firefox "${page_tests[@]}"
run in_firefox "${worker_like[@]}" cargo test "${worker_features[@]}" --test browser_worker

step "end-to-end tests in headless Chromium" "the release build, Playwright"
(cd tests/e2e && E2E_BROWSER=chromium run npm test)

step "end-to-end tests in headless Firefox ESR" "Playwright over WebDriver BiDi"
(cd tests/e2e && E2E_BROWSER=firefox run npm test)

step "the served page" "./scripts/serve.sh, loaded in both browsers; reuses the release build"
(cd tests/e2e && run "${test_release[@]}" npm run test:serve)
