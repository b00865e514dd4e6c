"""Calibrating the local model's search gate: how often it opens, and what the answer then has.

Run: .venv/bin/python -m bench.search_gate [--sets texlive,gimp,debian] [--with-distractors]

With the local model grove searches every question of a user who has documents and gives
the fragments to the model only when the gate passes (nodes/retrieval/search_gate.py). The gate should
open for questions the user's documents answer and stay shut for the rest. Measured here on
the project's Russian sets, each ingested through the production path (bench/eval_stores.py),
every question searched with the production `rag-db-query` flow:

* positives — each set's questions against its own store;
* negatives — the other sets' questions against that store, and bench/gate/general_ru.json
  (36 greetings, small talk and general-knowledge questions, written before any score was
  computed and frozen: its sha256 is checked below).

For each gate score (`GATE_SCORES`: the best fragment's cosine distance, the best share of the
question's lemmas in one fragment, and a blend) the bench prints its ROC AUC per store, then,
for every threshold of the configured score, per store: how often the gate opens for positives,
how often the fragments then shown to the model (the first `local_answer_fragments`) hold the
answer — the needle, or for the Debian set the answer's passage — and how often it opens for
each kind of negative. The threshold with the best mean of (positive pass rate − negative pass
rate) over the stores is marked; the chosen one is a setting (GROVE_SEARCH_GATE_THRESHOLD).

Sets are named as in bench/eval_stores.py (``--sets metapost,doublecmd`` too); the default is its
``DEFAULT_SET_NAMES``. The silent questions of metapost and doublecmd (``EvalSet.silent``) are not
probed here yet.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from bench.eval_stores import DEFAULT_SET_NAMES, SET_NAMES, EvalSet, Judge, Question, stores

GENERAL = Path(__file__).resolve().parent / "gate" / "general_ru.json"
GENERAL_SHA256 = "e584a57d0614a40316ab35b3815ed4973fa8394d7d07fe31aba2acaa78fd0f50"


@dataclass
class Probe:
    """One question searched in one store, with every gate score and whether the answer was found."""

    kind: str  # "positive" | "other sets" | "general"
    scores: dict[str, float]
    shown_holds: bool  # the first local_answer_fragments hold the answer (positives only)
    any_holds: bool  # any of the retrieved fragments does


def general_questions() -> list[Question]:
    raw = GENERAL.read_bytes()
    if hashlib.sha256(raw).hexdigest() != GENERAL_SHA256:
        raise SystemExit(f"{GENERAL} changed after it was frozen; write a new file instead")
    return [Question(f"G{n:03d}", text) for n, text in enumerate(json.loads(raw)["questions"], 1)]


def probe(store: EvalSet, judge: Judge, question: Question, kind: str, shown: int) -> Probe:
    from flows.rag_query import rag_db_query
    from nodes.retrieval.search_gate import GATE_SCORES

    fragments = rag_db_query(question.text, store.owner)
    if not fragments:
        return Probe(kind, {}, False, False)
    scores = {name: gate.score(question.text, fragments) for name, gate in GATE_SCORES.items()}
    if kind != "positive":
        return Probe(kind, scores, False, False)
    holds = [judge.holds(question, f.text, f.source_identifier) for f in fragments]
    return Probe(kind, scores, any(holds[:shown]), any(holds))


def auc(positives: list[float], negatives: list[float], higher_passes: bool) -> float:
    """Probability that a random positive scores on the passing side of a random negative (ties half)."""
    if not positives or not negatives:
        return float("nan")
    sign = 1 if higher_passes else -1
    wins = sum((sign * (p - n) > 0) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def passes(value: float | None, threshold: float, higher_passes: bool) -> bool:
    if value is None:
        return False
    return value >= threshold if higher_passes else value <= threshold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(DEFAULT_SET_NAMES), help=f"any of {', '.join(SET_NAMES)}")
    parser.add_argument("--with-distractors", action="store_true", help="Debian store with its man pages")
    parser.add_argument("--score", default=None, help="gate score to sweep (default: the setting)")
    parser.add_argument("--thresholds", default=None, help="from:to:step (default by score)")
    args = parser.parse_args()

    from grove.core.settings import get_settings

    names = [n for n in args.sets.split(",") if n]
    general = general_questions()
    with stores(names, args.with_distractors) as sets:
        settings = get_settings()
        shown = settings.local_answer_fragments
        score_name = args.score or settings.search_gate_score
        print(f"\nfirst stage / rerank as configured: reranker {settings.reranker}; "
              f"{settings.retrieval_top_k} fragments retrieved, {shown} shown to the local model\n", flush=True)
        probes: dict[str, list[Probe]] = {}
        started = time.perf_counter()
        for store in sets:
            judge = Judge(store)
            found = [probe(store, judge, q, "positive", shown) for q in store.questions]
            for other in sets:
                if other is not store:
                    found += [probe(store, judge, q, "other sets", shown) for q in other.questions]
            found += [probe(store, judge, q, "general", shown) for q in general]
            probes[store.name] = found
            print(f"{store.name}: {len(found)} searches ({time.perf_counter() - started:.0f} s so far)", flush=True)
        report(probes, score_name, args.thresholds)


def report(probes: dict[str, list[Probe]], score_name: str, thresholds: str | None) -> None:
    from nodes.retrieval.search_gate import GATE_SCORES

    print("\nROC AUC of each gate score, positives against all negatives of the store:\n")
    print("| score | " + " | ".join(probes) + " | best one threshold for all stores | mean (pos − neg) there | what |")
    print("|---|" + "---|" * len(probes) + "---|---|---|")
    for name, gate in GATE_SCORES.items():
        cells = []
        for found in probes.values():
            pos = [p.scores[name] for p in found if p.kind == "positive" and p.scores]
            neg = [p.scores[name] for p in found if p.kind != "positive" and p.scores]
            cells.append(f"{auc(pos, neg, gate.higher_passes):.3f}")
        values = sorted({round(p.scores[name], 3) for f in probes.values() for p in f if p.scores})
        best = max(values, key=lambda t: balance(probes, name, t))
        print(f"| {name} | " + " | ".join(cells) + f" | {best:g} | {balance(probes, name, best):.3f} | {gate.about} |")

    gate = GATE_SCORES[score_name]
    if thresholds:
        start, stop, step = (float(v) for v in thresholds.split(":"))
    else:
        start, stop, step = (0.1, 0.9, 0.05) if gate.higher_passes else (0.30, 0.70, 0.025)
    grid = [round(start + i * step, 4) for i in range(round((stop - start) / step) + 1)]
    print(f"\nGate `{score_name}` ({gate.about}), per store: positives passing / passing with the answer in "
          "the shown fragments / negatives (other sets, general) passing\n")
    print("| threshold | " + " | ".join(f"{s}: pos pass | pos pass+answer | neg other | neg general"
                                        for s in probes) + " | mean (pos − neg) |")
    print("|---|" + "---|" * len(probes) + "---|")
    best = max(grid, key=lambda t: balance(probes, score_name, t))
    for threshold in grid:
        cells = []
        for found in probes.values():
            pos = [p for p in found if p.kind == "positive"]
            ok = [p for p in pos if passes(p.scores.get(score_name), threshold, gate.higher_passes)]
            other = [p for p in found if p.kind == "other sets"]
            general = [p for p in found if p.kind == "general"]
            cells.append(f"{share(ok, pos)} | {share([p for p in ok if p.shown_holds], pos)} | "
                         f"{share([p for p in other if passes(p.scores.get(score_name), threshold, gate.higher_passes)], other)} | "
                         f"{share([p for p in general if passes(p.scores.get(score_name), threshold, gate.higher_passes)], general)}")
        mark = " ◀" if threshold == best else ""
        print(f"| {threshold:g}{mark} | " + " | ".join(cells) + f" | {balance(probes, score_name, threshold):.3f} |")
    print("\nWithout a gate (every search shown): answer in the shown fragments for "
          + ", ".join(f"{s} {share([p for p in f if p.kind == 'positive' and p.shown_holds], [p for p in f if p.kind == 'positive'])}"
                      f" (in any of the retrieved: {share([p for p in f if p.kind == 'positive' and p.any_holds], [p for p in f if p.kind == 'positive'])})"
                      for s, f in probes.items()))


def pass_rate(group: list[Probe], score_name: str, threshold: float, higher: bool) -> float:
    return sum(passes(p.scores.get(score_name), threshold, higher) for p in group) / len(group) if group else 0.0


def share(part: list[Probe], whole: list[Probe]) -> str:
    return f"{len(part) / len(whole):.2f}" if whole else "—"


def balance(probes: dict[str, list[Probe]], score_name: str, threshold: float) -> float:
    """Mean over stores of (positive pass rate − negative pass rate)."""
    from nodes.retrieval.search_gate import GATE_SCORES

    higher = GATE_SCORES[score_name].higher_passes
    values = []
    for found in probes.values():
        pos = [p for p in found if p.kind == "positive"]
        neg = [p for p in found if p.kind != "positive"]
        values.append(pass_rate(pos, score_name, threshold, higher) - pass_rate(neg, score_name, threshold, higher))
    return statistics.mean(values)


if __name__ == "__main__":
    main()
