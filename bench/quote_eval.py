"""Quotes from the user's documents: does the passage grove quotes hold the answer?

Run: .venv/bin/python -m bench.quote_eval [--sets texlive,gimp,libreoffice] [--probes probes.json]
     .venv/bin/python -m bench.quote_eval --answers answers.json [--config after]

With the local model a grounded answer ends with a quote from the best fragment (and a draft
that fails the answer checks is replaced by quotes alone), so which sentences are quoted
decides whether the user sees the fact. Measured here without any model call: every question
of the needle sets is searched as the local chat path searches it (the production
`rag-db-query` flow, then the search gate), and each quote selector in `nodes/answering/quote.py`
`SELECTORS` picks its passage from the fragments the local model would be shown. A quote
counts when

* fact — it holds a needle, or ≥ 60 % of the content lemmas of a needle that the question does
  not already contain (the rule of bench/answer_eval.py);
* cited — the fragment it is taken from holds a needle (so the source block names it).

Questions are split as bench/answer_eval.py splits them: that bench's 36 (every 4th of the TeX
Live and GIMP sets) are reported on their own and never used to choose a selector; the choice
is made on the rest ("development": the other TeX Live and GIMP questions and all of
LibreOffice). `--probes` caches the searches in a file, so selectors can be compared again
without the stores.

`--answers` reads a dump of bench/answer_eval.py instead: the fragments each answer was given
and the answer itself, so selectors that use the draft's words (`answer-backed`) are measured
on real local-model drafts. The answer's text up to its quote or source block is the draft.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from bench.eval_stores import Judge, Question, load_sets, stores

EVAL_EVERY = 4  # bench/answer_eval.py's rule
EVAL_SETS = ("texlive", "gimp")


def held_out(set_name: str, position: int) -> bool:
    """The questions bench/answer_eval.py asks: never used to choose here (set D, ``writer``, is
    held out whole)."""
    return set_name == "writer" or (set_name in EVAL_SETS and position % EVAL_EVERY == 0)


def collect(names: list[str]) -> list[dict[str, Any]]:
    """Each question searched as the local chat path does: query, rag-db-query, gate, fragments shown."""
    from flows.rag_query import rag_db_query
    from grove.core.settings import get_settings
    from nodes.retrieval.search_gate import decide, search_query

    probes: list[dict[str, Any]] = []
    with stores(names) as sets:
        shown = get_settings().local_answer_fragments
        for evalset in sets:
            judge = Judge(evalset)
            started = time.perf_counter()
            for position, question in enumerate(evalset.questions):
                query = search_query(question.text, [], get_settings().search_followup_words)
                gate = decide(query, query, rag_db_query(query, evalset.owner), settings=get_settings())
                fragments = gate.fragments if gate.passed else []
                probes.append({
                    "set": evalset.name, "id": question.id, "held_out": held_out(evalset.name, position),
                    "question": question.text, "needles": question.needles, "answer": None,
                    "shown": min(shown, len(fragments)),
                    "fragments": [{"text": f.text, "holds": judge.holds(question, f.text, f.source_identifier)}
                                  for f in fragments]})
            print(f"{evalset.name}: {len(evalset.questions)} searched in {time.perf_counter() - started:.0f} s",
                  flush=True)
    return probes


def from_answers(path: Path, config: str) -> list[dict[str, Any]]:
    """Probes from an answer_eval dump: the fragments shown and the draft, for one configuration."""
    from nodes.answering.quote import QUOTE_LEAD

    dumped = json.loads(path.read_text())[config]
    sets = {s.name: s for s in load_sets((*EVAL_SETS, "writer"))}
    where = {q.id: (s, position, q) for s in sets.values() for position, q in enumerate(s.questions)}
    probes = []
    for answer in dumped:
        evalset, position, question = where[answer["id"]]
        judge = Judge(evalset)
        draft = answer["text"].partition("Информация взята из:")[0].partition(QUOTE_LEAD)[0].strip()
        probes.append({
            "set": evalset.name, "id": question.id, "held_out": held_out(evalset.name, position),
            "question": question.text, "needles": question.needles, "answer": draft,
            "fragments": [{"text": f["text"], "holds": judge.holds(question, f["text"], f["source_identifier"])}
                          for f in answer["fragments"]]})
    return probes


def from_dumps(items: list[str]) -> list[dict[str, Any]]:
    """Probes from answer_eval dumps given as NAMES=DUMP (the sets a dump was run on): every answerable
    question with the fragments the local model was shown (its first configuration's), no draft — the
    quote as it is shown while the model writes and as the passages are judged."""
    from grove.core.settings import get_settings

    shown = get_settings().local_answer_fragments
    probes = []
    for item in items:
        names, _, dump = item.partition("=")
        sets = load_sets(names.split(","))
        where = {q.id: (s, Judge(s), q) for s in sets for q in s.questions}
        runs = json.loads(Path(dump).read_text(encoding="utf-8"))
        for answer in runs[next(iter(runs))]:
            if answer["id"] not in where:
                continue  # a question the documents do not answer
            evalset, judge, question = where[answer["id"]]
            probes.append({
                "set": evalset.name, "id": question.id, "held_out": False, "question": question.text,
                "needles": question.needles, "answer": None, "shown": min(shown, len(answer["fragments"])),
                "fragments": [{"text": f["text"], "holds": judge.holds(question, f["text"], f["source_identifier"])}
                              for f in answer["fragments"]]})
    return probes


def score(probes: list[dict[str, Any]], selector: str, considered: int | None = None) -> list[dict[str, Any]]:
    """Each probe's quote by `selector`, chosen from the fragments the model is shown, or from the
    first `considered` of the retrieved ones."""
    from bench.answer_eval import has_fact
    from nodes.answering.quote import select_quote

    results = []
    for probe in probes:
        question = Question(probe["id"], probe["question"], needles=probe["needles"])
        fragments = probe["fragments"][:considered or probe.get("shown", len(probe["fragments"]))]
        started = time.perf_counter()
        quote = select_quote(probe["question"], [f["text"] for f in fragments], probe.get("answer"),
                             selector=selector)
        seconds = time.perf_counter() - started
        text = " ".join(q.text for q in quote)
        fact = bool(quote) and has_fact(text, question)
        first = bool(quote) and has_fact(quote[0].text, question)
        cited = any(fragments[q.fragment - 1]["holds"] for q in quote)
        results.append({"id": probe["id"], "held_out": probe["held_out"], "set": probe["set"], "fact": fact,
                        "cited": cited, "both": fact and cited, "first": first, "chars": len(text), "seconds": seconds,
                        "reachable": any(f["holds"] for f in fragments), "two": len(quote) > 1})
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="texlive,gimp,libreoffice")
    parser.add_argument("--probes", type=Path, default=None, help="read searches from / write them to this file")
    parser.add_argument("--answers", type=Path, default=None, help="an answer_eval dump: its fragments and drafts")
    parser.add_argument("--config", default="after", help="the dump's configuration to read")
    parser.add_argument("--dumps", nargs="*", default=None,
                        help="answer_eval dumps as NAMES=DUMP (kmail,gnote=/tmp/d.json): the fragments shown for each "
                             "answerable question, quoted without a draft; only those whose fragments hold the answer "
                             "are counted")
    parser.add_argument("--selectors", default=None, help="comma-separated (default: all in nodes/answering/quote.py)")
    parser.add_argument("--considered", default="",
                        help="comma-separated counts of retrieved fragments to choose from (default: those shown)")
    args = parser.parse_args()

    from grove.core.settings import get_settings
    from nodes.answering.quote import SELECTORS

    if args.dumps:
        probes = [p for p in from_dumps(args.dumps) if any(f["holds"] for f in p["fragments"][:p["shown"]])]
    elif args.answers:
        probes = from_answers(args.answers, args.config)
    elif args.probes and args.probes.exists():
        probes = json.loads(args.probes.read_text())
    else:
        load_sets(args.sets.split(","))  # a changed frozen set fails here, before any store is built
        probes = collect(args.sets.split(","))
        if args.probes:
            args.probes.write_text(json.dumps(probes, ensure_ascii=False))
    names = args.selectors.split(",") if args.selectors else list(SELECTORS)
    print(f"\n{len(probes)} questions; configured selector: {get_settings().quote_selector}\n")
    counts = [int(c) for c in args.considered.split(",") if c] or [None]
    print("| selector | fragments | part | n | reachable | fact | cited | fact and cited | fact in the first quote "
          "| two quotes | chars p50 | ms p50 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, considered in ((n, c) for n in names for c in counts):
        results = score(probes, name, considered)
        for part, chosen in (("development", [r for r in results if not r["held_out"]]),
                             ("answer_eval's 36", [r for r in results if r["held_out"]])):
            n = len(chosen)
            if not n:
                continue

            def rate(key: str, chosen: list[dict[str, Any]] = chosen) -> str:
                return f"{sum(r[key] for r in chosen) / len(chosen):.0%}"

            print(f"| {name} | {considered or 'shown'} | {part} | {n} | {rate('reachable')} | {rate('fact')} | {rate('cited')} | "
                  f"**{rate('both')}** | {rate('first')} | {rate('two')} | {statistics.median(r['chars'] for r in chosen):.0f} | "
                  f"{1000 * statistics.median(r['seconds'] for r in chosen):.0f} |", flush=True)


if __name__ == "__main__":
    main()
