#!/usr/bin/env bash
# Trunk post-build hook: builds the page's own module (src/main.rs, the UI) in parts and
# starts it from index.html, then writes the Content-Security-Policy (scripts/csp.mjs).
#
# The first view is the kernel view; the attention view (with its text and swap views) and the
# tour's step panel are not on it. src/main.rs marks their entries as split points
# (wasm_split_helpers, the runtime of Leptos's `#[lazy]`), and wasm-split-cli cuts the linked
# module there, as cargo-leptos does: what only one split point reaches goes into a file of its
# own (split_NAME.wasm), what several share into a chunk (chunk_N.wasm), and the page
# fetches them the first time the view or a tour step is shown (__wasm_split.js says which
# chunks each part needs). The cut needs the linker's relocations
# (`--emit-relocs`, for this binary only) and comes before wasm-bindgen, so Trunk's own Rust
# pipeline, which runs wasm-bindgen itself, cannot do it: index.html tells Trunk to skip the
# page (`data-trunk-skip`) and this hook does what Trunk would (cargo, wasm-bindgen, wasm-opt
# -Oz, the start script and its preload links).
#
# Everything of the page's module goes into one folder named by a hash of its files,
# `softmax-kernel-lab-HASH/` (softmax-kernel-lab.js and _bg.wasm, the split parts, the link module
# __wasm_split.js that fetches them, wasm-bindgen's snippets): a new build never mixes with a
# cached part of an old one, and the files' paths relative to each other are the ones
# wasm-split-cli writes, so no file's text is edited. Only index.html changes, hence
# csp.mjs runs here, after it (Trunk starts the post-build hooks all at once).
set -Eeuo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
root="${TRUNK_SOURCE_DIR:-$ROOT}"
staging="${TRUNK_STAGING_DIR:?run by trunk, or set TRUNK_STAGING_DIR}"
profile="${TRUNK_PROFILE:-release}"
cd "$root"
target_base="${CARGO_TARGET_DIR:-$root/target}"
bin=softmax-kernel-lab

# The page's profile (Cargo.toml: `page`, opt-level "z") and features (no `text-model`: the
# model and its tokenizer live in model-worker).
if [[ "$profile" == "release" ]]; then
  cargo_profile=(--profile page)
  out_dir="$target_base/wasm32-unknown-unknown/page"
else
  cargo_profile=()
  out_dir="$target_base/wasm32-unknown-unknown/debug"
fi
# `cargo rustc` passes the link argument to this binary alone: the library and every dependency
# are compiled as for any other build (the browser tests share them).
# `formulas-on-demand`: the formulas the first view does not show (the attention and language
# model views', the tour's, the panels below the kernel view's first screen) are left out of the
# module and written by build.rs to view-formulas.txt, which goes beside index.html (the page
# fetches it with those parts). Cargo's messages name this build's build-script output folder.
messages="$(cargo rustc --quiet --message-format=json-render-diagnostics \
  --target wasm32-unknown-unknown --bin "$bin" --no-default-features \
  --features optimised-a,formulas-on-demand "${cargo_profile[@]}" -- -C link-arg=--emit-relocs)"
formulas="$(printf '%s\n' "$messages" | node -e '
  let dir = "";
  for (const line of require("fs").readFileSync(0, "utf8").split("\n")) {
    if (!line.startsWith("{")) continue;
    const m = JSON.parse(line);
    if (m.reason === "build-script-executed" && /softmax-kernel-lab/.test(m.package_id)) dir = m.out_dir;
  }
  process.stdout.write(dir ? dir + "/view-formulas.txt" : "");
')"
if [[ -z "$formulas" || ! -s "$formulas" ]]; then
  echo "build-page.sh: cargo named no view-formulas.txt of build.rs" >&2
  exit 1
fi
cp "$formulas" "$staging/view-formulas.txt"

# Scratch space beside the other tools' outputs in the target directory.
work="$target_base/page-split"
rm -rf "${work:?}"
mkdir -p "$work/split" "$work/bindgen"
# $bin.wasm (what the first view needs), one file per split part, and the link module
# __wasm_split.js that fetches them (it imports `initSync` from ./$bin.js, wasm-bindgen's).
wasm-split-cli --target web --out-name "$bin" "$out_dir/$bin.wasm" "$work/split"
wasm-bindgen --target web --no-typescript --keep-lld-exports --no-demangle \
  --out-dir "$work/bindgen" --out-name "$bin" "$work/split/$bin.wasm"
rm "$work/split/$bin.wasm"
cp -r "$work/split/." "$work/bindgen/"

if [[ "$profile" == "release" ]]; then
  # The features the page is compiled with (.cargo/config.toml: simd128; Rust's defaults):
  # the split parts carry no target-features section for wasm-opt to read them from.
  # PAGE_WASM_OPT_LEVEL (default -Oz, for the first view's size): scripts/test.sh's build
  # takes -O1, as for the workers.
  for wasm in "$work/bindgen"/*.wasm; do
    wasm-opt "${PAGE_WASM_OPT_LEVEL:--Oz}" --enable-simd --enable-bulk-memory --enable-bulk-memory-opt --enable-sign-ext \
      --enable-nontrapping-float-to-int --enable-mutable-globals --enable-reference-types \
      --enable-multivalue -o "$wasm" "$wasm"
  done
fi

# The folder's name: a hash of every file in it.
hash="$(cd "$work/bindgen" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)"
pkg="$bin-$hash"
rm -rf "${staging:?}/${pkg:?}"
cp -r "$work/bindgen" "$staging/$pkg"

# The start script and preload links, as Trunk writes them for its own Rust pipeline (the two
# scripts and the first view's module fetched at once; subresource integrity for each).
integrity() {
  printf 'sha384-%s' "$(openssl dgst -sha384 -binary "$staging/$1" | openssl base64 -A)"
}
js="$pkg/$bin.js"
link_js="$pkg/__wasm_split.js"
wasm="$pkg/${bin}_bg.wasm"
head_links="<link rel=\"modulepreload\" href=\"./$js\" crossorigin=\"anonymous\" integrity=\"$(integrity "$js")\" />
    <link rel=\"modulepreload\" href=\"./$link_js\" crossorigin=\"anonymous\" integrity=\"$(integrity "$link_js")\" />
    <link rel=\"preload\" href=\"./$wasm\" crossorigin=\"anonymous\" integrity=\"$(integrity "$wasm")\" as=\"fetch\" type=\"application/wasm\" />"
start_script="<script type=\"module\">
import init from './$js';
await init({ module_or_path: './$wasm' });
</script>"
html="$staging/index.html"
HTML_FILE="$html" HEAD_LINKS="$head_links" START_SCRIPT="$start_script" node <<'EOF'
const { readFileSync, writeFileSync } = require('node:fs');
const file = process.env.HTML_FILE;
let html = readFileSync(file, 'utf8');
if (!html.includes('</head>') || !html.includes('</body>')) {
  console.error(`build-page.sh: ${file} has no </head> or </body>`);
  process.exit(1);
}
// Trunk leaves the skipped Rust link in place: this hook is what it stood for.
html = html.replace(/\s*<link data-trunk rel="rust"[^>]*>/, '');
html = html.replace('</head>', `  ${process.env.HEAD_LINKS}\n  </head>`);
html = html.replace('</body>', `${process.env.START_SCRIPT}\n</body>`);
writeFileSync(file, html);
EOF

node "$root/scripts/csp.mjs"
echo "build-page.sh: the page ($profile) in $pkg/: $(find "$staging/$pkg" -name '*.wasm' -printf '%f ')"
