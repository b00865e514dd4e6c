"""`grove ingest PATH_OR_URL...`: the ingestion flow from the command line, with a progress bar."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from grove.app.runtime import Stack, start_prefect, start_store
from grove.core.settings import Settings

if TYPE_CHECKING:
    from grove.core.ingest_types import IngestItem

MEDIA_SUFFIXES = {".ogg", ".oga", ".opus", ".mp3", ".m4a", ".wav", ".flac", ".aac", ".mp4", ".mkv",
                  ".webm", ".mov", ".avi"}


def item_for(argument: str) -> IngestItem:
    """A URL becomes a link item; a path a file or media item (by type)."""
    from grove.core.ingest_types import IngestItem

    if argument.startswith(("http://", "https://")):
        return IngestItem(kind="link", url=argument, source_identifier=argument)
    path = Path(argument).expanduser()
    if not path.is_file():
        raise SystemExit(f"grove: no such file: {argument}")
    mime, _ = mimetypes.guess_type(path.name)
    is_media = path.suffix.lower() in MEDIA_SUFFIXES or (mime or "").startswith(("audio/", "video/"))
    return IngestItem(kind="media" if is_media else "file", source_identifier=path.name,
                      path=str(path.resolve()), file_name=path.name, mime_type=mime,
                      file_size=path.stat().st_size)


def check_culture(subcategory: str | None) -> str | None:
    """Why `--culture` cannot be used, or None. A label the profile does not know (a typo such
    as «малина ремонтная») would store documents no consultation ever retrieves."""
    from grove.core.domain_profile import active_profile

    profile = active_profile()
    if subcategory is None or profile is None or subcategory in profile.labels:
        return None
    labels = ", ".join(label for label in profile.labels if label not in profile.unclear[:1])
    return (f"grove: культура «{subcategory}» не найдена в профиле «{profile.name}»; "
            f"документы с ней не найдёт ни одна консультация. Возможные значения: {labels}")


def run_ingest(settings: Settings, arguments: list[str], user_id: int | None, subcategory: str | None) -> int:
    console = Console()
    refusal = check_culture(subcategory)
    if refusal:
        console.print(refusal, style="red", markup=False)
        return 2
    owner = settings.console_user_id if user_id is None else user_id
    items = [item_for(argument) for argument in arguments]
    stack = Stack()
    with stack.exit:
        with console.status("starting Postgres and Prefect …"):
            settings = start_store(settings, stack, quiet=True)
            settings = start_prefect(settings, stack, reuse=True, quiet=True)
        from flows.ingest import ingest

        columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[detail]}"),
                   TimeElapsedColumn())
        with Progress(*columns, console=console) as progress:
            bars: dict[str, TaskID] = {
                item.label: progress.add_task(item.label[:50], total=None, detail="")
                for item in items
            }

            def update(source: str, stage: str, done: float, total: float) -> None:
                bar = bars.get(source)
                if bar is not None:
                    progress.update(bar, completed=done, total=total or None,
                                    detail=f"{stage} {done:g}/{total:g}" if total else stage)

            outcomes = ingest(items, owner, subcategory, progress=update)
    table = Table("source", "status", "title", "chunks", "note")
    for outcome in outcomes:
        table.add_row(outcome.name, outcome.status, outcome.title or "", str(outcome.chunks),
                      outcome.user_message or "")
    console.print(table)
    return 1 if any(o.status == "failed" for o in outcomes) else 0
