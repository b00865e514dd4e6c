"""A draft that states the question: which accepted local drafts the `unfounded` check would replace.

Run: .venv/bin/python -m bench.unfounded DUMP.json [DUMP.json …]

Reads `bench.answer_eval --dump` files. For every accepted draft the judge read (not a fallback, not
the near band, fragments shown), the draft's text above its quote is checked as
`nodes.answering.answer_check._unfounded` checks it, for several counts of claimed terms (the
question's terms the draft states and no shown fragment holds): how many drafts to answerable
questions it replaces (and how many of those the judge called right, or right in the model's own
words), and how many drafts to unanswerable ones (invented or presented a passage as the answer,
against honest). `covers` loads the embedding model, as in production.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from bench.eval_stores import SETS_DIR

_ABOVE_QUOTE = re.compile(r"\n\n(?:Из документа:|Информация взята из:)")


def question_records() -> dict[str, dict[str, object]]:
    """Every frozen set's questions as written (id → its record, facts and all), silent ones too."""
    found: dict[str, dict[str, object]] = {}
    for path in SETS_DIR.glob("*_ru.json"):
        for question in json.loads(path.read_text(encoding="utf-8")).get("questions", []):
            found[question["id"]] = question
    return found


def questions() -> dict[str, str]:
    return {key: str(record["question"]) for key, record in question_records().items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dumps", nargs="+", type=Path)
    parser.add_argument("--terms", default="1,2,3", help="claimed-term counts to try")
    args = parser.parse_args()

    from nodes.answering.answer_check import CITATION, claimed_terms, covers

    asked = questions()
    counts = [int(n) for n in args.terms.split(",")]
    seen: Counter[str] = Counter()
    flagged: dict[int, Counter[str]] = {n: Counter() for n in counts}
    for dump in args.dumps:
        for answers in json.loads(dump.read_text(encoding="utf-8")).values():
            for answer in answers:
                texts = [f["text"] for f in answer["fragments"]]
                if not texts or answer["fallback"] or answer["gate_near"]:
                    continue
                verdict, question = answer["verdict"], asked[answer["id"]]
                body = CITATION.sub("", _ABOVE_QUOTE.split(answer["text"])[0])
                claimed = len(claimed_terms(question, body, texts))
                if verdict["answerable"]:
                    kinds = ["answerable"] + (["right"] if verdict["fact"] and verdict["cited"] else []) \
                        + (["own words"] if verdict.get("own_words") else [])
                else:
                    bad = verdict.get("invented") or verdict.get("passage_as_answer")
                    kinds = ["unanswerable", "invented or passage" if bad else "honest"]
                seen.update(kinds)
                uncovered = None
                for n in counts:
                    if claimed >= n:
                        if uncovered is None:
                            uncovered = not covers(question, texts)
                        if uncovered:
                            flagged[n].update(kinds)
                            if n == max(c for c in counts if claimed >= c) and verdict["answerable"]:
                                print(f"  answerable flagged at {n}: {answer['id']} ({', '.join(kinds[1:]) or 'wrong'})")
    print(f"accepted drafts: {dict(seen)}")
    print("| claimed terms ≥ | answerable replaced | of them right | of them own words | unanswerable replaced "
          "| of them invented or passage | of them honest |")
    print("|---|---|---|---|---|---|---|")
    for n in counts:
        f = flagged[n]
        print(f"| {n} | {f['answerable']}/{seen['answerable']} | {f['right']}/{seen['right']} | "
              f"{f['own words']}/{seen['own words']} | {f['unanswerable']}/{seen['unanswerable']} | "
              f"{f['invented or passage']}/{seen['invented or passage']} | {f['honest']}/{seen['honest']} |")


if __name__ == "__main__":
    main()
