"""`grove ask "вопрос"`: one chat turn from the command line, with sources (and fragments)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from grove.app.runtime import Stack, start_llm, start_prefect, start_store
from grove.core.settings import Settings

if TYPE_CHECKING:
    from flows.consultation import ConsultationAnswer


def run_ask(settings: Settings, question: str, user_id: int | None, verbose: bool) -> int:
    console = Console()
    owner = settings.console_user_id if user_id is None else user_id
    stack = Stack()
    with stack.exit:
        with console.status("starting Postgres, Prefect and the LLM …"):
            settings = start_store(settings, stack, quiet=True)
            settings = start_prefect(settings, stack, reuse=True, quiet=True)
            settings = start_llm(settings, stack, quiet=True)
        from flows.answering import answering_flow
        from flows.consultation import ConsultationAnswer
        from nodes.store.user_state import session_of

        with console.status("thinking …"):
            answer = answering_flow()(question, owner, session_of(owner, owner))
    if isinstance(answer, ConsultationAnswer):
        return _consulted(console, answer, verbose)
    console.print(answer.text)
    if verbose:
        if answer.tool_called:
            console.print(f"\n[dim]rag-db-query: {answer.tool_query!r}[/dim]")
        table = Table("#", "score", "distance", "source", "fragment")
        for number, fragment in enumerate(answer.fragments, 1):
            table.add_row(str(number), f"{fragment.score:.3f}" if fragment.score is not None else "",
                          f"{fragment.distance:.3f}", fragment.source_label(),
                          fragment.text[:160].replace("\n", " "))
        console.print(table)
    return 1 if answer.failed else 0


def _consulted(console: Console, answer: ConsultationAnswer, verbose: bool) -> int:
    """A consultation turn's answer (it may be a clarifying question), with its tiers when verbose."""
    console.print(answer.text)
    if verbose:
        console.print(f"\n[dim]{answer.kind} · culture {answer.culture!r} · {answer.question!r}[/dim]")
        for line in answer.trace:
            console.print(f"[dim]{line}[/dim]")
        table = Table("#", "tier", "type", "distance", "source", "fragment")
        for number, snippet in enumerate(answer.snippets, 1):
            table.add_row(str(number), str(snippet.priority_level), snippet.source_type,
                          f"{snippet.distance:.3f}", snippet.source_label(),
                          snippet.content[:160].replace("\n", " "))
        console.print(table)
    return 1 if answer.kind == "failed" else 0
