"""Whether the passages answer: how well the local model's judgment separates, and where to put its threshold.

Run: .venv/bin/python -m bench.answer_judge kmail,gnote=DUMP.json [sysmonitor,rhythmbox=DUMP.json …]
     .venv/bin/python -m bench.answer_judge --shut kolf,step,kwordquiz,kig

Reads `bench.answer_eval --dump` files (each with the sets it was run on, in order). For every
recorded question with fragments, the passages the answer would quote are chosen from those
fragments (`select_quote`), and the packaged local model is asked the judge's question about
them (`nodes.answering.answer_judge.answer_odds`, on a server of its own). A question is labelled
"answers" when it is answerable and a needle is in its passages (`bench.answer_eval.has_fact`),
"silent" when its set says the documents do not answer it, and "lacking" when it is answerable
but retrieval missed the passage. Printed per gate band (the gate as recorded: passed, near):
the odds of each label, and per threshold how many answering passages are kept and how many
silent questions refused, with the AUC of answers against silent.

`--shut NAMES`: no dump; the named sets' stores are built (bench/eval_stores.py), every question is
searched as a turn searches it (`rag_db_query`, the gate's `decide`), and the questions the gate
shuts (past the near band) are judged over the passages their answer would quote: the band where
the judgment decides whether the model drafts from them or answers from general knowledge. With
`--general`, so are the questions of bench/gate/general_ru.json that ask something (not a greeting or
thanks), in each store: labelled "general", the ones a general answer is for.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.cpu import describe_cpu

THRESHOLDS = (0.2, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)


def auc(positive: list[float], negative: list[float]) -> float | None:
    """The chance that an answering question's odds exceed a silent one's (ties count half)."""
    if not positive or not negative:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / (len(positive) * len(negative))


def judged(dumps: list[tuple[list[str], Path]], config: str | None = None) -> list[dict[str, Any]]:
    from bench.answer_eval import has_fact
    from grove.core.settings import get_settings
    from bench.eval_stores import load_sets
    from nodes.answering.answer_judge import answer_odds
    from nodes.answering.quote import select_quote

    rows = []
    for names, dump in dumps:
        questions = {q.id: q for s in load_sets(names) for q in [*s.questions, *s.silent]}
        runs = json.loads(dump.read_text(encoding="utf-8"))
        for answers in [runs[config or next(iter(runs))]]:  # one configuration's fragments, not each once per run
            for answer in answers:
                question = questions.get(answer["id"])
                texts = [f["text"] for f in answer.get("fragments") or []]
                if question is None or not texts:
                    continue
                passages = [q.text for q in select_quote(question.text, texts)]
                if not passages:
                    continue
                label = ("silent" if not question.answerable
                         else "answers" if has_fact(" ".join(passages), question) else "lacking")
                band = "passed" if answer.get("gate_passed") else "near" if answer.get("gate_near") else "shut"
                odds = answer_odds(question.text, passages, get_settings())
                rows.append({"id": answer["id"], "label": label, "band": band, "odds": odds})
                print(f"{answer['id']}\t{band}\t{label}\t{odds if odds is None else round(odds, 3)}", flush=True)
    return rows


GENERAL = Path(__file__).parent / "gate" / "general_ru.json"


def shut(names: list[str], general: bool = False) -> list[dict[str, Any]]:
    """The questions the gate shuts in the named sets' stores, judged (see the module's note)."""
    from bench.answer_eval import has_fact
    from bench.eval_stores import stores
    from flows.rag_query import rag_db_query
    from grove.core.settings import get_settings
    from nodes.answering.answer_judge import answer_odds
    from nodes.answering.context_signals import asks
    from nodes.answering.quote import select_quote
    from nodes.retrieval.base_vocabulary import unknown_things
    from nodes.retrieval.search_gate import decide, search_query

    rows = []
    with stores(names) as sets, local_model():  # the stores first: building them reads the settings afresh
        everyday = [q for q in json.loads(GENERAL.read_text(encoding="utf-8"))["questions"] if asks(q)] if general else []
        for evalset in sets:
            asked = [(q.id, q.text, q) for q in [*evalset.questions, *evalset.silent]]
            asked += [(f"{evalset.name}:general{n:02d}", text, None) for n, text in enumerate(everyday, 1)]
            for key, text, question in asked:
                settings = get_settings()
                query = search_query(text, [], settings.search_followup_words)
                found = rag_db_query(query, evalset.owner)
                gate = decide(query, query, found, settings=settings)
                if gate.passed or gate.near or not found:
                    continue
                shown = [f.text for f in found[:settings.local_answer_fragments]]
                passages = [q.text for q in select_quote(text, shown)]
                if not passages:
                    continue
                label = ("general" if question is None else "silent" if not question.answerable
                         else "answers" if has_fact(" ".join(passages), question) else "lacking")
                odds = answer_odds(text, passages, settings)
                absent = unknown_things(query, evalset.owner)
                rows.append({"id": key, "label": label, "band": "shut", "odds": odds, "unknown": absent})
                print(f"{key}\tshut\t{label}\t{odds if odds is None else round(odds, 3)}\t{', '.join(absent)}",
                      flush=True)
    return rows


def report(rows: list[dict[str, Any]]) -> None:
    shut_known = [{**r, "band": "shut, naming nothing the base lacks"} for r in rows
                  if r["band"] == "shut" and "unknown" in r and not r["unknown"]]
    rows = [*rows, *shut_known]
    for band in ("passed", "near", "shut", "shut, naming nothing the base lacks"):
        inside = [r for r in rows if r["band"] == band and r["odds"] is not None]
        if not inside:
            continue
        odds = {label: sorted(r["odds"] for r in inside if r["label"] == label)
                for label in ("answers", "silent", "lacking", "general")}
        area = auc(odds["answers"], odds["silent"])
        print(f"\n### gate {band}: {len(odds['answers'])} answering, {len(odds['silent'])} silent, "
              f"{len(odds['lacking'])} lacking the passage; AUC answers/silent "
              f"{'—' if area is None else f'{area:.3f}'}\n")
        for label, values in odds.items():
            print(f"- {label}: {', '.join(f'{v:.2f}' for v in values) or '—'}")
        print("\n| threshold | answering kept | silent refused | lacking refused | general below |\n|---|---|---|---|---|")
        for threshold in THRESHOLDS:
            kept = sum(v >= threshold for v in odds["answers"])
            refused = sum(v < threshold for v in odds["silent"])
            lacking = sum(v < threshold for v in odds["lacking"])
            general = sum(v < threshold for v in odds["general"])
            print(f"| {threshold:.2f} | {kept}/{len(odds['answers'])} | {refused}/{len(odds['silent'])} "
                  f"| {lacking}/{len(odds['lacking'])} | {general}/{len(odds['general'])} |")


@contextmanager
def local_model() -> Iterator[None]:
    """The packaged local model on a server of its own, named in the settings for the block."""
    from grove.core.settings import configure, get_settings
    from grove.infra.llm_server import LocalLLMServer
    from tests.support.ports import free_port

    settings = get_settings()
    server = LocalLLMServer(model_path=Path(settings.model_path(settings.local_llm_model)), port=free_port(),
                            log_file=Path(tempfile.mkdtemp(prefix="grove-answer-judge-")) / "llm.log")
    configure(local_llm_url=server.start(), llm_retries=0)
    try:
        yield
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("items", nargs="*", help="the sets a dump was run on and the dump, as NAMES=DUMP "
                        "(kmail,gnote=/tmp/dump.json)")
    parser.add_argument("--config", help="the dumps' configuration to read (default: each dump's first)")
    parser.add_argument("--shut", help="no dumps: judge the questions the gate shuts in these sets' stores")
    parser.add_argument("--general", action="store_true", help="with --shut: the general questions too, in each store")
    args = parser.parse_args()
    print(describe_cpu(), flush=True)
    if args.shut:
        report(shut(args.shut.split(","), args.general))
        return
    dumps = [(names.split(","), Path(dump)) for names, _, dump in (item.partition("=") for item in args.items)]
    with local_model():
        report(judged(dumps, args.config))


if __name__ == "__main__":
    main()
