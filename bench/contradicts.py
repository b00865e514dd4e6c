"""A yes where the documents say no or nothing: which local drafts the `contradicts` and `unbacked_yes`
checks replace.

Run: .venv/bin/python -m bench.contradicts DUMP.json [DUMP.json …]

Reads `bench.answer_eval --dump` files. Every local draft the runs recorded (the draft a fallback
replaced, else the words above the quote), once per question and wording, is checked as
`nodes.answering.answer_check` checks it over the fragments the model read. Printed: each draft that
begins with «Да», the checks that flag it, and the set's key facts for the question (where the
documents say no, a fact holds the negation), then the counts. `select_quote` may load the embedding
model, as in production.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from bench.unfounded import question_records

_CHECKS = ("contradicts", "unbacked_yes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dumps", nargs="+", type=Path)
    args = parser.parse_args()

    from bench.answer_eval import split_reply
    from grove.core.settings import get_settings
    from nodes.answering.answer_check import CHECKS, CITATION, YES_FIRST, Draft

    asked, limit = question_records(), get_settings().local_answer_fragments
    seen: set[tuple[str, str]] = set()
    counts: Counter[str] = Counter()
    for dump in args.dumps:
        for answers in json.loads(dump.read_text(encoding="utf-8")).values():
            for answer in answers:
                texts = [f["text"] for f in answer.get("fragments") or []][:limit]
                body = CITATION.sub("", answer.get("draft") or split_reply(answer["text"]).own).strip()
                if not texts or not body or (answer["id"], body) in seen:
                    continue
                seen.add((answer["id"], body))
                kind = "answerable" if answer["verdict"]["answerable"] else "silent"
                counts[f"drafts, {kind}"] += 1
                if not YES_FIRST.match(body):
                    continue
                question = asked[answer["id"]]
                draft = Draft(body, str(question["question"]), texts, strict=True)
                flagged = [name for name in _CHECKS if CHECKS[name](draft)]
                counts[f"«Да» drafts, {kind}"] += 1
                for name in flagged:
                    counts[f"«Да» drafts flagged by {name}, {kind}"] += 1
                print(f"{answer['id']}\t{kind}\t{','.join(flagged) or '-'}\t{question.get('facts') or ''}\t"
                      f"{body[:90]!r}", flush=True)
    print()
    for key in sorted(counts):
        print(f"{key}: {counts[key]}")


if __name__ == "__main__":
    main()
