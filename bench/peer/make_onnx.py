#!/usr/bin/env python3
"""Build the model benchmark's peer: all-MiniLM-L6-v2 as ONNX, in the folder transformers.js reads.

What
    No model hub is reachable here, so the ONNX files transformers.js needs are made from the
    lab's own cached weights: the converted f16 file that `scripts/fetch-model.sh --print-path`
    names (scripts/convert-model.py: 2-D tensors f16, 1-D f32, config.json and tokenizer.json in
    its `__metadata__`). The f16 weights are widened to f32, exactly, so the peer computes with the
    lab's weights, not with the original f32 ones.

    The BERT encoder is written with onnx.helper (opset 17), laid out as a torch export of
    transformers' BertModel would be, so that ONNX Runtime's load-time fusions (BiasGelu,
    FusedMatMul, SkipLayerNormalization) see the pattern they know:
      - inputs input_ids, attention_mask, token_type_ids: int64 [batch_size, sequence_length];
      - word + token-type + position embeddings (positions sliced from a [1, 512] constant),
        LayerNormalization (eps 1e-12);
      - the additive mask (1 - mask) * float32 min, broadcast as [batch, 1, 1, L];
      - per layer: MatMul then bias Add for Q, K, V, Reshape to 12 heads of 32, Q Kᵀ divided by
        sqrt(32), mask added, Softmax, context, output MatMul + Add, residual, LayerNormalization;
        the feed-forward with exact GELU x * (1 + erf(x / sqrt 2)) * 0.5 (Div, Erf, Add, Mul, Mul);
      - output last_hidden_state [batch, L, 384] (no pooler: transformers.js mean-pools itself).

    Writes, under --out (default target/peer/models/all-MiniLM-L6-v2): config.json and
    tokenizer.json (the stored texts, unchanged), tokenizer_config.json (a BertTokenizer,
    lower-casing, model_max_length 512), onnx/model.onnx (fp32) and onnx/model_quantized.onnx
    (onnxruntime.quantization.quantize_dynamic: QInt8 weights, per channel, reduce_range: what
    transformers.js loads for dtype "q8"); and --check-out (default target/peer/check.json).

The check (the script exits non-zero when it fails)
    The lab's own forward, `cargo run --release --bin kernel-lab -- model --text T`, prints the
    token ids and the mean-pooled, L2-normalised embedding of each check text (four lengths, the
    last near 512 tokens). The same ids go through the fp32 graph in ONNX Runtime (Python, CPU),
    mean-pooled and normalised: every cosine must be >= 0.9999. The q8 graph's cosines are
    printed too (about 0.986-0.991: int8 weights). A padded batch of two texts must give each
    text's unpadded embedding (the attention mask works). check.json keeps the texts, the lab's
    ids and embeddings and the cosines: tests/e2e/model-bench.mjs has the peer embed the same
    texts in the browser and compares ids and embeddings (tokenizer and pipeline included).

    Nothing is rebuilt when every output exists and is newer than the model file and this script
    ("cached"); --force rebuilds. Outputs are built in a temporary folder and moved into place
    only after the check passed.

How to run
    PYTHONPATH=tools/peer-python python3 bench/peer/make_onnx.py
    (scripts/bench.sh installs bench/peer/requirements.txt into tools/peer-python and runs it.)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
FORMAT = "softmax-kernel-lab/minilm-f16/1"
MODEL_ID = "all-MiniLM-L6-v2"
DTYPES = {"F16": "<f2", "F32": "<f4"}
OPSET = 17
LAYERS = 6
HIDDEN = 384
HEADS = 12
HEAD_DIM = 32
INTERMEDIATE = 1536
MAX_POSITIONS = 512
LN_EPS = 1e-12
MIN_COSINE = 0.9999
OUTPUTS = ("config.json", "tokenizer.json", "tokenizer_config.json", "onnx/model.onnx", "onnx/model_quantized.onnx")

# Texts of different lengths for the check; the last is repeated to near 512 tokens.
LONG_PARAGRAPH = (
    "Random features replace the softmax kernel by an inner product of two feature maps, so that "
    "attention costs time linear in the sequence length; how well they do depends on the "
    "queries, the keys and the number of features drawn. "
)
CHECK_TEXTS = [
    "The cat sat on the mat.",
    "Café au lait, naïve résumé: accents, CAPITALS and punctuation (with brackets) — all lower-cased!",
    " ".join([LONG_PARAGRAPH] * 3).strip(),
    " ".join([LONG_PARAGRAPH] * 11).strip(),
]


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def default_model() -> Path:
    """What scripts/fetch-model.sh --print-path names (the cache it fills)."""
    out = subprocess.run([str(ROOT / "scripts" / "fetch-model.sh"), "--print-path"],
                         check=True, capture_output=True, text=True).stdout
    return Path(out.strip())


def read_model(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Every tensor as float32 (f16 widened exactly) and the file's metadata."""
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    metadata = header.pop("__metadata__", {})
    if metadata.get("format") != FORMAT:
        sys.exit(f"error: {path} is not a {FORMAT} file (run scripts/fetch-model.sh)")
    data = memoryview(blob)[8 + n :]
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=DTYPES[info["dtype"]]).reshape(info["shape"]).astype(np.float32)
    return tensors, metadata


def build_graph(w: dict[str, np.ndarray]) -> onnx.ModelProto:
    """The encoder as a torch export of BertModel would lay it out (see the module docstring)."""
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, value, dtype=np.float32) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=f"/{output}", **attrs))
        return output

    def linear(x: str, name: str, out: str) -> str:
        # torch exports nn.Linear on a 3-D input as MatMul by the transposed weight, then Add.
        weight_t = const(f"{name}.weight_t", np.ascontiguousarray(w[f"{name}.weight"].T))
        bias = const(f"{name}.bias", w[f"{name}.bias"])
        return node("Add", [node("MatMul", [x, weight_t], f"{out}/MatMul"), bias], out)

    def weight(name: str) -> str:
        return const(name, w[name])

    def layer_norm(x: str, name: str, out: str) -> str:
        return node("LayerNormalization", [x, weight(f"{name}.weight"), weight(f"{name}.bias")], out,
                    axis=-1, epsilon=LN_EPS)

    # Embeddings: word + token type, then + position (BertEmbeddings' order), LayerNorm.
    words = node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], "embeddings/word")
    types = node("Gather", [weight("embeddings.token_type_embeddings.weight"), "token_type_ids"], "embeddings/token_type")
    seq_len = node("Shape", ["input_ids"], "embeddings/seq_len", start=1, end=2)
    all_positions = const("embeddings.position_ids", np.arange(MAX_POSITIONS)[None, :], np.int64)
    position_ids = node("Slice", [all_positions, const("const/zero_i64", [0], np.int64), seq_len,
                                  const("const/one_i64", [1], np.int64)], "embeddings/position_ids")
    positions = node("Gather", [weight("embeddings.position_embeddings.weight"), position_ids], "embeddings/position")
    summed = node("Add", [node("Add", [words, types], "embeddings/word_type"), positions], "embeddings/sum")
    x = layer_norm(summed, "embeddings.LayerNorm", "embeddings/LayerNorm")

    # The extended attention mask: (1 - mask) * finfo(float32).min, [batch, 1, 1, L].
    mask = node("Cast", [node("Unsqueeze", ["attention_mask", const("const/axes_1_2", [1, 2], np.int64)], "mask/unsqueeze")],
                "mask/float", to=TensorProto.FLOAT)
    additive = node("Mul", [node("Sub", [const("const/one", 1.0), mask], "mask/inverted"),
                            const("const/float_min", np.finfo(np.float32).min)], "mask/additive")

    heads_shape = const("const/heads_shape", [0, 0, HEADS, HEAD_DIM], np.int64)
    hidden_shape = const("const/hidden_shape", [0, 0, HIDDEN], np.int64)
    sqrt_head_dim = const("const/sqrt_head_dim", math.sqrt(HEAD_DIM))
    sqrt_two = const("const/sqrt_two", math.sqrt(2.0))
    one, half = "const/one", const("const/half", 0.5)
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        o = f"layer{layer}/"
        q, k, v = (node("Reshape", [linear(x, p + f"attention.self.{n}", o + n), heads_shape], o + n + "/heads")
                   for n in ("query", "key", "value"))
        q = node("Transpose", [q], o + "query/t", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], o + "key/t", perm=[0, 2, 3, 1])  # permute then transpose(-1, -2)
        v = node("Transpose", [v], o + "value/t", perm=[0, 2, 1, 3])
        scores = node("Div", [node("MatMul", [q, k], o + "scores/raw"), sqrt_head_dim], o + "scores/scaled")
        probs = node("Softmax", [node("Add", [scores, additive], o + "scores/masked")], o + "probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], o + "context/heads")], o + "context/t", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, hidden_shape], o + "context")
        attended = linear(context, p + "attention.output.dense", o + "attention/dense")
        x = layer_norm(node("Add", [attended, x], o + "attention/residual"), p + "attention.output.LayerNorm", o + "attention/LayerNorm")
        # Exact GELU as torch exports it before opset 20: x * (erf(x / sqrt 2) + 1) * 0.5.
        h = linear(x, p + "intermediate.dense", o + "intermediate")
        erf = node("Erf", [node("Div", [h, sqrt_two], o + "gelu/div")], o + "gelu/erf")
        gelu = node("Mul", [node("Mul", [h, node("Add", [erf, one], o + "gelu/add")], o + "gelu/mul"), half], o + "gelu")
        out = linear(gelu, p + "output.dense", o + "output/dense")
        x = layer_norm(node("Add", [out, x], o + "output/residual"), p + "output.LayerNorm",
                       "last_hidden_state" if layer == LAYERS - 1 else o + "output/LayerNorm")

    dims = ["batch_size", "sequence_length"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in ("input_ids", "attention_mask", "token_type_ids")]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [HIDDEN])]
    graph = helper.make_graph(nodes, "all-MiniLM-L6-v2", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="softmax-kernel-lab bench/peer/make_onnx.py")
    model.ir_version = 8  # what opset 17 came with; every ONNX Runtime since 1.13 reads it
    onnx.checker.check_model(model, full_check=True)
    return model


def tokenizer_config(tokenizer: dict) -> dict:
    """What transformers.js needs to build a BertTokenizer, read off tokenizer.json.

    transformers.js pads and truncates itself (to model_max_length), ignoring tokenizer.json's
    own padding and truncation to 128; the special tokens must be the vocabulary's.
    """
    normalizer = tokenizer["normalizer"]
    if normalizer["type"] != "BertNormalizer" or tokenizer["model"]["type"] != "WordPiece":
        sys.exit(f"error: tokenizer.json is not a BERT WordPiece tokenizer ({normalizer['type']}, {tokenizer['model']['type']})")
    vocab = tokenizer["model"]["vocab"]
    special = {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]", "mask_token": "[MASK]"}
    missing = [t for t in special.values() if t not in vocab]
    if missing:
        sys.exit(f"error: tokenizer.json lacks {missing}")
    return {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": normalizer["lowercase"],
        "strip_accents": normalizer["strip_accents"],
        "tokenize_chinese_chars": normalizer["handle_chinese_chars"],
        "clean_up_tokenization_spaces": True,
        "do_basic_tokenize": True,
        "never_split": None,
        "model_max_length": MAX_POSITIONS,
        **special,
    }


def lab_embedding(text: str, model: Path) -> dict:
    """The lab's tokens and embedding of one text, from its command line (built once by cargo)."""
    out = subprocess.run(
        ["cargo", "run", "--release", "--quiet", "--bin", "kernel-lab", "--", "model", "--text", text, "--model-file", str(model)],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    if report["full_len"] is not None:
        sys.exit(f"error: a check text has {report['full_len']} tokens, over 512 (the lab cuts it, transformers.js would too, differently)")
    return {"text": text, "ids": report["ids"], "embedding": report["embedding"]}


def embed(session, ids: list[list[int]]) -> np.ndarray:
    """Mean-pooled (over unmasked tokens), L2-normalised embeddings of a right-padded batch."""
    length = max(len(row) for row in ids)
    input_ids = np.zeros((len(ids), length), dtype=np.int64)
    mask = np.zeros_like(input_ids)
    for i, row in enumerate(ids):
        input_ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    (hidden,) = session.run(["last_hidden_state"], {"input_ids": input_ids, "attention_mask": mask,
                                                    "token_type_ids": np.zeros_like(input_ids)})
    pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def cosine(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def check(folder: Path, model: Path) -> dict:
    """Compares the graphs with the lab's forward; exits when fp32 falls under MIN_COSINE."""
    import onnxruntime as ort

    say(f"the lab's forward on {len(CHECK_TEXTS)} texts (cargo run --release --bin kernel-lab -- model)")
    lab = [lab_embedding(text, model) for text in CHECK_TEXTS]
    print("    tokens: " + ", ".join(str(len(item["ids"])) for item in lab))
    if len(lab[-1]["ids"]) < 448:
        sys.exit(f"error: the long check text has {len(lab[-1]['ids'])} tokens, meant to be near 512")
    options = ort.SessionOptions()
    options.log_severity_level = 3
    result = {"texts": lab, "onnxruntime": ort.__version__, "onnx": onnx.__version__}
    for dtype, file in (("fp32", "model.onnx"), ("q8", "model_quantized.onnx")):
        session = ort.InferenceSession(str(folder / "onnx" / file), options, providers=["CPUExecutionProvider"])
        cosines = [cosine(embed(session, [item["ids"]])[0], item["embedding"]) for item in lab]
        result[f"cosine_{dtype}"] = cosines
        print(f"    {dtype} cosine to the lab: " + ", ".join(f"{c:.9f}" for c in cosines))
        if dtype == "fp32":
            if min(cosines) < MIN_COSINE:
                sys.exit(f"error: the fp32 graph's embeddings differ from the lab's (cosine {min(cosines):.6f} < {MIN_COSINE})")
            # Two texts of different lengths in one padded batch: the mask must hide the padding.
            batch = embed(session, [lab[0]["ids"], lab[1]["ids"]])
            alone = np.stack([embed(session, [lab[i]["ids"]])[0] for i in (0, 1)])
            gap = float(np.abs(batch - alone).max())
            print(f"    padded batch against one by one: max abs difference {gap:.2e}")
            if gap > 1e-5:
                sys.exit(f"error: padding changes the embeddings by {gap:.2e}: the attention mask is not applied")
            result["padded_batch_max_abs_diff"] = gap
    return result


def up_to_date(out: Path, check_out: Path, inputs: list[Path]) -> bool:
    files = [out / name for name in OUTPUTS] + [check_out]
    if not all(f.is_file() for f in files):
        return False
    newest_input = max(p.stat().st_mtime for p in inputs)
    return min(f.stat().st_mtime for f in files) > newest_input


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="the converted f16 file (default: scripts/fetch-model.sh --print-path)")
    parser.add_argument("--out", type=Path, default=ROOT / "target" / "peer" / "models" / MODEL_ID,
                        help="the model folder transformers.js reads")
    parser.add_argument("--check-out", type=Path, default=ROOT / "target" / "peer" / "check.json",
                        help="where the check's texts, the lab's ids and embeddings and the cosines go")
    parser.add_argument("--force", action="store_true", help="rebuild even when the outputs are newer than the inputs")
    args = parser.parse_args()
    model = args.model or default_model()
    if not model.is_file():
        sys.exit(f"error: {model} not found: run scripts/fetch-model.sh first")
    out, check_out = args.out.resolve(), args.check_out.resolve()
    if not args.force and up_to_date(out, check_out, [model, Path(__file__).resolve()]):
        print(f"cached: {out} (newer than {model.name} and {Path(__file__).name})")
        return

    from onnxruntime.quantization import QuantType, quantize_dynamic

    tensors, metadata = read_model(model)
    config, tokenizer_text = json.loads(metadata["config.json"]), metadata["tokenizer.json"]
    expected = {"hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
                "intermediate_size": INTERMEDIATE, "hidden_act": "gelu", "layer_norm_eps": LN_EPS,
                "max_position_embeddings": MAX_POSITIONS}
    wrong = {k: config.get(k) for k, v in expected.items() if config.get(k) != v}
    if wrong:
        sys.exit(f"error: config.json differs from the graph this script writes: {wrong}")

    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    work.chmod(0o755)  # mkdtemp's 0700 would stay on the final folder
    try:
        (work / "onnx").mkdir()
        (work / "config.json").write_text(metadata["config.json"])
        (work / "tokenizer.json").write_text(tokenizer_text)
        (work / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(json.loads(tokenizer_text)), indent=2) + "\n")
        say(f"building the fp32 graph from {model} (opset {OPSET}, onnx {onnx.__version__})")
        onnx.save(build_graph(tensors), str(work / "onnx" / "model.onnx"))
        say("quantising (quantize_dynamic: QInt8 weights, per channel, reduce_range)")
        quantize_dynamic(str(work / "onnx" / "model.onnx"), str(work / "onnx" / "model_quantized.onnx"),
                         weight_type=QuantType.QInt8, per_channel=True, reduce_range=True)
        for name in ("model.onnx", "model_quantized.onnx"):
            print(f"    onnx/{name}: {(work / 'onnx' / name).stat().st_size:,} bytes")
        result = check(work, model)
        # Only a checked model takes the place of the old one.
        if out.exists():
            shutil.rmtree(out)
        os.replace(work, out)
        check_out.parent.mkdir(parents=True, exist_ok=True)
        check_out.write_text(json.dumps(result) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say(f"wrote {out} and {check_out}")


if __name__ == "__main__":
    main()
