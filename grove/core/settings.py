"""One settings object for the whole service.

Every knob lives here — the answering knobs (models, LLM, retrieval, consultation, plans) in
its base class, `grove/core/answering_settings.py` — and is read from the environment (or a `.env`
file in the working directory). Secrets such as the bot token or an LLM key are only ever
taken from the environment, never from files in the repository.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from grove.core.answering_settings import AnsweringSettings

PROJECT_ROOT = Path(__file__).resolve().parents[2]


class Settings(AnsweringSettings, BaseSettings):
    """Configuration of grove; each field maps to the env var `GROVE_<NAME>` unless aliased."""

    model_config = SettingsConfigDict(
        env_prefix="GROVE_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
    )

    # --- where things live -------------------------------------------------
    data_dir: Path = Field(
        default=PROJECT_ROOT / ".grove",
        description="Project data: embedded Postgres cluster, Prefect home, models, caches.",
    )

    models_folder: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("GROVE_MODELS_DIR", "models_folder"),
        description="Where `make models` put the weights; default: <data_dir>/models.",
    )

    # --- Postgres ----------------------------------------------------------
    database_url: str | None = Field(
        default=None,
        alias="DATABASE_URL",
        description="Any Postgres >= 15 with pgvector (Supabase included). Unset: embedded Postgres.",
    )
    pg_port: int = Field(default=54329, description="Port of the embedded Postgres on 127.0.0.1.")
    pg_system_user: str = Field(
        default="grove-postgres",
        description="Unprivileged system user that runs the embedded server when started as root.",
    )
    db_pool_min: int = 1
    db_pool_max: int = 10
    embedding_dim: int = Field(
        default=768,
        description="Vector width of every embedding column; checked against the database at start.",
    )

    # --- Prefect -----------------------------------------------------------
    prefect_api_url: str | None = Field(
        default=None,
        alias="PREFECT_API_URL",
        description="An existing Prefect server. Unset: `grove up` starts one on prefect_port.",
    )
    prefect_port: int = 4200
    prefect_start_timeout: float = 90.0
    prefect_database: Literal["sqlite", "postgres"] = Field(
        default="postgres",
        description=(
            "Where the Prefect server started by `grove up` keeps its runs: a `prefect` database in "
            "grove's own Postgres (no SQLite lock errors under load, less server CPU per run: "
            "bench/message_path.py), or SQLite in the Prefect home. Falls back to SQLite when the "
            "database cannot be created there."
        ),
    )
    dispatch: Literal["inline", "prefect"] = Field(
        default="inline",
        description=(
            "inline: `grove up` runs every turn in its own process and its worker runs the indexing; "
            "Prefect records. prefect: turns and indexing run as Prefect background tasks on every "
            "`grove work` process, on this machine or others (scale-out, grove/app/engine.py)."
        ),
    )
    lane_lease_seconds: float = Field(
        default=15.0,
        description="Scale-out: a lane whose worker stops renewing this lease is handed to Prefect again.",
    )

    # --- the message path ----------------------------------------------------
    workers: int = Field(
        default=16,
        description="Turns run in parallel (different users; one user's updates always run one at a time).",
    )
    turn_deadline: float | None = Field(
        default=None,
        description=(
            "Seconds a chat turn may take before the user gets the apology (the question is kept). "
            "Unset: 90 with a remote model, 300 with the local one, moved later when the local model's "
            "measured speed says its prompt needs more (nodes/answering/model_speed.py)."
        ),
    )
    ingest_workers: int = Field(default=1, description="Background indexing jobs at once per worker process.")
    job_lease_seconds: float = Field(
        default=60.0, description="A job whose worker stops renewing this lease is taken over by another."
    )
    progress_every: float = Field(
        default=3.0, description="Seconds between edits of an upload's progress message (Telegram limits edits)."
    )
    inbox_keep_days: int = Field(default=7, description="Finished updates stay in the inbox this long.")
    background_nice: int = Field(
        default=10,
        description="CPU priority of the indexing worker and the Prefect server under `grove up`: answers go first.",
    )

    # --- Telegram ----------------------------------------------------------
    telegram_bot_token: SecretStr | None = Field(default=None, alias="TELEGRAM_BOT_TOKEN")
    telegram_api_url: str = Field(
        default="https://api.telegram.org",
        description="Bot API server; tests point this at a local stand-in.",
    )
    telegram_local_mode: bool = Field(
        default=False,
        description=("`telegram_api_url` is a local Bot API server started with --local: files come by "
                     "absolute path from its disk, without the 20 MB download limit (raise GROVE_MAX_FILE_BYTES)."),
    )
    telegram_connections: int = Field(
        default=256,
        description=("Connections the reply sender keeps to the Bot API server; a call beyond them waits up to "
                     "30 s for one to free (python-telegram-bot's own default fails it after 1 s). 16 and 256 "
                     "measured alike in a 50-user burst (bench/README.md, the message path)."),
    )
    telegram_webhook_url: str | None = Field(
        default=None, description="Public https URL; when set the bot uses a webhook, not polling."
    )
    telegram_webhook_secret: SecretStr | None = Field(
        default=None, description="Telegram sends it in a header; other requests are refused."
    )
    telegram_webhook_listen: str = "127.0.0.1"
    telegram_webhook_port: int = 8443
    telegram_poll_timeout: int = 30
    console_user_id: int = Field(
        default=1, description="Telegram-like user id the local console speaks as."
    )
    admin_ids: list[int] = Field(
        default_factory=list, description="Telegram user ids allowed to moderate answers."
    )

    # --- ingestion -----------------------------------------------------------
    chunking: Literal["late", "naive"] = Field(
        default="naive",
        description=(
            "naive: each chunk embedded on its own (with its title and heading path); late: chunk vectors "
            "pooled from the whole document's token embeddings. naive retrieved better on all three Russian "
            "sets of bench/retrieval_eval.py (bench/README.md)."
        ),
    )
    chunk_target_chars: int = 1000
    chunk_overlap_chars: int = 200
    chunk_merge_chars: int = Field(
        default=500,
        description="Neighbouring sections on one page that are both shorter than this share a chunk (0: never).",
    )
    chunk_context: Literal["none", "title", "title+section"] = Field(
        default="title+section",
        description="What is embedded in front of a chunk: its document title, and its heading path (naive vectors).",
    )
    late_window_tokens: int = Field(default=2048, description="Macro window for long late chunking.")
    late_window_overlap_tokens: int = 256
    ocr_command: str = Field(default="tesseract", description="OCR engine for scans and photos (nodes/ingestion/ocr.py).")
    ocr_languages: str = Field(default="rus+eng", description="Tesseract languages, `+`-joined.")
    ocr_max_pages: int = Field(default=50, description="Scanned PDF pages read at most (each takes seconds).")
    ocr_timeout_seconds: float = Field(default=120, description="One image's OCR at most.")
    max_file_bytes: int = Field(default=20 * 1024 * 1024, description="Telegram getFile limit is 20 MB.")
    max_download_bytes: int = 10 * 1024 * 1024
    fetch_timeout: float = 20.0
    allow_loopback_urls: bool = Field(default=False, description="Tests serve pages on 127.0.0.1.")
    max_media_seconds: float = 3 * 3600
    voice_question_max_seconds: float = Field(
        default=300, description="A voice question in Чат longer than this is refused (it belongs in База)."
    )

    @field_validator("database_url", "prefect_api_url", "llm_api_key", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    @property
    def pg_data_dir(self) -> Path:
        return self.data_dir / "postgres"

    @property
    def prefect_home(self) -> Path:
        return self.data_dir / "prefect"

    @property
    def models_dir(self) -> Path:
        return self.models_folder or self.data_dir / "models"

    def model_path(self, name: str) -> str:
        """A model named in settings: a folder under models_dir, a local path, or a hub id.

        Hub ids only load with internet access; the shipped defaults are folders
        assembled by `make models` (see README, "Models").
        """
        bundled = self.models_dir / name
        if bundled.exists():
            return str(bundled)
        if Path(name).expanduser().exists():
            return str(Path(name).expanduser())
        return name

    @property
    def chat_deadline(self) -> float:
        """The overall time a chat turn may take (see `turn_deadline`)."""
        if self.turn_deadline is not None:
            return self.turn_deadline
        return 300.0 if self.uses_local_llm else 90.0

    @property
    def bot_token(self) -> str | None:
        return self.telegram_bot_token.get_secret_value() if self.telegram_bot_token else None


DEFAULTS: Settings = Settings.model_construct()
"""The settings' own defaults, read from no environment: what a node uses where a caller hands it no value."""

_settings: Settings | None = None
_settings_lock = threading.Lock()


def get_settings() -> Settings:
    """The process-wide settings: read from the environment once, changed only by `configure`."""
    global _settings
    with _settings_lock:
        if _settings is None:
            _settings = Settings()
        return _settings


def configure(**changes: Any) -> Settings:
    """The process-wide settings with `changes`: what an entry point learns as it starts — the URL
    of the Postgres, Prefect or model server it started or found — handed to everything that
    reads the settings, without writing the environment. Child processes get them through
    `child_environment`."""
    global _settings
    current = get_settings()
    with _settings_lock:
        _settings = current.model_copy(update=changes)
        return _settings


def reset_settings() -> None:
    """Read the environment again (tests that change it; nothing in the service needs this)."""
    global _settings
    with _settings_lock:
        _settings = None


# Settings a child process of `grove up` (the worker, the served flows) must share with it,
# as the environment variables they are read from.
_SHARED_WITH_CHILDREN = {"database_url": "DATABASE_URL", "prefect_api_url": "PREFECT_API_URL",
                         "local_llm_url": "GROVE_LOCAL_LLM_URL"}


def child_environment(settings: Settings) -> dict[str, str]:
    """This process's environment plus the settings it was configured with at start."""
    env = dict(os.environ)
    for field, variable in _SHARED_WITH_CHILDREN.items():
        value = getattr(settings, field)
        if value:
            env[variable] = str(value)
    return env
