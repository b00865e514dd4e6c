"""Many documents extracted at once, as the ingestion branches of one message extract them.

`grove ingest` runs every item of a message as a branch in its own thread, so HTML pages, PDFs
and EPUBs are parsed side by side. Native parsers that are entered from two threads at once
(libxml2 under lxml and trafilatura, PDFium) may corrupt the heap: the process then dies of a
signal with no Python traceback («double free or corruption»). So each stress runs in a child
process and its exit code tells a crash (killed by a signal) from a clean run.

One stress: `rounds` rounds; in each, a fresh thread pool (threads that end after every round:
libxml2 keeps per-thread state) extracts every document once — HTML pages through the local-file
path and, every other page, through the link path (`fetch_url.extract_html`), PDFs and EPUBs
through `parse_file`.

    python -m tests.support.extraction_stress DOC...             # one stress in this process
    python -m tests.support.extraction_stress --runs 50 DOC...   # 50 child processes, crashes counted
    python -m tests.support.extraction_stress --runs 50 --tree /tmp/before DOC...  # another checkout
    python -m tests.support.extraction_stress --runs 50 --unlocked DOC...  # this one, locks taken out

The documents used by the test and by bench/README.md: `/usr/share/doc/debian-history/docs`
(Debian package `debian-history`: 60 HTML pages, a PDF and an EPUB per language).
"""

from __future__ import annotations

from grove.core.settings import get_settings
import argparse
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HISTORY_DOCS = Path("/usr/share/doc/debian-history/docs")
ROUNDS = 20
WORKERS = 8
"""Eight threads: as many branches as a message of eight links or files runs at once."""


def history_documents(folder: Path = HISTORY_DOCS, pdfs: int = 3, epubs: int = 2) -> list[Path]:
    """Every HTML page of the Debian project history, and a few of its PDFs and EPUBs."""
    pages = sorted(folder.glob("*.html"))
    return [*pages, *sorted(folder.glob("*.pdf"))[:pdfs], *sorted(folder.glob("*.epub"))[:epubs]]


def _extract(path: Path, through_link: bool) -> str:
    """What one extraction gave: its length, or the refusal it ended in (a page with no main text
    is refused the same way every time; a half-imported module is not)."""
    from grove.core.ingest_types import IngestError
    from nodes.ingestion.parse_files import parse_file

    try:
        if through_link:
            from nodes.ingestion.fetch_url import extract_html

            markup = path.read_bytes().decode("utf-8", "replace")
            return f"{len(extract_html(markup, f'https://example.org/{path.name}').text)} characters"
        return f"{len(parse_file(str(path), path.name, None, get_settings()).text)} characters"
    except IngestError as exc:
        return f"refused: {exc.reason}"


def stress(paths: list[Path], rounds: int = ROUNDS, workers: int = WORKERS) -> list[str]:
    """Extract every document `rounds` times, `workers` at a time; what each gave. Every round
    must give the same, or extraction depends on what runs beside it (AssertionError)."""
    jobs = [(path, path.suffix in (".html", ".htm") and index % 2 == 1) for index, path in enumerate(paths)]
    first: list[str] | None = None
    for number in range(1, rounds + 1):
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(lambda job: _extract(*job), jobs))
        if first is None:
            first = results
        elif results != first:
            changed = [f"{path.name}: {a} / {b}" for path, a, b in zip(paths, first, results) if a != b]
            raise AssertionError(f"round {number} differs from round 1: {changed[:3]}")
    return first or []


@dataclass
class Outcome:
    returncode: int
    seconds: float
    tail: str

    @property
    def crashed(self) -> bool:
        """Killed by a signal (SIGSEGV, SIGABRT from glibc's heap checks), not an exception."""
        return self.returncode < 0

    @property
    def signal_name(self) -> str:
        return signal.Signals(-self.returncode).name if self.crashed else ""


def unlock() -> None:
    """Take the locks of `nodes.ingestion.native` out (to measure what they prevent)."""
    import contextlib

    from nodes.ingestion import native

    native.LIBXML = native.PDFIUM = contextlib.nullcontext()  # type: ignore[assignment]


def run_child(paths: list[Path], *, rounds: int = ROUNDS, workers: int = WORKERS,
              tree: Path | None = None, unlocked: bool = False, timeout: float = 1800) -> Outcome:
    """One stress in a child process (the checkout `tree`, else this one)."""
    root = tree or Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONFAULTHANDLER": "1"}
    command = [sys.executable, str(Path(__file__).resolve()), "--rounds", str(rounds),
               "--workers", str(workers), *(["--unlocked"] if unlocked else []), *map(str, paths)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)
    return Outcome(done.returncode, time.perf_counter() - started, (done.stdout + done.stderr)[-2000:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", type=Path, help="documents (default: the Debian project history)")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--workers", type=int, default=WORKERS)
    parser.add_argument("--runs", type=int, default=0, help="run the stress in this many child processes")
    parser.add_argument("--tree", type=Path, help="the checkout the children import (default: this one)")
    parser.add_argument("--unlocked", action="store_true", help="without the locks of nodes.ingestion.native")
    args = parser.parse_args()
    paths = args.paths or history_documents()
    if not args.runs:
        if args.unlocked:
            unlock()
        results = stress(paths, args.rounds, args.workers)
        refused = sum(result.startswith("refused") for result in results)
        print(f"{len(paths)} documents x {args.rounds} rounds, {args.workers} threads: the same every round "
              f"({refused} refused)")
        return
    crashes: dict[str, int] = {}
    failures = 0
    for run in range(1, args.runs + 1):
        outcome = run_child(paths, rounds=args.rounds, workers=args.workers, tree=args.tree, unlocked=args.unlocked)
        if outcome.crashed:
            crashes[outcome.signal_name] = crashes.get(outcome.signal_name, 0) + 1
        elif outcome.returncode:
            failures += 1
        status = outcome.signal_name or f"exit {outcome.returncode}"
        print(f"run {run}: {status} in {outcome.seconds:.0f} s", flush=True)
        if outcome.returncode:
            print("   " + outcome.tail.strip().replace("\n", "\n   ")[-800:], flush=True)
    print(f"{args.runs} runs of {len(paths)} documents x {args.rounds} rounds, {args.workers} threads: "
          f"{sum(crashes.values())} killed by a signal {crashes or ''}, {failures} failed otherwise")


if __name__ == "__main__":
    main()
