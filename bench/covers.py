"""When do the shown passages answer the question? The refusal overrule's test, by words and by meaning.

Run: .venv/bin/python -m bench.answerability --sets <sets> --dump probes.json   # search once
     .venv/bin/python -m bench.covers --load probes.json [--fragments 4] [--unknown]

`covers` (nodes/answering/answer_check.py) decides two things a user reads: a local draft that
says «об этом не сказано» is overruled (the passages are shown as the answer, and the model is
asked again without the way out of refusing), and an extractive answer is led by «В ваших
документах об этом сказано так:» rather than «Прямого ответа … не нашёл». Over every probe of an
answerability dump (each question searched in its own set's store with the production search),
this prints for the fragments the local model is shown:

* the rarity-weighted share of the question's terms in the best sentence (`coverage`, words alone);
* in the band of word shares below the words-alone threshold, how near in meaning the closest
  passage comes (`nearest_meaning`, the embedding model's cosine over the quote selector's windows);

and, for a grid of (word floor, meaning threshold), the share of answerable questions (whose
fragments hold a needle) and of unanswerable ones the test calls covered. Answerable questions
covered is the good side; unanswerable ones covered become passages shown as the answer when the
model refuses.

`--unknown` keeps only the probes whose question names a word the base lacks (the search gate's
unknown things) and prints the grid for each words-alone share in `WORDS`: there a covered
question is let through the gate as said in the user's own words (`OWN_WORDING_COVERAGE`), and an
unanswerable one covered is answered by the model.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.cpu import describe_cpu

WORD_FLOORS = (0.2, 0.25, 0.3)
WORDS = (0.3, 0.4, 0.5)
MEANINGS = (0.55, 0.6, 0.62, 0.65, 0.68, 0.7)


def main() -> None:
    from nodes.answering.answer_check import (MEANING_FLOOR_COVERAGE, MEANING_OVERRULE, OWN_WORDING_COVERAGE,
                                              REFUSAL_OVERRULE_COVERAGE, coverage)
    from nodes.answering.quote import nearest_meaning

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", type=Path, required=True, help="a dump of bench.answerability (--dump)")
    parser.add_argument("--fragments", type=int, default=4, help="fragments the local model is shown")
    parser.add_argument("--unknown", action="store_true",
                        help="only questions naming a word the base lacks; a grid per words-alone share")
    args = parser.parse_args()
    print(describe_cpu())
    probes = json.loads(args.load.read_text())
    rows: list[tuple[bool, float, float | None]] = []
    started = time.monotonic()
    for n, probe in enumerate(probes, 1):
        texts = probe["texts"][:args.fragments]
        if probe["answerable"] and not any(probe["holds"][:args.fragments]):
            continue  # the search missed: nothing shown could answer
        if args.unknown and not probe["unknown"]:
            continue
        top = max(WORDS) if args.unknown else REFUSAL_OVERRULE_COVERAGE
        words = coverage(probe["question"], texts)
        near = nearest_meaning(probe["question"], texts) if min(WORD_FLOORS) <= words < top else None
        rows.append((bool(probe["answerable"]), words, near))
        if n % 50 == 0:
            print(f"  {n}/{len(probes)} probes, {time.monotonic() - started:.0f} s", flush=True)
    answerable = [r for r in rows if r[0]]
    silent = [r for r in rows if not r[0]]

    def share(group: list[tuple[bool, float, float | None]], alone: float, floor: float | None,
              meaning: float | None) -> str:
        covered = sum(1 for _, words, near in group if words >= alone or (
            floor is not None and meaning is not None and near is not None and words >= floor and near >= meaning))
        return f"{covered}/{len(group)} ({covered / max(len(group), 1):.2f})"

    print(f"\n{len(answerable)} answerable questions whose shown fragments hold the answer, {len(silent)} unanswerable"
          + (", each naming a word the base lacks" if args.unknown else ""))
    default = OWN_WORDING_COVERAGE if args.unknown else REFUSAL_OVERRULE_COVERAGE
    print("\n| words alone | words floor | meaning | answerable covered | unanswerable covered |\n|---|---|---|---|---|")
    for alone in WORDS if args.unknown else (REFUSAL_OVERRULE_COVERAGE,):
        print(f"| ≥ {alone} | — | — | {share(answerable, alone, None, None)} | {share(silent, alone, None, None)} |")
        for floor in WORD_FLOORS:
            for meaning in MEANINGS:
                mark = (" **(default)**" if (alone, floor, meaning) == (default, MEANING_FLOOR_COVERAGE, MEANING_OVERRULE)
                        else "")
                print(f"| ≥ {alone}{mark} | {floor} | {meaning} | {share(answerable, alone, floor, meaning)} | "
                      f"{share(silent, alone, floor, meaning)} |")


if __name__ == "__main__":
    main()
