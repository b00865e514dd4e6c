"""A question's words the base lacks: the user's synonym for a word the base has, or a thing it never names?

Run: .venv/bin/python -m bench.missing_words DUMP.json [DUMP.json …] [--lines 0.84,0.86,0.88]

Reads `bench.answer_eval --dump` files (each dump's last configuration). For every question the gate put
in the near band over words the base lacks (`unknown`), each such word is embedded with the embedding
model and compared with the distinct words of the fragments the question was shown; its nearest word
and their cosine are printed. Per line: how many answerable and how many silent questions would lose
all their missing words (every one with a neighbour at or above the line), and how many of the
answerable ones had been a refusal with the answer shown. Figures: bench/README.md, «Offline answers
end to end», sets AS and AT.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from bench.cpu import describe_cpu
from nodes.retrieval.synonyms import WORD


def unit(vectors: Any) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    return array / np.linalg.norm(array, axis=-1, keepdims=True)


def nearest(dumps: list[Path]) -> list[dict[str, Any]]:
    """Each near-band question's missing words with their nearest shown word and its cosine."""
    from nodes.embedding.embedder import get_embedder

    embedder = get_embedder()
    rows = []
    for dump in dumps:
        runs = json.loads(dump.read_text(encoding="utf-8"))
        for answer in runs[list(runs)[-1]]:
            words = sorted({w.lower() for f in answer.get("fragments") or [] for w in WORD.findall(f["text"])})
            if not answer.get("unknown") or not answer.get("gate_near") or not words:
                continue
            shown = unit(embedder.embed_documents(words))
            best = []
            for missing in answer["unknown"]:
                similarity = shown @ unit(embedder.embed_documents([missing.lower()]))[0]
                best.append((missing, words[int(np.argmax(similarity))], float(np.max(similarity))))
            verdict = answer["verdict"]
            rows.append({"id": answer["id"], "answerable": verdict["answerable"], "best": best,
                         "refusal": bool(verdict.get("refusal_with_answer"))})
            print(answer["id"], "answerable" if verdict["answerable"] else "silent",
                  ", ".join(f"{m} → {w} {s:.3f}" for m, w, s in best), flush=True)
    return rows


def report(rows: list[dict[str, Any]], lines: list[float]) -> None:
    answerable = [r for r in rows if r["answerable"]]
    silent = [r for r in rows if not r["answerable"]]
    print(f"\n| line | answerable opened (of {len(answerable)}) | of them refusals with the answer shown "
          f"| silent opened (of {len(silent)}) |\n|---|---|---|---|")
    for line in lines:
        answers, silents = opened(answerable, line), opened(silent, line)
        print(f"| {line:.2f} | {len(answers)} | {sum(r['refusal'] for r in answers)} "
              f"| {len(silents)} {' '.join(r['id'] for r in silents)} |")


def opened(group: list[dict[str, Any]], line: float) -> list[dict[str, Any]]:
    """The questions every missing word of which has a shown neighbour at or above `line`."""
    return [r for r in group if all(score >= line for *_, score in r["best"])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dumps", nargs="+", type=Path)
    parser.add_argument("--lines", default="0.82,0.84,0.86,0.88")
    args = parser.parse_args()
    print(describe_cpu(), flush=True)
    report(nearest(args.dumps), [float(x) for x in args.lines.split(",")])


if __name__ == "__main__":
    main()
