"""Does the user's base answer the question? Signals measured on questions it answers and on ones it does not.

Run: .venv/bin/python -m bench.answerability [--sets texlive-dev,gimp-dev] [--judge] [--dump probes.json]
     .venv/bin/python -m bench.answerability --load probes.json   # the report again, no search
     .venv/bin/python -m bench.answerability --load probes.json --extract   # the fallback's lead, no search

The local model's gate (nodes/retrieval/search_gate.py) decides whether the model answers from the
fragments. Its first score, the best fragment's cosine distance, was chosen against *other sets'*
questions and small talk; against questions on the same topic that the documents do not answer
(the silent sets beside metapost, doublecmd, texlive-dev and gimp-dev) it hardly separates. Here
every answerable and every silent question of a set is searched in that set's own store with the
production `rag-db-query`, and each candidate signal is computed from what the search returned
(and, for the corpus signals, the user's stored chunks):

* ``distance`` — minus the best cosine distance (the current gate);
* ``overlap`` — the largest share of the question's content lemmas in one fragment;
* ``sentence`` — the largest rarity-weighted share of the question's lemmas in one sentence of
  the shown fragments (the answer check's test for overruling a refusal);
* ``unknown`` — minus the share of the question's content lemmas that occur in no chunk of the
  user's base at all (a feature the documents never name: «SVG», «Homebrew», «нейросеть»);
* ``unknown-top`` — the same over the retrieved fragments only (no corpus statistics);
* ``things`` — minus the number of things (nouns, Latin tokens) the question names that no chunk
  holds, looked up as the gate looks them up (nodes/retrieval/base_vocabulary.py, in Postgres);
* ``agree`` — how many of the shown fragments hold at least half of the question's lemmas;
* ``judge`` (with ``--judge``) — the local model's own yes/no, asked after the fragments the
  answer prompt shows it (the prompt's beginning is the answer's, so the server's prefix cache
  serves the answer after it): 1 for «да», 0 for «нет»;
* combinations (``distance+unknown`` …), printed with their weights.

After the gate's table, ``pairs``: questions the gate passes or puts near that hold a word pair
(`named_pairs`: a noun with a genitive noun, an adjective with its noun) no chunk holds together,
looked up three ways (adjacent, within PAIR_WINDOW words, one chunk); measured, not adopted
(bench/README.md).

Printed per set and over all: ROC AUC of each signal (answerable vs silent), the range of each
group, and for a threshold chosen on the named development sets the pass rates of both groups.
"""

from __future__ import annotations

from grove.core.settings import get_settings
import argparse
import json
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from bench.eval_stores import EvalSet, Judge, Question, stored_chunks, stores

if TYPE_CHECKING:
    from nodes.retrieval.retrieve import Fragment


@dataclass
class Probe:
    set: str
    id: str
    question: str
    answerable: bool
    distances: list[float]
    texts: list[str]  # the retrieved fragments, in rank order
    holds: list[bool]  # which of them hold a needle (answerable questions)
    unknown: float  # share of the question's lemmas in no chunk of the base
    things: list[str] = field(default_factory=list)  # named things no chunk holds (the gate's lookup)
    # the question's word pairs (`base_vocabulary.named_pairs`) whose words the base holds, each with
    # whether one chunk holds them adjacent, within PAIR_WINDOW words in either order, anywhere
    pairs: dict[str, list[bool]] = field(default_factory=dict)
    judge: float | None = None
    signals: dict[str, float] = field(default_factory=dict)

    def fragments(self) -> list[Fragment]:
        """The retrieved fragments again, as the production gate and prompts take them."""
        from nodes.retrieval.retrieve import Fragment

        return [Fragment(chunk_id=n, document_id=0, text=t, source_type="file", source_identifier="doc", distance=d)
                for n, (t, d) in enumerate(zip(self.texts, self.distances), 1)]


def corpus_terms(evalset: EvalSet) -> Counter[str]:
    """In how many of the user's chunks each content lemma occurs."""
    from nodes.retrieval.lexical import term_set

    counts: Counter[str] = Counter()
    for chunk in stored_chunks(evalset, evalset.owner):
        counts.update(term_set(chunk.text))
    return counts


def search(evalset: EvalSet, judge: Judge, question: Question, df: Counter[str]) -> Probe:
    from flows.rag_query import rag_db_query
    from nodes.retrieval.base_vocabulary import unknown_things
    from nodes.retrieval.lexical import term_set

    fragments = rag_db_query(question.text, evalset.owner)
    wanted = term_set(question.text)
    unknown = sum(1 for t in wanted if not df.get(t)) / len(wanted) if wanted else 0.0
    things = unknown_things.fn(question.text, evalset.owner)
    return Probe(evalset.name, question.id, question.text, question.answerable,
                 [f.distance for f in fragments], [f.text for f in fragments],
                 [judge.holds(question, f.text, f.source_identifier) for f in fragments], unknown,
                 things=things, pairs=pairs_held(question.text, evalset.owner, things))


_PAIR_CYRILLIC = re.compile(r"[а-яё]", re.IGNORECASE)
_PAIR_WORD = re.compile(r"[а-яё]+(?:-[а-яё]+)*|[^\sа-яё]+", re.IGNORECASE)


def named_pairs(question: str) -> list[str]:
    """Two neighbouring words of the question that name one thing together, as written: a noun with a
    noun in the genitive after it («поле направлений», «цвет фона») or an adjective with the noun it
    agrees with («боковая панель»). A base can hold both words and never the thing: a handbook that
    speaks of a «поле» and of «направления» has no «поле направлений» to answer about."""
    from nodes.retrieval.base_vocabulary import _SET_PHRASES
    from nodes.retrieval.lexical import _morph, term

    tokens = _PAIR_WORD.findall(_SET_PHRASES.sub(" , ", question))
    found: list[str] = []
    for first, second in zip(tokens, tokens[1:]):
        if not (_PAIR_CYRILLIC.match(first) and _PAIR_CYRILLIC.match(second)) or not term(first) or not term(second):
            continue
        heads, tails = _morph().parse(first.lower()), _morph().parse(second.lower())
        kind = heads[0].tag.POS
        if tails[0].tag.POS != "NOUN" or kind not in ("NOUN", "ADJF") or "Apro" in heads[0].tag:
            continue
        tails = [t.tag for t in tails if t.tag.POS == "NOUN"]
        if kind == "NOUN":
            joined = any(t.case == "gent" for t in tails)
        else:  # an adjective agrees with its noun in case (any of the readings of either word)
            joined = any(h.tag.POS == "ADJF" and h.tag.case == t.case for h in heads for t in tails)
        if joined:
            pair = f"{first} {second}"
            if pair.lower() not in {p.lower() for p in found}:
                found.append(pair)
    return found


def _pair_query(within: int | None) -> str:
    """The tsquery that finds a pair's two words (`a`, `b`) in one chunk: at most `within` words apart
    in either order, or anywhere in it (None)."""
    if within is None:
        return "(q.a && q.b)"
    apart = [f"tsquery_phrase(q.{x}, q.{y}, {d})" for d in range(1, within + 1) for x, y in (("a", "b"), ("b", "a"))]
    return "(" + " || ".join(apart) + ")"


def pairs_found(conn: Any, owner_id: int, pairs: list[str], within: int | None) -> set[str]:
    """The pairs some active chunk of the user's holds as `_pair_query(within)` finds them."""
    if not pairs:
        return set()
    sql = f"""
    select p.pair from unnest(%(pairs)s::text[]) as p(pair)
     cross join lateral (select plainto_tsquery('russian', split_part(p.pair, ' ', 1)) as a,
                                plainto_tsquery('russian', split_part(p.pair, ' ', 2)) as b) q
     where numnode(q.a) = 0 or numnode(q.b) = 0 or exists (
           select 1 from document_chunks c
            where c.owner_id = %(owner)s and c.is_active and c.fts_russian @@ {_pair_query(within)})
    """
    return {r["pair"] for r in conn.execute(sql, {"owner": owner_id, "pairs": pairs})}


PAIR_WINDOW = 3
PAIR_WAYS = ("adjacent", f"within {PAIR_WINDOW}", "one chunk")


def pairs_held(question: str, owner: int, things: list[str]) -> dict[str, list[bool]]:
    """Each word pair of the question whose words the base holds, looked up the three ways of PAIR_WAYS."""
    from grove.store.db import transaction

    absent = {t.lower() for t in things}
    pairs = [p for p in named_pairs(question) if not absent & set(p.lower().split())]
    with transaction() as conn:
        found = [pairs_found(conn, owner, pairs, within) for within in (1, PAIR_WINDOW, None)]
    return {p: [p in way for way in found] for p in pairs}


def pair_table(probes: list[Probe], outcome: Callable[[Probe], str]) -> None:
    """Questions with a pair no chunk holds (each way of PAIR_WAYS), among those the gate passes or
    puts in the near band today: answerable ones it would shut (a loss), silent ones (a gain)."""
    print("\nWord pairs no chunk holds, among questions the gate passes / puts near (answerable lost, silent caught):\n")
    print("| way | answerable passed | of them with an absent pair | silent passed | of them caught | answerable near | caught | silent near | caught |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, way in enumerate(PAIR_WAYS):
        cells = []
        for what in ("passed", "near"):
            for answerable in (True, False):
                group = [p for p in probes if p.answerable == answerable and outcome(p) == what]
                hit = [p for p in group if any(not held[n] for held in p.pairs.values())]
                cells += [str(len(group)), f"{len(hit)} " + " ".join(p.id for p in hit[:12])]
        print(f"| {way} | " + " | ".join(cells) + " |")


def signals(probe: Probe, shown: int) -> dict[str, float]:
    """Every candidate signal of one probe (higher: more likely answerable)."""
    from nodes.retrieval.lexical import Weights, sentences, share_found, term_set

    if not probe.texts:
        return {}
    wanted = term_set(probe.question)
    fragments = [term_set(t) for t in probe.texts]
    parts = [term_set(s.text) for t in probe.texts[:shown] for s in sentences(t)]
    weights = Weights(parts)
    found_any = frozenset().union(*fragments)
    values = {
        "distance": -min(probe.distances),
        "overlap": max(share_found(wanted, f) for f in fragments),
        "sentence": max((weights.coverage(wanted, p) for p in parts), default=0.0),
        "unknown": -probe.unknown,
        "unknown-top": -(1 - share_found(wanted, found_any)) if wanted else 0.0,
        "agree": float(sum(share_found(wanted, f) >= 0.5 for f in fragments[:shown])),
        "things": -float(len(probe.things)),
    }
    if probe.judge is not None:
        values["judge"] = probe.judge
    return values


# --------------------------------------------------------------------------- the model's own yes/no

JUDGE_ASK = ("Есть ли в этих фрагментах прямой ответ на вопрос «{question}»? Ответь одним словом: да или нет.")
PASSAGE_SYSTEM = "Ты проверяешь, отвечает ли отрывок из документа на вопрос пользователя. Отвечай одним словом: да или нет."
PASSAGE_ASK = "Отрывок:\n{passages}\n\nВопрос: {question}\n\nЕсть ли в отрывке прямой ответ на этот вопрос? Ответь да или нет."


def judged(probe: Probe, shown: int, url: str, how: str) -> float:
    """1.0 when the local model says the fragments (or the passages chosen from them) answer the question."""
    import httpx

    from nodes.answering.chat_prompt import local_system_prompt
    from nodes.answering.llm import chatml
    from nodes.answering.quote import select_quote
    from nodes.answering.turn_policy import prepare_turn

    if how == "passages":
        quotes = select_quote(probe.question, probe.texts[:shown])
        passages = "\n".join(f"«{q.text}»" for q in quotes)
        messages = [{"role": "system", "content": PASSAGE_SYSTEM},
                    {"role": "user", "content": PASSAGE_ASK.format(passages=passages, question=probe.question)}]
    else:
        fragments = probe.fragments()[:shown]
        system = local_system_prompt(prepare_turn(probe.question, [], get_settings()), fragments,
                                     get_settings().local_prompt_style)
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": JUDGE_ASK.format(question=probe.question)}]
    body = httpx.post(f"{url}/completions", json={"prompt": chatml(messages), "max_tokens": 3, "temperature": 0,
                                                  "stop": ["<|im_end|>"]}, timeout=600).json()
    said = body["choices"][0]["text"].strip().lower()
    return 1.0 if said.startswith("да") else 0.0


# --------------------------------------------------------------------------- report


def auc(pos: list[float], neg: list[float]) -> float:
    if not pos or not neg:
        return float("nan")
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))


COMBOS: dict[str, dict[str, float]] = {
    "distance+things": {"distance": 1.0, "things": 1.0},  # the gate: no unknown thing, then the distance
    "distance+unknown": {"distance": 1.0, "unknown": 0.5},
    "distance+unknown×1": {"distance": 1.0, "unknown": 1.0},
    "distance+sentence": {"distance": 1.0, "sentence": 0.25},
    "distance+unknown+sentence": {"distance": 1.0, "unknown": 0.5, "sentence": 0.25},
    "distance+unknown-top": {"distance": 1.0, "unknown-top": 0.5},
}


def with_combos(probe: Probe) -> dict[str, float]:
    values = dict(probe.signals)
    for name, weights in COMBOS.items():
        if all(k in values for k in weights):
            values[name] = sum(w * values[k] for k, w in weights.items())
    return values


def report(probes: list[Probe], develop: set[str]) -> None:
    names = sorted({s for p in probes for s in with_combos(p)}, key=lambda s: (s not in Probe.__annotations__, s))
    sets = list(dict.fromkeys(p.set for p in probes))
    print("\nROC AUC, answerable against silent questions (1.0: every answerable scores above every silent):\n")
    print("| signal | " + " | ".join(sets) + " | all | answerable p10–p50–p90 | silent p10–p50–p90 |")
    print("|---|" + "---|" * len(sets) + "---|---|---|")

    def q(values: list[float]) -> str:
        if not values:
            return "—"
        s = sorted(values)
        return "–".join(f"{s[int(f * (len(s) - 1))]:.2f}" for f in (0.1, 0.5, 0.9))

    for name in names:
        cells = []
        for set_name in [*sets, None]:
            group = [p for p in probes if set_name is None or p.set == set_name]
            vals = [(with_combos(p).get(name), p.answerable) for p in group]
            pos = [v for v, a in vals if a and v is not None]
            neg = [v for v, a in vals if not a and v is not None]
            cells.append(f"{auc(pos, neg):.3f}")
        all_pos = [with_combos(p)[name] for p in probes if p.answerable and name in with_combos(p)]
        all_neg = [with_combos(p)[name] for p in probes if not p.answerable and name in with_combos(p)]
        print(f"| {name} | " + " | ".join(cells) + f" | {q(all_pos)} | {q(all_neg)} |")

    dev = [p for p in probes if p.set in develop] or probes
    print(f"\nThresholds chosen on {', '.join(sorted({p.set for p in dev}))}: the lowest that keeps "
          "≥ 90 % of the silent questions out, and the best balance; pass rates per set "
          "(answerable passing / silent passing):\n")
    print("| signal | rule | threshold | " + " | ".join(sets) + " |")
    print("|---|---|---|" + "---|" * len(sets))
    for name in names:
        candidates = sorted({v for p in dev if (v := with_combos(p).get(name)) is not None})
        if not candidates:
            continue

        def rates(group: list[Probe], t: float, name: str = name) -> tuple[float, float]:
            pos = [p for p in group if p.answerable]
            neg = [p for p in group if not p.answerable]
            passing = [p for p in group if with_combos(p).get(name, float("-inf")) >= t]
            return (sum(p.answerable for p in passing) / max(len(pos), 1),
                    sum(not p.answerable for p in passing) / max(len(neg), 1))

        strict = min((t for t in candidates if rates(dev, t)[1] <= 0.10), default=candidates[-1])
        balanced = max(candidates, key=lambda t: rates(dev, t)[0] - rates(dev, t)[1])
        for rule, t in (("silent ≤ 10 %", strict), ("balance", balanced)):
            cells = []
            for set_name in sets:
                pos_rate, neg_rate = rates([p for p in probes if p.set == set_name], t)
                cells.append(f"{pos_rate:.2f} / {neg_rate:.2f}")
            print(f"| {name} | {rule} | {t:.3f} | " + " | ".join(cells) + " |")


def gate_table(probes: list[Probe], threshold: float, edge: float) -> None:
    """The gate as configured (nodes/retrieval/search_gate.py `decide`): passes with no unknown thing
    (everyday words excepted beside a fragment holding most of the question) and the best distance
    within the threshold; near within the edge; shut beyond it."""
    print(f"\nThe gate: passes with no unknown thing and distance ≤ {threshold}; near band to {edge}. "
          "Share of each group passing / near / shut:\n")
    print("| set | answerable: passed | near | shut | passed with the answer shown | silent: passed | near | shut |")
    print("|---|---|---|---|---|---|---|---|")

    from nodes.retrieval.search_gate import decide

    def outcome(p: Probe) -> str:
        gate = decide(p.question, p.question, p.fragments(), settings=get_settings(), score_name="distance", threshold=threshold, near=edge,
                      unknown=p.things)
        return "passed" if gate.passed else "near" if gate.near else "shut"

    for set_name in [*dict.fromkeys(p.set for p in probes), "all"]:
        group = [p for p in probes if set_name == "all" or p.set == set_name]
        yes = [p for p in group if p.answerable]
        no = [p for p in group if not p.answerable]

        def rate(found: list[Probe], what: str) -> str:
            return f"{sum(outcome(p) == what for p in found) / len(found):.2f}" if found else "—"

        held = f"{sum(outcome(p) == 'passed' and any(p.holds[:4]) for p in yes) / len(yes):.2f}" if yes else "—"
        print(f"| {set_name} | {rate(yes, 'passed')} | {rate(yes, 'near')} | {rate(yes, 'shut')} | {held} | "
              f"{rate(no, 'passed')} | {rate(no, 'near')} | {rate(no, 'shut')} |")
    pair_table(probes, outcome)


def extract_table(probes: list[Probe], shown: int) -> None:
    """The extractive fallback's lead over every probe, as if its draft had failed: the quoted passages
    (nodes/answering/answer_check.py `extractive_answer`) under «В ваших документах…» when a quoted
    sentence covers the question, else under the nearest lead; whether they hold the answer (the
    answer_eval fact rule). All questions, and those the gate (replayed with the current settings) passes."""
    from bench.answer_eval import has_fact
    from bench.eval_stores import load_sets
    from nodes.answering.answer_check import extractive_answer
    from nodes.retrieval.search_gate import decide

    names = sorted({p.set for p in probes})
    questions = {(s.name, q.id): q for s in load_sets(names) for q in [*s.questions, *s.silent]}
    rows: list[tuple[str, bool, bool, bool, bool]] = []  # set, answerable, passed, covers, holds the fact
    for probe in probes:
        gate = decide(probe.question, probe.question, probe.fragments(), settings=get_settings(), unknown=probe.things)
        extract = extractive_answer(probe.question, probe.texts[:shown])
        question = questions[(probe.set, probe.id)]
        holds = bool(extract.text) and question.answerable and has_fact(extract.text, question)
        rows.append((probe.set, probe.answerable, gate.passed, extract.covers, holds))
    print("\nThe extractive fallback's lead: silent questions under the documents' lead / under the nearest "
          "lead; answerable ones by whether the passages hold the answer:\n")
    print("| set | questions | silent: documents' lead | nearest | answer in the passages: documents' lead | "
          "nearest | no answer in them: documents' lead | nearest |")
    print("|---|---|---|---|---|---|---|---|")
    for set_name in [*names, "all"]:
        for scope in ("all", "gate passed"):
            group = [r for r in rows if set_name in ("all", r[0]) and (scope == "all" or r[2])]
            silent = [r for r in group if not r[1]]
            holding = [r for r in group if r[1] and r[4]]
            missing = [r for r in group if r[1] and not r[4]]
            print(f"| {set_name} | {scope} | {sum(r[3] for r in silent)} | {sum(not r[3] for r in silent)} | "
                  f"{sum(r[3] for r in holding)} | {sum(not r[3] for r in holding)} | "
                  f"{sum(r[3] for r in missing)} | {sum(not r[3] for r in missing)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="texlive-dev,gimp-dev")
    parser.add_argument("--develop", default="texlive-dev,gimp-dev",
                        help="sets the thresholds are chosen on (the others are the check)")
    parser.add_argument("--judge", choices=("fragments", "passages"), default=None,
                        help="ask the local model's yes/no too over the shown fragments or the chosen passages "
                             "(starts its server; with --load, judges the dump's probes)")
    parser.add_argument("--dump", type=Path, default=None)
    parser.add_argument("--load", type=Path, default=None, help="report a dump again, no search")
    parser.add_argument("--only", default=None, help="judge only these question ids (comma-separated)")
    parser.add_argument("--extract", action="store_true",
                        help="with --load: the extractive fallback's lead over the probes (`extract_table`)")
    args = parser.parse_args()
    develop = {s for s in args.develop.split(",") if s}
    if args.load:
        loaded = [Probe(**p) for p in json.loads(args.load.read_text())]
        if args.judge:
            only = set(args.only.split(",")) if args.only else None
            judge_all([p for p in loaded if only is None or p.id in only], 4, args.judge)
            for probe in loaded:
                probe.signals = signals(probe, 4)
            if args.dump:
                args.dump.write_text(json.dumps([asdict(p) for p in loaded], ensure_ascii=False))
        if args.extract:
            from grove.core.settings import get_settings

            extract_table(loaded, get_settings().local_answer_fragments)
            return
        report(loaded, develop)
        from grove.core.settings import get_settings

        gate_table(loaded, get_settings().search_gate_threshold, get_settings().search_gate_near)
        return

    from grove.core.settings import get_settings

    names = [n for n in args.sets.split(",") if n]
    probes: list[Probe] = []
    with stores(names) as sets:
        shown = get_settings().local_answer_fragments
        started = time.perf_counter()
        for evalset in sets:
            df = corpus_terms(evalset)
            judge = Judge(evalset)
            for question in [*evalset.questions, *evalset.silent]:
                probes.append(search(evalset, judge, question, df))
            print(f"{evalset.name}: {len(evalset.questions)} + {len(evalset.silent)} searched "
                  f"({time.perf_counter() - started:.0f} s so far)", flush=True)
        if args.judge:
            judge_all(probes, shown, args.judge)
    for probe in probes:
        probe.signals = signals(probe, shown)
    if args.dump:
        args.dump.write_text(json.dumps([asdict(p) for p in probes], ensure_ascii=False))
    report(probes, develop)
    settings = get_settings()
    gate_table(probes, settings.search_gate_threshold, settings.search_gate_near)


def judge_all(probes: list[Probe], shown: int, how: str) -> None:
    """The local model's yes/no for every probe, on a server started for it."""
    import tempfile

    from grove.core.settings import get_settings
    from grove.infra.llm_server import LocalLLMServer
    from tests.support.ports import free_port

    settings = get_settings()
    work = Path(tempfile.mkdtemp(prefix="grove-answerability-"))
    server = LocalLLMServer(model_path=Path(settings.model_path(settings.local_llm_model)), port=free_port(),
                            log_file=work / "llm.log", chat_format=settings.local_llm_chat_format)
    url = server.start()
    started = time.perf_counter()
    try:
        for n, probe in enumerate(probes, 1):
            if probe.texts:
                probe.judge = judged(probe, shown, url, how)
            if n % 10 == 0:
                print(f"judged {n}/{len(probes)} ({time.perf_counter() - started:.0f} s)", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
