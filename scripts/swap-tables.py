#!/usr/bin/env python3
"""Markdown tables of approximate attention inside the model, from `kernel-lab swap` output.

    ALL=prf-pos,prf-hyp,...,sparse   # every method id (kernel-lab --help)
    for m in 64 256; do for layers in all each; do
      kernel-lab swap --methods $ALL --features $m --swapdraws 4 --layers $layers --rank > m$m-$layers.json
    done; done
    for layers in all each; do   # the Hedgehog maps (m = 2n = 64 features), if present
      kernel-lab swap --methods window --hedgehog --hhsteps 200 --swapdraws 4 --layers $layers --rank > hh-$layers.json
    done
    python3 scripts/swap-tables.py DIR   # DIR holds the four (or six) files

Per method and m: the sentence embedding's cosine to the exact model's with every layer swapped
(mean over the two stored passages and the draws), the draws that could not go on, the retrieval
preset's top-1 kept and Kendall's tau (every layer swapped), and the cosine with one layer swapped
at a time (layers 0 to 5). Standard library only.
"""
import json
import sys
from pathlib import Path


def fmt(x):
    return "—" if x is None else f"{x:.3f}"


def mean_cosine(reports):
    values = [r["cosine"]["mean"] for r in reports if r["cosine"]]
    return sum(values) / len(values) if values and len(values) == len(reports) else None


def row(method, m, every, each):
    texts = [t for t in every["texts"] if t["method"] == method]
    failed = sum(t["failed_draws"] for t in texts)
    draws = sum(t["draws"] for t in texts)
    retrieval = next(r for r in every["retrieval"] if r["method"] == method)
    tau = retrieval["kendall_tau"]["mean"] if retrieval["kendall_tau"] else None
    layers = [
        mean_cosine([t for t in each["texts"] if t["method"] == method and t["layers"] == [layer]])
        for layer in range(6)
    ]
    return (
        f"| `{method}` | {m} | {fmt(mean_cosine(texts))} | {failed}/{draws} | "
        f"{fmt(retrieval['top1_kept'])} | {fmt(tau)} | {' / '.join(fmt(c) for c in layers)} |"
    )


def main(folder):
    folder = Path(folder)
    print("| method | m | cosine, all layers | failed draws | retrieval top-1 kept | Kendall's τ | cosine, one layer swapped: 0 / 1 / 2 / 3 / 4 / 5 |")
    print("|---|---|---|---|---|---|---|")
    for m in (64, 256):
        every = json.loads((folder / f"m{m}-all.json").read_text())
        each = json.loads((folder / f"m{m}-each.json").read_text())
        for method in dict.fromkeys(t["method"] for t in every["texts"]):
            print(row(method, m, every, each))
    if (folder / "hh-all.json").exists():
        every = json.loads((folder / "hh-all.json").read_text())
        each = json.loads((folder / "hh-each.json").read_text())
        print(row("hedgehog", 64, every, each))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
