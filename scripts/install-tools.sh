#!/usr/bin/env bash
# Installs whatever is missing, at the pinned versions (../shared/TOOLCHAIN.md):
# the wasm target, Trunk, the wasm-bindgen CLI, binaryen's wasm-opt (npm), and with
# --browser also Debian's Chromium + ChromeDriver, Debian's Firefox ESR + geckodriver (cargo)
# and the end-to-end tests' npm packages.
# Safe to run again: every step checks first.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

with_browser=false
[[ "${1:-}" == "--browser" ]] && with_browser=true

say() { printf '==> %s\n' "$*"; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

apt_updated=false
apt_install() {
  if [[ $apt_updated == false ]]; then
    as_root apt-get update -q
    apt_updated=true
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
}

if ! command -v cargo >/dev/null || ! command -v rustup >/dev/null; then
  echo "error: cargo and rustup are needed (the project's machines have them; see README)" >&2
  exit 1
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
for component in rustfmt clippy; do
  if ! rustup component list --installed | grep -q "^$component"; then
    say "adding $component"
    rustup component add "$component"
  fi
done

if ! trunk --version 2>/dev/null | grep -qx "trunk $TRUNK_VERSION"; then
  say "installing trunk $TRUNK_VERSION (10 to 20 minutes on two cores)"
  cargo install trunk --version "$TRUNK_VERSION" --locked
fi

if ! wasm-bindgen --version 2>/dev/null | grep -q "^wasm-bindgen $WASM_BINDGEN_VERSION\$"; then
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (5 to 9 minutes)"
  # --locked fails for this version (a locked dependency is missing from the index).
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
fi

if ! command -v npm >/dev/null; then
  say "installing Node.js and npm from Debian"
  apt_install nodejs npm
fi

if ! wasm-opt --version 2>/dev/null | grep -q "version_132"; then
  say "installing binaryen 132's wasm-opt from npm (Debian's wasm-opt 108 breaks the page)"
  (cd tools && npm ci --no-audit --no-fund)
fi

if [[ $with_browser == true ]]; then
  if [[ ! -x /usr/bin/chromium || ! -x /usr/bin/chromedriver ]]; then
    say "installing Chromium and ChromeDriver from Debian"
    apt_install chromium chromium-driver
  fi
  if [[ ! -x /usr/bin/firefox-esr ]]; then
    say "installing Firefox ESR from Debian"
    apt_install firefox-esr
  fi
  # Not `geckodriver --version | grep -q`: grep exits at the first line, geckodriver then dies
  # of SIGPIPE, and pipefail calls the pipeline failed (a needless 3-minute reinstall).
  read -r _ geckodriver_version _ < <(geckodriver --version 2>/dev/null || true)
  if [[ "${geckodriver_version:-}" != "$GECKODRIVER_VERSION" ]]; then
    say "installing geckodriver $GECKODRIVER_VERSION (about 3 minutes; Debian has none)"
    cargo install geckodriver --version "$GECKODRIVER_VERSION" --locked --force
  fi
  # npm ci again whenever the lockfile is newer than the installed tree (a new or bumped package).
  if [[ ! -f tests/e2e/node_modules/.package-lock.json \
        || tests/e2e/package-lock.json -nt tests/e2e/node_modules/.package-lock.json ]]; then
    say "installing the end-to-end tests' npm packages (playwright-core, axe-core)"
    (cd tests/e2e && npm ci --no-audit --no-fund)
  fi
fi
say "tools ready: $(trunk --version), $(wasm-bindgen --version), $(wasm-opt --version)"
if [[ $with_browser == true ]]; then
  say "browsers ready: $(chromium --version 2>/dev/null), $(firefox-esr --version), geckodriver $(geckodriver --version 2>/dev/null | sed -n 1p | cut -d" " -f2)"
fi
