#!/usr/bin/env python3
"""Write tests/fixtures/smollm-reference.json: an independent reference for the Rust SmolLM2 code.

What
    1. Tokenization, written here from the GGUF's own tokens and merges (no tokenizer library):
       the control tokens (token type 3, `<|endoftext|>`, `<|im_start|>`, ...) split out first as
       whole tokens (Hugging Face's added special tokens), then every character that Rust's
       `char::is_numeric` accepts (Unicode N: digits, but also ², ½, Ⅻ) alone (the published configuration's `Digits(individual_digits=true)`), then the GPT-2 byte-level regex on each
       piece, each piece's UTF-8 bytes mapped to GPT-2's printable characters, and byte-pair
       merges by rank (lowest first, every occurrence left to right). No BOS (the GGUF's
       `tokenizer.ggml.add_bos_token` is false). The Hugging Face `tokenizers` library, built
       with the same pieces, is run beside it as a check: the script stops if they differ.
    2. Losses: a float64 NumPy forward of the Llama decoder with the weights dequantised by the
       `gguf` package (llama.cpp's own Python reader: Q4_1 and Q8_0 blocks) and widened to
       float64: RMSNorm (the file's epsilon), grouped-query attention (9 query heads, 3 key/value
       heads of 64; query head h reads key/value head h // 3), rotary embeddings on adjacent
       pairs (x[2i], x[2i+1]) at angle pos · base^(-2i/64) (the GGUF layout), scale 1/8, SwiGLU,
       the tied output head. For every string: each token's loss in nats,
       `-log softmax(logits[t])[ids[t + 1]]` for t = 0 .. n - 2 (the first token has none), and
       the perplexity, exp of their mean; for two strings the top 5 next tokens at every position
       with their log-probabilities.
    3. Swaps: the same forward with softmax replaced in some layers, causal, on queries and keys
       scaled by 64^(-1/4) (after the rotary embedding) as the lab does: `elu + 1` in layers
       0..29 and in layer 5 alone, and Taylor degree 2 (`1 + x + x²/2`, x = q·k / 8) in layer 5
       alone and in layers 10..12, each as the masked quadratic form
       out_i = Σ_{j≤i} κ(q_i, k_j) v_j / Σ_{j≤i} κ(q_i, k_j): no feature map, no prefix sums.
    4. Attention rows: for two strings (the sentence and the paragraph), the causal softmax
       probabilities that the exact forward of point 2 computes (the same call, read out of its
       attention, not recomputed): query heads (layer, head) in (0, 0), (5, 4), (17, 2),
       (29, 8), rows 0, 1, n // 2 and n - 1 (n tokens), each the full row of n probabilities,
       P_ij = softmax over j ≤ i of q_i · k_j / 8, with the zeros after the diagonal.

    Numbers are float64 written with Python's shortest round-trip repr; strings are written with
    ASCII escapes so no editor can touch them. The output is deterministic.

How to run (from the crate root)
    python3 -m venv /work/helper-venv
    /work/helper-venv/bin/pip install numpy==2.4.6 gguf==0.19.0 regex==2026.11.19 tokenizers==0.23.3
    /work/helper-venv/bin/python scripts/smollm-reference.py --gguf "$(scripts/fetch-model.sh --print-lm-path)"
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys

import gguf
import numpy as np
import regex

GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GPT2_PATTERN = (
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
)

# The hard strings: numbers, URLs, code, accents, CJK, emoji, control tokens, whitespace, a
# long paragraph. Each one's ids are stored; losses for those with at least two tokens.
STRINGS = [
    ("sentence", "The quick brown fox jumps over the lazy dog."),
    ("numbers", "In 1953, 42 people paid $3,141.59 each; 0.5% of 10000 is 50."),
    ("numerals", "x\u00b2 + \u00bd = \u0663 or \u096a or \u216b or \u2460, not \u4e94"),
    ("url", "See https://example.org/a/b?c=1&d=%20x#frag or mail me@host.io."),
    (
        "code",
        "def add(a, b):\n    return a + b  # sum\n\nprint(add(2, 3))\n",
    ),
    ("accents", "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber Stra\u00dfe co\u00f6perate"),
    ("decomposed", "Cafe\u0301 and the na\u0308ive"),
    ("cjk", "\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u3002\ud55c\uad6d\uc5b4 \u4e2d\u6587"),
    ("emoji", "I \u2764\ufe0f it \U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469\u200d\U0001F467 \U0001F1EB\U0001F1F7!"),
    ("whitespace", "  two  spaces,\ttab\nnewline\n\n  indented"),
    ("special", "<|im_start|>user\nHello<|im_end|>"),
    ("one_token", "Hello"),
    ("control", "bell\u0007 and nul\u0000 and \u00a0nbsp"),
    (
        "paragraph",
        "Attention lets every token of a sentence look at every other token, and weigh what it "
        "sees by a softmax of dot products. Its cost grows with the square of the length, which "
        "is why so many papers replace the exponential kernel with random features: the product "
        "of two feature vectors estimates the kernel, and the sums over keys can be computed "
        "once and shared by every query. Whether the estimate is good enough depends on the "
        "variance of the features, on the norms of the queries and keys, and on how many "
        "features one can afford. A language model is a harsh judge: it must predict the next "
        "word, and a small error in one layer can grow as it passes through the thirty layers "
        "above it. Here we measure that growth, token by token, in nats.",
    ),
]
TOP5_STRINGS = {"sentence", "numbers"}
SWAPS = [
    ("elu", list(range(30))),
    ("elu", [5]),
    ("taylor2", [5]),
    ("taylor2", [10, 11, 12]),
]
SWAP_STRINGS = ["sentence", "code", "paragraph"]
ATTENTION_STRINGS = {"sentence", "paragraph"}
ATTENTION_HEADS = [(0, 0), (5, 4), (17, 2), (29, 8)]


def attention_row_indices(n: int) -> list[int]:
    """Rows 0, 1, n // 2 and n - 1, each once, in order."""
    return sorted({0, 1, n // 2, n - 1} & set(range(n)))


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map of the 256 bytes onto printable characters."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("\u00a1"), ord("\u00ac") + 1))
        + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    )
    chars = printable[:]
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return dict(zip(printable, map(chr, chars)))


class Bpe:
    """Byte-level BPE over the GGUF's vocabulary and merges."""

    def __init__(self, tokens: list[str], types: list[int], merges: list[str]):
        self.vocab = {t: i for i, t in enumerate(tokens)}
        self.ranks = {tuple(m.split(" ")): r for r, m in enumerate(merges)}
        self.specials = [t for t, ty in zip(tokens, types) if ty == 3]
        self.byte_map = bytes_to_unicode()
        self.pattern = regex.compile(GPT2_PATTERN)
        self.special_split = regex.compile(
            "(" + "|".join(regex.escape(s) for s in sorted(self.specials, key=len, reverse=True)) + ")"
        )

    def merge(self, word: list[str]) -> list[str]:
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            best = min(pairs, key=lambda p: self.ranks.get(p, math.inf))
            if best not in self.ranks:
                break
            merged, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    merged.append(word[i] + word[i + 1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        return word

    def encode(self, text: str) -> list[int]:
        ids = []
        for part in self.special_split.split(text):
            if part == "":
                continue
            if part in self.vocab and part in self.specials:
                ids.append(self.vocab[part])
                continue
            for piece in regex.split(r"(\p{N})", part):
                if piece == "":
                    continue
                for word in self.pattern.findall(piece):
                    chars = [self.byte_map[b] for b in word.encode("utf-8")]
                    ids.extend(self.vocab[t] for t in self.merge(chars))
        return ids


def hf_tokenizer(tokens: list[str], types: list[int], merges: list[str]):
    """The same tokenizer through Hugging Face `tokenizers`: the check of `Bpe`."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    vocab = {t: i for i, t in enumerate(tokens)}
    pairs = [tuple(m.split(" ")) for m in merges]
    tok = Tokenizer(models.BPE(vocab, pairs))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types) if ty == 3]
    )
    return tok


class Model:
    def __init__(self, reader: gguf.GGUFReader):
        def value(key):
            return reader.fields[key].contents()

        self.layers = value("llama.block_count")
        self.width = value("llama.embedding_length")
        self.heads = value("llama.attention.head_count")
        self.kv_heads = value("llama.attention.head_count_kv")
        self.head_dim = self.width // self.heads
        self.base = float(value("llama.rope.freq_base"))
        self.eps = float(value("llama.attention.layer_norm_rms_epsilon"))
        tensors = {t.name: t for t in reader.tensors}

        def weight(name):
            t = tensors[name]
            w = gguf.quants.dequantize(t.data, t.tensor_type)
            return np.asarray(w, dtype=np.float64).reshape([int(n) for n in reversed(t.shape)])

        self.embed = weight("token_embd.weight")
        self.blocks = []
        for i in range(self.layers):
            self.blocks.append(
                {
                    part: weight(f"blk.{i}.{part}.weight")
                    for part in (
                        "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                        "ffn_norm", "ffn_gate", "ffn_up", "ffn_down",
                    )
                }
            )
        self.output_norm = weight("output_norm.weight")

    def norm(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w

    def rope(self, x):
        """x: (heads, n, 64); adjacent pairs rotated by pos · base^(-2i/64)."""
        n = x.shape[1]
        i = np.arange(self.head_dim // 2, dtype=np.float64)
        angle = np.arange(n, dtype=np.float64)[:, None] * self.base ** (-2.0 * i / self.head_dim)
        cos, sin = np.cos(angle), np.sin(angle)
        even, odd = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = even * cos - odd * sin
        out[..., 1::2] = even * sin + odd * cos
        return out

    def attention(self, q, k, v, method, keep=None):
        """q: (heads, n, 64), k and v: (kv_heads, n, 64); causal. `keep`, when given, receives
        the (heads, n, n) matrix of weights, normalised (the softmax's probabilities)."""
        n = q.shape[1]
        group = self.heads // self.kv_heads
        k = np.repeat(k, group, axis=0)
        v = np.repeat(v, group, axis=0)
        mask = np.tril(np.ones((n, n), dtype=bool))
        if method == "softmax":
            s = q @ k.transpose(0, 2, 1) / math.sqrt(self.head_dim)
            s = np.where(mask, s, -np.inf)
            s = s - s.max(axis=-1, keepdims=True)
            w = np.exp(s)
        else:
            scale = self.head_dim ** -0.25
            qs, ks = q * scale, k * scale
            if method == "elu":
                phi = lambda u: np.where(u > 0, u + 1.0, np.exp(np.minimum(u, 0.0)))
                w = phi(qs) @ phi(ks).transpose(0, 2, 1)
            elif method == "taylor2":
                x = qs @ ks.transpose(0, 2, 1)
                w = 1.0 + x + x * x / 2.0
            else:
                raise ValueError(method)
            w = np.where(mask, w, 0.0)
        w = w / w.sum(axis=-1, keepdims=True)
        if keep is not None:
            keep(w)
        return w @ v

    def logits(self, ids, swap=None, attention=None):
        """`attention`, when given: a dict whose keys are layers; each one's value is set to
        that layer's (heads, n, n) attention weights."""
        method, layers = swap if swap else ("softmax", [])
        x = self.embed[ids]
        n = len(ids)
        for i, b in enumerate(self.blocks):
            h = self.norm(x, b["attn_norm"])
            q = (h @ b["attn_q"].T).reshape(n, self.heads, self.head_dim).transpose(1, 0, 2)
            k = (h @ b["attn_k"].T).reshape(n, self.kv_heads, self.head_dim).transpose(1, 0, 2)
            v = (h @ b["attn_v"].T).reshape(n, self.kv_heads, self.head_dim).transpose(1, 0, 2)
            q, k = self.rope(q), self.rope(k)
            keep = None
            if attention is not None and i in attention:
                keep = lambda w, i=i: attention.__setitem__(i, w.copy())
            o = self.attention(q, k, v, method if i in layers else "softmax", keep)
            x = x + o.transpose(1, 0, 2).reshape(n, self.width) @ b["attn_output"].T
            h = self.norm(x, b["ffn_norm"])
            gate = h @ b["ffn_gate"].T
            x = x + ((gate / (1.0 + np.exp(-gate))) * (h @ b["ffn_up"].T)) @ b["ffn_down"].T
        return self.norm(x, self.output_norm) @ self.embed.T


def log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def losses_of(logits, ids):
    lp = log_softmax(logits)
    return [float(-lp[t, ids[t + 1]]) for t in range(len(ids) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gguf", required=True, help="SmolLM2-135M-Instruct.Q4_1.gguf")
    parser.add_argument("--out", default="tests/fixtures/smollm-reference.json")
    args = parser.parse_args()
    with open(args.gguf, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != GGUF_SHA256:
        print(f"error: {args.gguf} has SHA-256 {digest}, expected {GGUF_SHA256}", file=sys.stderr)
        return 1
    reader = gguf.GGUFReader(args.gguf)
    tokens = list(reader.fields["tokenizer.ggml.tokens"].contents())
    types = list(reader.fields["tokenizer.ggml.token_type"].contents())
    merges = list(reader.fields["tokenizer.ggml.merges"].contents())
    bpe = Bpe(tokens, types, merges)
    hf = hf_tokenizer(tokens, types, merges)
    model = Model(reader)

    strings = []
    for name, text in STRINGS:
        ids = bpe.encode(text)
        theirs = hf.encode(text).ids
        if ids != theirs:
            print(f"error: {name}: this tokenizer {ids} against tokenizers' {theirs}", file=sys.stderr)
            return 1
        entry = {"name": name, "text": text, "ids": ids, "tokens": [tokens[i] for i in ids]}
        if len(ids) >= 2:
            attention = None
            if name in ATTENTION_STRINGS:
                attention = {layer: None for layer, _ in ATTENTION_HEADS}
            logits = model.logits(ids, attention=attention)
            losses = losses_of(logits, ids)
            entry["losses"] = losses
            entry["perplexity"] = math.exp(sum(losses) / len(losses))
            if name in TOP5_STRINGS:
                lp = log_softmax(logits)
                entry["top5"] = [
                    [[int(i), float(row[i])] for i in np.argsort(-row, kind="stable")[:5]]
                    for row in lp
                ]
            if name in SWAP_STRINGS:
                entry["swaps"] = []
                for method, layers in SWAPS:
                    swapped = losses_of(model.logits(ids, (method, layers)), ids)
                    entry["swaps"].append(
                        {
                            "method": method,
                            "layers": layers,
                            "losses": swapped,
                            "perplexity": math.exp(sum(swapped) / len(swapped)),
                        }
                    )
            if attention is not None:
                entry["attention_rows"] = [
                    {
                        "layer": layer,
                        "head": head,
                        "row": row,
                        "probs": [float(p) for p in attention[layer][head, row]],
                    }
                    for layer, head in ATTENTION_HEADS
                    for row in attention_row_indices(len(ids))
                ]
        strings.append(entry)
        print(f"{name}: {len(ids)} tokens" + (f", perplexity {entry['perplexity']:.3f}" if "perplexity" in entry else ""))

    out = {
        "about": "scripts/smollm-reference.py: tokenizer from the GGUF's tokens and merges, float64 "
        "NumPy forward on the gguf package's dequantised weights",
        "gguf_sha256": GGUF_SHA256,
        "numpy": np.__version__,
        "gguf": getattr(gguf, "__version__", "0.19.0"),
        "strings": strings,
    }
    with open(args.out, "w", encoding="ascii") as f:
        json.dump(out, f, ensure_ascii=True, indent=1)
        f.write("\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
