"""NumPy baseline of the all-MiniLM-L6-v2 forward, timed at L = 32, 128 and 512 tokens.

The native reference for the speed of the app's MiniLM forward: the same encoder (6 layers,
hidden 384, 12 heads of 32, intermediate 1536, exact erf GELU, layer-norm eps 1e-12, mean
pooling over all tokens, L2 normalisation) in NumPy float32, the matrix products in the BLAS
NumPy is built with (OpenBLAS in the PyPI wheels, every core). The weights are read from the
converted f16 file that scripts/fetch-model.sh caches (`--model`, default that cache path) and
widened to f32, so they are the weights the Rust side uses.

- The safetensors file is read by hand (8-byte header length, JSON header, raw little-endian
  data) with json and numpy.frombuffer: the script needs only NumPy (bench/requirements.txt).
- NumPy has no erf: GELU uses Abramowitz and Stegun 7.1.26 evaluated in float32 (the formula's
  error is 1.5e-7; measured in float32 over [-6, 6], 5.3e-7 against math.erf).
- The token ids are passage 0 of assets/minilm-heads.bin repeated: [CLS], then its 30 word
  pieces over and over, cut so that with [SEP] there are exactly L tokens (the values do not
  matter for the speed; positions 0..L-1 are used).
- One warm-up forward, then `--runs` timed forwards per L; the median wall time is reported.
- Multiply-adds per forward (the matrix products only):
      layers * (4 L d^2 + 2 L d f + 2 L^2 d)
  with d = 384, f = 1536: Q, K, V and output projections 4 L d^2, the two feed-forward products
  2 L d f, the attention scores h L^2 d_h = L^2 d and the weighted sum of the values L^2 d.
- Check: if tests/fixtures/minilm-reference.json is found, the embedding of passage 0 is
  compared with its float64 `embedding_f16_weights` (same weights): "check_max_abs_diff".

Last stdout line: one JSON object {numpy_version, blas, threads, forward_ms, macs, macs_per_s,
...}, keyed by L as a string.
"""

import argparse
import json
import math
import os
import statistics
import struct
import time
from pathlib import Path

import numpy as np

LAYERS = 6
HIDDEN = 384
HEADS = 12
HEAD_DIM = 32
INTERMEDIATE = 1536
LN_EPS = np.float32(1e-12)
FORMAT = "softmax-kernel-lab/minilm-f16/1"
LENGTHS = (32, 128, 512)
# Passage 0 of assets/minilm-heads.bin: [CLS], 30 word pieces, [SEP].
PASSAGE_IDS = [
    101, 3086, 11082, 2296, 2773, 2298, 2012, 2296, 2060, 2773, 1024, 2169, 23032, 2003, 4102, 2007,
    2035, 6309, 1010, 1998, 1037, 3730, 17848, 4332, 7644, 2046, 15871, 2005, 1996, 5300, 1012, 102,
]
DTYPES = {"F16": "<f2", "F32": "<f4"}


def default_model() -> Path:
    cache = os.environ.get("SKL_MODEL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "softmax-kernel-lab")
    return Path(cache) / "minilm-l6-v2-f16.safetensors"


def read_safetensors(path: Path) -> dict:
    """Every tensor of the file as float32 (f16 widened exactly)."""
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    if header.get("__metadata__", {}).get("format") != FORMAT:
        raise SystemExit(f"{path}: not a {FORMAT} file (run scripts/fetch-model.sh)")
    data = memoryview(blob)[8 + n :]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[begin:end], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
        tensors[name] = array.astype(np.float32)
    return tensors


def layer_norm(x, weight, bias):
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + LN_EPS) * weight + bias


def erf(x):
    """Abramowitz and Stegun 7.1.26 in float32."""
    a = np.abs(x)
    t = np.float32(1.0) / (np.float32(1.0) + np.float32(0.3275911) * a)
    poly = t * (np.float32(0.254829592) + t * (np.float32(-0.284496736) + t * (
        np.float32(1.421413741) + t * (np.float32(-1.453152027) + t * np.float32(1.061405429)))))
    return np.copysign(np.float32(1.0) - poly * np.exp(-a * a), x)


def gelu(x):
    return np.float32(0.5) * x * (np.float32(1.0) + erf(x * np.float32(1.0 / math.sqrt(2.0))))


def forward(w: dict, ids: np.ndarray) -> np.ndarray:
    """The sentence embedding (384 floats) of one sequence, all in float32."""

    def linear(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    t = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:t]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    scale = np.float32(1.0 / math.sqrt(HEAD_DIM))
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        q, k, v = (
            linear(x, p + f"attention.self.{n}").reshape(t, HEADS, HEAD_DIM).transpose(1, 0, 2)
            for n in ("query", "key", "value")
        )
        scores = (q * scale) @ k.transpose(0, 2, 1)  # [head][L][L]
        scores -= scores.max(axis=-1, keepdims=True)
        a = np.exp(scores)
        a /= a.sum(axis=-1, keepdims=True)
        context = (a @ v).transpose(1, 0, 2).reshape(t, HIDDEN)
        attn = layer_norm(
            linear(context, p + "attention.output.dense") + x,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        x = layer_norm(
            linear(gelu(linear(attn, p + "intermediate.dense")), p + "output.dense") + attn,
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
        )
    pooled = x.mean(axis=0)
    return pooled / np.linalg.norm(pooled)


def token_ids(length: int) -> np.ndarray:
    body = PASSAGE_IDS[1:-1]
    repeated = (body * (length // len(body) + 1))[: length - 2]
    return np.asarray([PASSAGE_IDS[0]] + repeated + [PASSAGE_IDS[-1]])


def macs(length: int) -> int:
    d, f = HIDDEN, INTERMEDIATE
    return LAYERS * (4 * length * d * d + 2 * length * d * f + 2 * length * length * d)


def blas_info():
    """(name and version, threads) of the BLAS, as far as NumPy and threadpoolctl tell."""
    name = "OpenBLAS as bundled"
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        name = f"{blas['name']} {blas['version']}"
    except Exception:  # the config layout is not a stable API
        pass
    threads = os.cpu_count()
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):  # what OpenBLAS honours
        if os.environ.get(variable, "").isdigit():
            threads = min(threads, int(os.environ[variable]))
            break
    try:
        from threadpoolctl import threadpool_info

        pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        if pools:
            threads = pools[0]["num_threads"]
    except ImportError:
        pass
    return name, threads


def check(w: dict):
    """Max abs difference to the float64 reference embedding of passage 0, or None."""
    fixture = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "minilm-reference.json"
    if not fixture.is_file():
        return None
    reference = json.loads(fixture.read_text())
    strings = {s["name"]: s for s in reference["strings"]}
    for item in reference["embeddings"]:
        if item["name"] == "passage_0":
            ours = forward(w, np.asarray(strings["passage_0"]["ids"]))
            return float(np.abs(ours - np.asarray(item["embedding_f16_weights"])).max())
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per length after one warm-up")
    parser.add_argument("--model", type=Path, default=default_model(),
                        help="the converted f16 safetensors file (scripts/fetch-model.sh --print-path)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("need runs >= 1")
    if not args.model.is_file():
        raise SystemExit(f"{args.model} not found: run scripts/fetch-model.sh first")

    w = read_safetensors(args.model)
    forward_ms, counts, rates, samples_ms = {}, {}, {}, {}
    for length in LENGTHS:
        ids = token_ids(length)
        forward(w, ids)  # warm-up
        samples = []
        for _ in range(args.runs):
            start = time.perf_counter()
            forward(w, ids)
            samples.append((time.perf_counter() - start) * 1e3)
        median = statistics.median(samples)
        key = str(length)
        forward_ms[key] = round(median, 3)
        samples_ms[key] = [round(s, 3) for s in samples]
        counts[key] = macs(length)
        rates[key] = float(f"{counts[key] / (median / 1e3):.4g}")
        print(f"L = {length:3}: {median:8.2f} ms median of {args.runs}, "
              f"{counts[key] / 1e6:7.1f} M multiply-adds, {rates[key] / 1e9:5.2f} G MAC/s")

    blas, threads = blas_info()
    report = {
        "numpy_version": np.__version__,
        "blas": blas,
        "threads": threads,
        "forward_ms": forward_ms,
        "macs": counts,
        "macs_per_s": rates,
        "samples_ms": samples_ms,
        "check_max_abs_diff": check(w),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
