# Sourced by the other scripts: the PATH on which the pinned tools are found.
# shellcheck shell=bash
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROOT
export PATH="$HOME/.cargo/bin:$ROOT/tools/node_modules/.bin:$PATH"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
TRUNK_VERSION="0.21.14"
WASM_BINDGEN_VERSION="0.2.130"   # must equal the wasm-bindgen crate pinned in Cargo.toml
GECKODRIVER_VERSION="0.37.1"
