"""Answers end to end with the offline default: does a user get the right fact, cited, readably?

Run: .venv/bin/python -m bench.answer_eval [--configs before,after,...] [--sets texlive,gimp] [--every 4] [--offset 0]
                                           [--dump answers.json] [--no-silent] [--only A003,GU15]

Questions — the rule, fixed before any answer was generated: from each needle set
(bench/sets/texlive_pdf_ru.json, bench/sets/gimp_html_ru.json) the questions at positions
0, k, 2k, … in the file's order (k = --every, 4 by default: A001, A005, …, A069 and B001,
B005, …, B069 — 36 questions). Set D (``--sets writer --every 1``: all 80 questions of
bench/sets/libreoffice_writer_html_ru.json) was written after the offline answer path was
designed on the first two sets and is asked whole: the held-out figure. The sets' documents are
ingested through the production path
into a fresh store (bench/eval_stores.py), one user per set, and every question is asked of
the production `chat` flow as that user, with the chat history cleared before each question,
against the real local model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama-cpp-python's
server, started here once for all configurations).

Configurations run side by side in one run, each in its own process (settings are read
once per process):

* ``before`` — the code of another git revision (``--before-ref``, default ``main``), exported
  with ``git archive``: the answer path as it is without this tree's changes;
* ``after`` — this tree with its default settings;
* the decoding and prompt variants in `CONFIGS` — this tree with some settings changed.

Each answer is judged on its own, independently of grove's answer checks:

* Russian — no CJK characters, and at least 3 Cyrillic words making up ≥ 40 % of the letters;
* fact — the answer contains a needle (case, ё and whitespace ignored), or ≥ 60 % of the content
  lemmas of a needle that the question itself does not already contain;
* cited — the source block names a fragment (source label: document, page) that holds a needle;
* no loop — no sentence of ≥ 4 words said twice, and ≥ 70 % distinct word 4-grams;
* short — at most `MAX_CHARS` characters before the source block.

"Correct and cited" needs all five. Also printed: seconds per answer, how often the gate
searched / passed, how often a draft was replaced by the fallback.

Sets E and F (``--sets metapost,doublecmd --every 1``: bench/sets/metapost_pdf_ru.json and
bench/sets/doublecmd_docx_ru.json, 40 questions each) were written for issue 37 on 2026-11-26,
before any answer over their documents existed, each with a silent set of 15 questions the
documents do not answer (``*_silent_ru.json``). A set's silent questions are asked whole, after
its answerable ones (``--no-silent`` leaves them out). The rules below were written with them,
before any answer:

A reply is split where the quoted passages begin (`split_reply`): the source block («Информация
взята из:») is cut off first; the passages begin at the first of «Из документа:», «В ваших
документах об этом сказано так:», «В базе знаний об этом сказано так:», «Ближе всего к вопросу …:»,
an HTML ``<blockquote …>`` or a line that is one long «…» quote. What comes before is the reply's
own words (HTML tags dropped); the lead that introduces the passages is their label.

Answerable questions, beside the five checks:

* own words — the key fact is said by the reply, not only shown in a quote. A set that gives its
  questions `facts` (short spans of the needles, written with the questions: «30 минут»,
  «Ctrl+Shift+M»; sets from AI on) is judged by them: the own words hold one of them, or each of its
  terms (lemmatised). A set without them: the fact check above on the own words alone;
* refusal with answer — the reply leads with a not-found phrase (its first sentence: «не нашёл»,
  «нет в документах», «в документах об этом не сказано», «нет информации», «не могу уверенно
  ответить», «прямого ответа …» — `leads_with_refusal`) while the reply or a passage it shows
  holds the answer (the fact check over everything before the source block).

Unanswerable questions (no needles; the five checks do not apply, and "correct and cited" and the
overall table leave them out):

* honest — the reply leads with a not-found phrase and presents no passage as the answer: any
  passages it shows are labelled as only the nearest ones («Ближе всего…», «ближайшие…», «похожие…»);
* invented — the reply states something as the answer (3 or more words of its own) without that
  lead;
* passage as answer — passages are shown under a label that presents them as the answer («Из
  документа:», «В ваших документах об этом сказано так:») or under none.

Printed per set: answerable — correct and cited, own words, refusal with answer; unanswerable —
honest, invented, passage as answer.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.eval_stores import PROJECT_ROOT, EvalSet, Judge, Question, normalise, stores

MAX_CHARS = 1200
SETS = ("texlive", "gimp")
SOURCES_HEADER = "Информация взята из:"

# Named variants of this tree: settings (environment) changed from the defaults.
CONFIGS: dict[str, dict[str, str]] = {
    "after": {},
    "unfounded-1": {"GROVE_LOCAL_UNFOUNDED_TERMS": "1"},  # one of the question's terms stated, held by no fragment
    "greedy": {"GROVE_LOCAL_ANSWER_TEMPERATURE": "0", "GROVE_LOCAL_ANSWER_REPEAT_PENALTY": "1.0"},
    "greedy-rp1.1": {"GROVE_LOCAL_ANSWER_TEMPERATURE": "0", "GROVE_LOCAL_ANSWER_REPEAT_PENALTY": "1.1"},
    "t0.2-rp1.0": {"GROVE_LOCAL_ANSWER_REPEAT_PENALTY": "1.0"},
    "t0.7-rp1.1": {"GROVE_LOCAL_ANSWER_TEMPERATURE": "0.7"},
    "t0.2-rp1.2": {"GROVE_LOCAL_ANSWER_REPEAT_PENALTY": "1.2"},
    "tokens-160": {"GROVE_LOCAL_ANSWER_MAX_TOKENS": "160"},
    "full-prompt": {"GROVE_LOCAL_PROMPT_STYLE": "full"},
    "exact-words": {"GROVE_LOCAL_PROMPT_STYLE": "exact"},
    "fragments-2": {"GROVE_LOCAL_ANSWER_FRAGMENTS": "2"},
    "fragments-6": {"GROVE_LOCAL_ANSWER_FRAGMENTS": "6"},
    "answer-backed": {"GROVE_QUOTE_SELECTOR": "answer-backed"},
    "passages": {"GROVE_LOCAL_ANSWER_CONTEXT": "passages"},
    "opening-3": {"GROVE_LOCAL_ANSWER_OPENING": "3"},
    "opening-6": {"GROVE_LOCAL_ANSWER_OPENING": "6"},
    "near-0.7": {"GROVE_LOCAL_ANSWER_JUDGE_NEAR": "0.7"},  # drafts in the near band from surer-than-past-the-gate odds
    # the local model server's own decoding: run on a server started with these settings
    "prompt-lookup": {"GROVE_LOCAL_LLM_DRAFT": "prompt-lookup-decoding"},
    "prompt-lookup-4": {"GROVE_LOCAL_LLM_DRAFT": "prompt-lookup-decoding", "GROVE_LOCAL_LLM_DRAFT_TOKENS": "4"},
    "escaped": {"GROVE_LOCAL_LLM_CHAT_FORMAT": "chatml-function-calling"},  # the template before 2026-11-25
    # the gate passes (almost) every question: the model drafts over the fragments of questions the documents
    # do not answer, as it does when the gate errs — to measure the answer checks on such drafts
    "gate-open": {"GROVE_SEARCH_GATE_THRESHOLD": "0.95", "GROVE_SEARCH_GATE_NEAR": "0.95",
                  "GROVE_SEARCH_GATE_UNKNOWN_THINGS": "false"},
}


def server_options(changes: dict[str, str], settings: Any) -> tuple[str, int, str]:
    """The draft decoding and chat template a configuration's server runs with (server settings,
    not a turn's)."""
    return (changes.get("GROVE_LOCAL_LLM_DRAFT", settings.local_llm_draft),
            int(changes.get("GROVE_LOCAL_LLM_DRAFT_TOKENS", settings.local_llm_draft_tokens)),
            changes.get("GROVE_LOCAL_LLM_CHAT_FORMAT", settings.local_llm_chat_format))

# Runs inside a configuration's process, in that tree: ask each question of the chat flow.
DRIVER = r'''
import inspect, json, logging, os, sys, time
job = json.load(sys.stdin)
from grove.store.db import transaction
from flows.chat import chat
from nodes.store.user_state import session_of
log_file = logging.FileHandler(os.environ["ANSWER_EVAL_LOG"], encoding="utf-8")  # after Prefect set its logging up
log_file.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
for name in ("nodes", "flows"):  # each turn's node decisions, to read beside the dump
    logging.getLogger(name).addHandler(log_file)
    logging.getLogger(name).setLevel(logging.INFO)
try:  # the streamed draft, where this tree has it: when would the user see the first words?
    from nodes.telegram.stream import streaming
except ImportError:
    streaming = None
if streaming is not None and "settings" in inspect.signature(streaming).parameters:  # a tree that hands them
    from grove.core.settings import get_settings
    _streaming = streaming
    streaming = lambda origin, chat_id, api: _streaming(origin, chat_id, api, get_settings())
class FirstWords:  # when the draft first shows anything, and when it first shows the model's words
    def __init__(self):
        self.at = self.model_at = self.last = None
    def _seen(self, text):
        self.last = text  # the draft as last streamed: what the checks replaced, when they did
        now = time.perf_counter()
        self.at = self.at or now
        if self.model_at is None and not text.startswith("Из документа:"):  # not the passages alone
            self.model_at = now
    def send(self, chat_id, text, stop=None):
        self._seen(text)
        return 1
    def edit(self, chat_id, message_id, text, stop=None):
        self._seen(text)
    def delete(self, chat_id, message_id):
        pass
    def draft(self, chat_id, draft_id, text):  # Telegram's own draft (sendMessageDraft)
        if text:
            self._seen(text)
out = []
for item in job["questions"]:
    with transaction() as conn:
        conn.execute("delete from chat_messages where user_id = %s", (item["owner"],))
    session = session_of.fn(item["owner"], item["owner"])
    seen = FirstWords()
    started = time.perf_counter()
    if streaming is None:
        answer = chat(item["text"], item["owner"], session)
    elif "show" in inspect.signature(getattr(chat, "fn", chat)).parameters:  # the draft is handed in
        with streaming("telegram", item["owner"], seen) as draft:
            answer = chat(item["text"], item["owner"], session, show=draft.show if draft else None)
    else:  # an older tree: its model calls find the draft themselves
        with streaming("telegram", item["owner"], seen):
            answer = chat(item["text"], item["owner"], session)
    seconds = time.perf_counter() - started
    data = answer.model_dump(mode="json")
    data["labels"] = [f.source_label() for f in answer.fragments]
    data["seconds"] = seconds
    data["first_words"] = seen.at - started if seen.at else None
    data["model_words"] = seen.model_at - started if seen.model_at else None
    data["streamed"] = seen.last
    data["id"] = item["id"]
    out.append(data)
    print(json.dumps({"progress": item["id"], "seconds": round(seconds, 1)}), file=sys.stderr, flush=True)
json.dump(out, sys.stdout, ensure_ascii=False)
'''


def picked(evalset: EvalSet, every: int, offset: int = 0) -> list[Question]:
    """The rule: positions 0, every, 2·every, … in the set's own order (`offset` shifts them: a
    development sample that never overlaps the measured one at offset 0)."""
    return evalset.questions[offset::every]


def asked(evalset: EvalSet, every: int, offset: int = 0, silent: bool = True) -> list[Question]:
    """The picked answerable questions, then (with `silent`) every unanswerable one of the set."""
    return picked(evalset, every, offset) + (list(evalset.silent) if silent else [])


# --------------------------------------------------------------------------- judging

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_CYR_WORD = re.compile(r"[а-яё]{2,}", re.IGNORECASE)
_WORDS = re.compile(r"\w+")


def plain(text: str) -> str:
    return normalise(text).lower().replace("ё", "е")


@dataclass
class Verdict:
    russian: bool
    fact: bool
    cited: bool
    no_loop: bool
    short: bool
    seconds: float
    searched: bool
    passed: bool | None
    fallback: bool
    near: bool = False  # the gate's near band: the nearest passages, no model answer
    first_words: float | None = None
    model_words: float | None = None
    answerable: bool = True
    own_words: bool = False  # the fact in the reply's own words, before any quoted passage
    refusal_with_answer: bool = False  # a not-found lead while the reply or its passages hold the answer
    honest: bool = False  # unanswerable: a not-found lead, no passage presented as the answer
    invented: bool = False  # unanswerable: an answer stated without a not-found lead
    passage_as_answer: bool = False  # unanswerable: passages shown as the answer

    @property
    def correct_and_cited(self) -> bool:
        return self.answerable and self.russian and self.fact and self.cited and self.no_loop and self.short

    def flags(self) -> str:
        marks = [("R", self.russian), ("F", self.fact), ("C", self.cited), ("L", self.no_loop), ("S", self.short)]
        return "".join(m if ok else "·" for m, ok in marks)


def is_russian(body: str) -> bool:
    letters = [c for c in body if c.isalpha()]
    cyrillic = [c for c in letters if "а" <= c.lower() <= "я" or c.lower() == "ё"]
    return (not _CJK.search(body) and len(_CYR_WORD.findall(body)) >= 3
            and len(cyrillic) >= 0.4 * max(len(letters), 1))


def has_fact(body: str, question: Question) -> bool:
    from nodes.retrieval.lexical import term_set

    text = plain(body)
    if any(plain(n) in text for n in question.needles):
        return True
    answer, asked = term_set(body), term_set(question.text)
    for needle in question.needles:
        key = term_set(needle) - asked or term_set(needle)
        if key and len(key & answer) >= 0.6 * len(key):
            return True
    return False


# A fact said with a negation is stated only by words that negate too: «Да, Knights поддерживает» holds
# every term of «Knights их не поддерживает» and says the opposite (BF010).
_NEGATION = re.compile(r"(?<![\w-])(?:не|нет|ни|нельзя|невозможно|никак)(?![\w-])", re.IGNORECASE)


def states_fact(own: str, question: Question) -> bool:
    """The reply's own words state the key fact: one of the set's `facts` when it gives them (each term of
    the short span, lemmatised, with its polarity: negated where the fact is, not where it is not), else
    the needle test of `has_fact`."""
    if not question.facts:
        return has_fact(own, question)
    from nodes.answering.answer_check import negated_terms
    from nodes.retrieval.lexical import term_set

    text, said = plain(own), term_set(own)
    for fact in question.facts:
        if plain(fact) in text:
            return True
        terms = term_set(fact)
        if not terms or not terms <= said:
            continue
        if _NEGATION.search(fact) and not _NEGATION.search(own):
            continue
        if not _NEGATION.search(fact) and negated_terms(own) & terms:
            continue
        return True
    return False


def loops(body: str) -> bool:
    said: dict[str, int] = {}
    for sentence in re.split(r"(?<=[.!?…])\s+|\n+", body):
        words = _WORDS.findall(sentence.lower())
        if len(words) >= 4:
            key = " ".join(words)
            said[key] = said.get(key, 0) + 1
            if said[key] >= 2:
                return True
    words = _WORDS.findall(body.lower())
    grams = list(zip(words, words[1:], words[2:], words[3:]))
    return len(grams) >= 20 and len(set(grams)) < 0.7 * len(grams)


# Where the quoted passages begin: the leads grove writes above them, an HTML blockquote, a line
# that is one long «…» quote.
_PASSAGES = re.compile(r"Из документа:|В ваших документах об этом сказано так:|В базе знаний об этом сказано так:"
                       r"|Ближе всего к вопросу[^:\n]*:|<blockquote\b[^>]*>|^[ \t]*«[^\n]{40,}»[ \t]*$", re.MULTILINE)
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
# A label that says the passages are only the nearest ones, not the answer.
_NEAREST = re.compile(r"ближе\s+всего|ближайш|наиболее\s+близк|похож", re.IGNORECASE)
_DOCS = r"(?:документ\w*|материал\w*|базе(?:\s+знаний)?|фрагмент\w*|источник\w*|руководств\w*|справк\w*)"
_SAID_NOT = (r"(?:не\s+(?:сказано|говорится|упоминается|упомянут\w*|указан\w*|описан\w*|приводится"
             r"|содержится|нашлось|найден\w*|освещ\w+|рассматрива\w+)|нет|отсутству\w+)")
_REFUSAL_LEAD = re.compile(
    r"не\s+(?:нашёл|нашел|нашла|нашлось|удалось\s+найти)|не\s+могу\s+(?:уверенно\s+)?ответить"
    r"|прямого\s+ответа|нет\s+(?:информации|сведений|данных|ответа)"
    r"|(?:об\s+этом|этого|ответа|такой\s+информации)\s+(?:нет|не\s+(?:сказано|говорится|упоминается))"
    rf"|\bв(?:о)?\s+(?:ваших\s+|этих\s+|предоставленных\s+|загруженных\s+)?{_DOCS}\s+"
    rf"(?:(?:об\s+этом|этого|ничего|такой\s+информации|информации\s+об\s+этом)\s+)?{_SAID_NOT}"
    rf"|{_SAID_NOT}\s+в(?:о)?\s+(?:ваших\s+|этих\s+|предоставленных\s+|загруженных\s+)?{_DOCS}",
    re.IGNORECASE)
_FIRST_SENTENCE = re.compile(r"^.*?(?:[.!?…](?=\s|$)|\n|$)", re.DOTALL)


@dataclass(frozen=True)
class Reply:
    """A reply split where its quoted passages begin (`split_reply`)."""

    own: str  # the reply's own words, before any passage (HTML tags dropped)
    label: str  # the lead introducing the passages ("" when none or no passages)
    passages: str  # the quoted passages ("" when none)
    sources: str  # the source block ("" when none)


def split_reply(text: str) -> Reply:
    """Own words, the passages' label, the passages and the source block of a reply as the user reads it."""
    body, header, block = text.partition(SOURCES_HEADER)
    found = _PASSAGES.search(body)
    if found is None:
        return Reply(own=_TAG.sub("", body).strip(), label="", passages="", sources=header + block)
    marker = found.group(0)
    label = "" if marker.startswith("<") or marker.lstrip().startswith("«") else marker
    start = found.start() + (len(marker) if label else 0)
    return Reply(own=_TAG.sub("", body[:found.start()]).strip(), label=label,
                 passages=_TAG.sub("", body[start:]).strip(), sources=header + block)


def leads_with_refusal(own: str) -> bool:
    """The reply's first sentence says the documents do not hold the answer («не нашёл», «нет в документах» …)."""
    first = _FIRST_SENTENCE.match(own.strip())
    return bool(first and _REFUSAL_LEAD.search(first.group(0)[:300]))


def judge(answer: dict[str, Any], question: Question, evalset: EvalSet, referee: Judge) -> Verdict:
    body, _, block = answer["text"].partition(SOURCES_HEADER)
    named = {line.lstrip("• ").strip() for line in block.splitlines() if line.strip()}
    cited = any(label in named and referee.holds(question, fragment["text"], fragment["source_identifier"])
                for label, fragment in zip(answer["labels"], answer["fragments"]))
    reply = split_reply(answer["text"])
    refused = leads_with_refusal(reply.own)
    verdict = Verdict(russian=is_russian(body), fact=has_fact(body, question), cited=cited,
                      no_loop=not loops(body), short=len(body.strip()) <= MAX_CHARS, seconds=answer["seconds"],
                      first_words=answer.get("first_words"), model_words=answer.get("model_words"),
                      searched=bool(answer.get("tool_called")), passed=answer.get("gate_passed"),
                      fallback=bool(answer.get("fallback")), near=bool(answer.get("gate_near")),
                      answerable=question.answerable)
    if question.answerable:
        verdict.own_words = states_fact(reply.own, question)
        verdict.refusal_with_answer = refused and verdict.fact
    else:
        judge_silent(verdict, reply, refused)
    return verdict


def judge_silent(verdict: Verdict, reply: Reply, refused: bool) -> None:
    """An unanswerable question's reply: honest, invented, a passage presented as the answer."""
    verdict.fact = verdict.cited = False
    own_line = reply.own.splitlines()[-1] if reply.own else ""
    nearest = bool(_NEAREST.search(f"{own_line} {reply.label}"))
    verdict.passage_as_answer = bool(reply.passages) and not nearest
    verdict.honest = refused and not verdict.passage_as_answer
    verdict.invented = not refused and len(_WORDS.findall(reply.own)) >= 3


# --------------------------------------------------------------------------- running


def export_tree(ref: str, under: Path) -> Path:
    """`git archive ref` into a folder under `under`: another revision's code, run as it is."""
    folder = Path(tempfile.mkdtemp(prefix=re.sub(r"[^\w.-]", "_", ref) + "-", dir=under))
    archive = folder / "tree.tar"
    subprocess.run(["git", "-C", str(PROJECT_ROOT), "archive", "--format=tar", "-o", str(archive), ref], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "tree", filter="data")
    return folder / "tree"


def run_config(name: str, tree: Path, env_changes: dict[str, str], questions: list[dict[str, Any]],
               base_env: dict[str, str]) -> list[dict[str, Any]]:
    env = {**base_env, **env_changes, "PYTHONPATH": str(tree),
           "ANSWER_EVAL_LOG": str(Path(base_env["GROVE_DATA_DIR"]).parent / f"driver-{name}.log")}
    warm = [{**questions[0], "id": "warm-up"}]
    started = time.perf_counter()
    process = subprocess.run([sys.executable, "-c", DRIVER], input=json.dumps({"questions": warm + questions}),
                             capture_output=True, text=True, cwd=tree, env=env, check=False)
    if process.returncode != 0:
        raise SystemExit(f"configuration {name} failed:\n{process.stderr[-4000:]}")
    print(f"{name}: {len(questions)} answers in {time.perf_counter() - started:.0f} s (log: {env['ANSWER_EVAL_LOG']})",
          flush=True)
    return [a for a in json.loads(process.stdout) if a["id"] != "warm-up"]


def server_rss(server: Any) -> str:
    """The local model server's resident memory (its whole process tree), to see whether turns grow it."""
    import psutil

    root = psutil.Process(server.child.process.pid)
    total = sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
    return f"{total / 2**20:,.0f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="before,after")
    parser.add_argument("--before-ref", default="main")
    parser.add_argument("--sets", default=",".join(SETS),
                        help="needle sets to ask (default: the rule's two; `writer` is set D, the held-out one; "
                             "`metapost` and `doublecmd` are sets E and F, each with its unanswerable questions)")
    parser.add_argument("--every", type=int, default=4)
    parser.add_argument("--offset", type=int, default=0,
                        help="positions offset, offset+every, …: another sample for developing (0 is the measured one)")
    parser.add_argument("--dump", type=Path, default=None, help="write every answer and verdict as JSON")
    parser.add_argument("--no-silent", action="store_true",
                        help="leave out the sets' unanswerable questions (metapost, doublecmd: asked whole by default)")
    parser.add_argument("--only", default=None,
                        help="ask only these question ids (comma-separated; answerable ones with --every 1)")
    args = parser.parse_args()
    names = [n for n in args.configs.split(",") if n]
    unknown = [n for n in names if n != "before" and n not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown configurations {unknown}; known: before, {', '.join(CONFIGS)}")

    from grove.infra.llm_server import LocalLLMServer
    from grove.core.settings import get_settings
    from tests.support.ports import free_port

    settings = get_settings()
    work = Path(tempfile.mkdtemp(prefix="grove-answer-eval-"))
    trees = work / "trees"  # the other revisions' code, removed after the run (the logs stay)
    trees.mkdir()

    def local_server(options: tuple[str, int, str]) -> LocalLLMServer:
        draft, tokens, chat_format = options
        return LocalLLMServer(model_path=Path(settings.model_path(settings.local_llm_model)), port=free_port(),
                              log_file=work / f"llm-{draft or 'plain'}-{tokens}-{chat_format}.log", draft=draft,
                              draft_tokens=tokens, chat_format=chat_format)

    options = server_options(CONFIGS.get(names[0], {}), settings)
    server = local_server(options)
    with stores(args.sets.split(",")) as sets:
        url = server.start()
        try:
            only = set(args.only.split(",")) if args.only else None
            by_id = {q.id: (q, s) for s in sets for q in asked(s, args.every, args.offset, not args.no_silent)
                     if only is None or q.id in only}
            questions = [{"id": q.id, "text": q.text, "owner": s.owner} for q, s in by_id.values()]
            silent = sum(not q.answerable for q, _ in by_id.values())
            print(f"{len(questions)} questions: every {args.every}th from position {args.offset} of "
                  f"{', '.join(s.name for s in sets)}" + (f", and {silent} unanswerable" if silent else ""), flush=True)
            base_env = {k: v for k, v in os.environ.items() if not k.startswith(("GROVE_", "PREFECT_"))}
            base_env.update({"DATABASE_URL": os.environ["DATABASE_URL"], "GROVE_LOCAL_LLM_URL": url,
                             "GROVE_MODELS_DIR": str(settings.models_dir), "GROVE_DATA_DIR": str(work / "data"),
                             "GROVE_LLM_RETRIES": "0", "GROVE_LLM_TIMEOUT": "600"})
            answers: dict[str, list[dict[str, Any]]] = {}
            print(f"local model server RSS after start: {server_rss(server)}", flush=True)
            for name in names:
                wanted = server_options(CONFIGS.get(name, {}), settings)
                if wanted != options:  # another server setting: a server of its own, the same model
                    server.stop()
                    options, server = wanted, local_server(wanted)
                    base_env["GROVE_LOCAL_LLM_URL"] = server.start()
                    print(f"local model server restarted for {name}: draft {wanted[0] or 'none'}, "
                          f"{wanted[1]} tokens", flush=True)
                tree = export_tree(args.before_ref, trees) if name == "before" else PROJECT_ROOT
                answers[name] = run_config(name, tree, CONFIGS.get(name, {}), questions, base_env)
                print(f"local model server RSS after {name}: {server_rss(server)}", flush=True)
        finally:
            server.stop()
            shutil.rmtree(trees, ignore_errors=True)
        referees = {s.name: Judge(s) for s in sets}
        verdicts = {name: {a["id"]: judge(a, by_id[a["id"]][0], by_id[a["id"]][1], referees[by_id[a["id"]][1].name])
                           for a in found} for name, found in answers.items()}
    report(names, list(by_id), verdicts, {qid: evalset.name for qid, (_, evalset) in by_id.items()})
    if args.dump:
        args.dump.write_text(json.dumps({name: [{**a, "verdict": asdict(verdicts[name][a["id"]])} for a in found]
                                         for name, found in answers.items()}, ensure_ascii=False, indent=1))


def marks(v: Verdict) -> str:
    """A question's flags: the five checks, W own words and ! refusal with answer; for an unanswerable
    question H honest, I invented, P passage as answer (· = not)."""
    if not v.answerable:
        return "".join(m if ok else "·" for m, ok in [("H", v.honest), ("I", v.invented), ("P", v.passage_as_answer)])
    return v.flags() + ("W" if v.own_words else "·") + ("!" if v.refusal_with_answer else "")


def report(names: list[str], ids: list[str], verdicts: dict[str, dict[str, Verdict]],
           set_of: dict[str, str] | None = None) -> None:
    print("\nPer question: R russian, F fact, C cited, L no loop, S short, W own words (· = failed), ! refusal "
          "with the answer shown; unanswerable: H honest, I invented, P passage as answer; seconds; "
          "g gate passed / n near band (nearest passages, no model) / x searched, gate shut / - not searched; "
          "* fallback\n")
    print("| question | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for qid in ids:
        cells = []
        for name in names:
            v = verdicts[name][qid]
            gate = "g" if v.passed else "n" if v.near else "x" if v.searched else "-"
            cells.append(f"{marks(v)} {v.seconds:.0f}s {gate}{'*' if v.fallback else ''}")
        print(f"| {qid} | " + " | ".join(cells) + " |")
    print("\n| configuration | correct and cited | russian | fact | cited | no loop | short | "
          "s/answer median | p90 | first words median | p90 | model's words median | searched | gate passed | "
          "near band | fallback |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        found = [v for v in verdicts[name].values() if v.answerable]
        n = len(found)
        if not n:
            continue

        def rate(attr: str, found: list[Verdict] = found) -> float:
            return sum(bool(getattr(v, attr)) for v in found) / len(found)

        seconds = sorted(v.seconds for v in found)
        shown = sorted(v.first_words for v in found if v.first_words is not None) or [float("nan")]
        written = sorted(v.model_words for v in found if v.model_words is not None) or [float("nan")]
        print(f"| {name} | **{sum(v.correct_and_cited for v in found) / n:.0%}** | {rate('russian'):.0%} | "
              f"{rate('fact'):.0%} | {rate('cited'):.0%} | {rate('no_loop'):.0%} | {rate('short'):.0%} | "
              f"{statistics.median(seconds):.0f} | {seconds[int(0.9 * (n - 1))]:.0f} | "
              f"{statistics.median(shown):.1f} | {shown[int(0.9 * (len(shown) - 1))]:.1f} | "
              f"{statistics.median(written):.1f} | {rate('searched'):.0%} | "
              f"{rate('passed'):.0%} | {rate('near'):.0%} | {rate('fallback'):.0%} |")
    if set_of:
        per_set(names, verdicts, set_of)


def per_set(names: list[str], verdicts: dict[str, dict[str, Verdict]], set_of: dict[str, str]) -> None:
    """Counts per configuration and set: answerable (correct and cited, own words, refusal with the
    answer shown) and unanswerable (honest, invented, passage presented as the answer)."""
    print("\n| configuration | set | answerable | correct and cited | own words | refusal with answer | "
          "unanswerable | honest | invented | passage as answer |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        for set_name in dict.fromkeys(set_of.values()):
            found = [v for qid, v in verdicts[name].items() if set_of.get(qid) == set_name]
            yes = [v for v in found if v.answerable]
            no = [v for v in found if not v.answerable]

            def count(group: list[Verdict], attr: str) -> str:
                hits = sum(bool(getattr(v, attr)) for v in group)
                return f"{hits} ({hits / len(group):.0%})" if group else "—"

            print(f"| {name} | {set_name} | {len(yes)} | {count(yes, 'correct_and_cited')} | {count(yes, 'own_words')} | "
                  f"{count(yes, 'refusal_with_answer')} | {len(no)} | {count(no, 'honest')} | {count(no, 'invented')} | "
                  f"{count(no, 'passage_as_answer')} |")


if __name__ == "__main__":
    main()
