"""One settings object for the whole service.

Every knob lives here and is read from the environment (or a `.env` file in the
working directory). Secrets such as the bot token or an LLM key are only ever
taken from the environment, never from files in the repository.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
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
    dispatch: Literal["inline", "deployment"] = Field(
        default="inline",
        description=(
            "inline: the bot runs each flow in its own process (a named flow run on the server). "
            "deployment: the bot submits runs to the served deployments / work pool (scale-out)."
        ),
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
            "Unset: 90 with a remote model, 300 with the local one."
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

    # --- models (folder names under models_dir, local paths, or hub ids) ----
    embedding_model: str = Field(
        default="embeddinggemma-300m",
        description="Sentence-transformers model; its token embeddings make late chunking exact.",
    )
    embedding_query_prompt: str = "task: search result | query: "
    embedding_document_prompt: str = "title: none | text: "
    embedding_document_title_prompt: str = Field(
        default="title: {title} | text: ",
        description="Document prompt when the chunk's document title is known ({title}); EmbeddingGemma's format.",
    )
    embedding_max_tokens: int = 2048
    embedding_batch_size: int = 8
    embedding_dtype: Literal["float32", "bfloat16"] = Field(
        default="bfloat16",
        description="PyTorch weights' type (the torch runtime, and token embeddings for late chunking).",
    )
    embedding_runtime: Literal["torch", "onnx", "onnx-int8"] = Field(
        default="onnx-int8",
        description=(
            "What computes sentence vectors: the PyTorch model, or its ONNX export run by ONNX Runtime "
            "in fp32 or with int8 linear layers (nodes/embedding_runtime.py; bench/embedding_runtime.py)."
        ),
    )
    embedding_device: Literal["auto", "cpu", "cuda"] = Field(
        default="auto",
        description="Where embeddings run: auto takes a CUDA GPU when the runtime sees one.",
    )
    whisper_model: str = "whisper-base-ct2"
    whisper_compute_type: str = "int8"
    whisper_beam_size: int = 1
    cpu_threads: int = 2

    # --- LLM (any OpenAI-compatible endpoint; local llama-cpp-python without a key)
    llm_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("GROVE_LLM_API_KEY", "OPENROUTER_API_KEY"),
        description="Key for llm_base_url. Unset: the local model is served and used.",
    )
    llm_base_url: str = "https://openrouter.ai/api/v1"
    llm_model: str = "openai/gpt-4o-mini"
    llm_timeout: float | None = Field(
        default=None,
        description=(
            "Seconds one model call may take; unset: 120 for a remote model, 300 for the local one, whose "
            "2.4k-token consultation prompt plus 700 tokens takes 60-90 s on 2 idle cores and several times "
            "that on a busy machine (an abandoned local call is cancelled on the server, so a long limit "
            "costs nothing but the wait; the turn's deadline still comes first)."
        ),
    )
    llm_temperature: float = 0.3
    llm_max_tokens: int = 700
    llm_context_tokens: int = Field(
        default=32768,
        description="Context window of the remote model; requests are fitted to it (the local one uses local_llm_context).",
    )
    llm_retries: int = 3
    llm_retry_delays: list[float] = Field(default_factory=lambda: [2.0, 6.0, 15.0])
    local_llm_model: str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    local_llm_port: int = 8765
    local_llm_context: int = 4096
    stream_answers: bool = Field(
        default=True,
        description="Show the local model's answer in Telegram while it is written (one message, edited).",
    )
    stream_edit_interval: float = Field(
        default=1.5, description="Seconds between edits of a streamed answer (groups: at least 3)."
    )
    stream_first_chars: int = Field(
        default=40, description="Characters written before the streamed answer first appears."
    )
    local_llm_gpu_layers: int = Field(
        default=0,
        description="Layers of the local model offloaded to a GPU (-1: all); needs llama-cpp-python built with CUDA.",
    )
    local_llm_draft: Literal["", "prompt-lookup-decoding"] = Field(
        default="",
        description="Speculative decoding of the local model: prompt-lookup-decoding drafts tokens by copying "
                    "n-grams of the prompt (answers quote their fragments); '' for none. Chosen by "
                    "bench/answer_eval.py (configuration prompt-lookup).",
    )
    local_llm_draft_tokens: int = Field(default=10, description="Tokens drafted per step with local_llm_draft.")
    llm_tokenizer: str | None = Field(
        default=None, description="A GGUF file whose vocabulary counts tokens; unset: the local model's."
    )
    local_llm_url: str | None = Field(
        default=None, description="A running local llama-cpp-python server; unset: `grove up` starts one."
    )
    # How the local model writes answers (chat and consultation), chosen by bench/answer_eval.py.
    local_answer_temperature: float = Field(default=0.2, description="Sampling temperature of local answers.")
    local_answer_top_k: int = Field(default=40, description="llama.cpp top_k of local answers.")
    local_answer_min_p: float = Field(default=0.05, description="llama.cpp min_p of local answers.")
    local_answer_repeat_penalty: float = Field(
        default=1.1, description="llama.cpp repeat_penalty of local answers (1.0: off)."
    )
    local_answer_max_tokens: int = Field(
        default=320, description="Token limit of a local answer (a cut answer loses its unfinished sentence)."
    )
    local_answer_max_chars: int = Field(
        default=1500, description="A local answer longer than this is degenerate: the extractive answer is shown."
    )
    local_answer_fragments: int = Field(
        default=4, description="Fragments the local model answers from (at most; fitted to its window)."
    )
    local_answer_context: Literal["fragments", "passages"] = Field(
        default="fragments",
        description=("What the local model reads: the retrieved fragments whole, or only the passages of "
                     "them the quote selector chose (shorter prompt, the quote is what it read)."),
    )
    local_prompt_style: Literal["short", "full", "exact"] = Field(
        default="short", description="Rules of the answer template for the local model (prompts/answer_parts.yaml)."
    )
    local_answer_quote: bool = Field(
        default=True,
        description=("A local answer from fragments ends with the passage that backs it, quoted "
                     "(nodes/quote.py; bench/quote_eval.py and bench/answer_eval.py)."),
    )
    quote_selector: str = Field(
        default="meaning", description="How quoted sentences are chosen (nodes/quote.py SELECTORS)."
    )

    # --- retrieval -----------------------------------------------------------
    retrieval_first_stage: Literal["hybrid", "vector"] = Field(
        default="vector",
        description=(
            "hybrid: HNSW and Postgres full-text search fused by reciprocal rank in one query; "
            "vector: HNSW alone. hybrid won on the natural-question sets but lost on the Debian set, so the "
            "default is vector (bench/retrieval_eval.py, bench/README.md)."
        ),
    )
    retrieval_candidates: int = 30
    retrieval_top_k: int = 10
    hnsw_ef_search: int = 100
    reranker: str = Field(
        default="bm25-fusion",
        description=(
            "none, bm25-fusion (nodes/rerankers), or a CrossEncoder model (path or hub id). "
            "bm25-fusion gave the best mean MRR@10 and hit@10 over the three sets of bench/retrieval_eval.py."
        ),
    )
    search_gate_score: str = Field(
        default="distance",
        description="What the local model's search gate scores (nodes/search_gate.py GATE_SCORES).",
    )
    search_gate_threshold: float = Field(
        default=0.575,
        description=(
            "The local model answers from the fragments when the gate's score passes this "
            "(for `distance`: the best fragment's cosine distance is at most this); the best mean of "
            "(own questions passing − other questions passing) over three sets in bench/search_gate.py."
        ),
    )
    search_followup_words: int = Field(
        default=4, description="A follow-up question this short is searched together with the previous question."
    )
    history_pairs: int = 15
    repeat_similarity: float = Field(
        default=0.85, description="Conversation guard / anti-repetition: texts this similar count as repeats."
    )
    do_not_repeat_count: int = Field(default=3, description="The bot's recent replies shown as not to repeat.")

    # --- consultation (seeds 000, 002): on when a domain profile is named -----
    domain_profile: str | None = Field(
        default=None,
        description=(
            "A domain profile (a name under prompts/domains, e.g. `berries`, or a YAML path). "
            "Set: chat questions go through the consultation flow. Unset: the plain chat flow."
        ),
    )
    culture_detection: Literal["llm", "keywords"] = Field(
        default="llm", description="llm: the model classifies (keywords when it answers off-list)."
    )
    qa_distance_threshold: float = Field(default=0.6, description="Tier 1: approved Q&A, cosine distance <.")
    qa_limit: int = 20
    doc_distance_threshold: float = Field(default=0.75, description="Tier 2: library chunks, cosine distance <.")
    doc_limit: int = 30
    consultation_max_clarifications: int = Field(
        default=3, description="Stall guard: after this many clarification turns the bot answers anyway."
    )
    consultation_fragment_tokens: int = Field(
        default=2400,
        description="Fragments go into the prompt in tier order up to this many tokens (never past the model's window).",
    )
    topic_idle_minutes: int = Field(
        default=120, description="A topic untouched this long is closed; the next question opens a new one."
    )

    # --- complex questions (seed 004) ----------------------------------------
    planner: Literal["auto", "off"] = Field(
        default="auto", description="auto: analytical / iterative / diagnostic questions run as a plan."
    )
    planner_max_steps: int = 8
    planner_max_iterations: int = Field(default=3, description="Rounds of plan adaptation at most.")
    planner_token_budget: int = Field(
        default=3500, description="Tokens per step's prompt + response (the local model's context is 4,096)."
    )
    planner_response_tokens: int = 512
    planner_search_top_k: int = 5

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
    ocr_command: str = Field(default="tesseract", description="OCR engine for scans and photos (nodes/ocr.py).")
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
    def uses_local_llm(self) -> bool:
        return self.llm_api_key is None

    @property
    def call_timeout(self) -> float:
        """The limit of one model call (`llm_timeout`, else the measured default of the endpoint)."""
        if self.llm_timeout is not None:
            return self.llm_timeout
        return 300.0 if self.uses_local_llm else 120.0

    @property
    def chat_deadline(self) -> float:
        """The overall time a chat turn may take (see `turn_deadline`)."""
        if self.turn_deadline is not None:
            return self.turn_deadline
        return 300.0 if self.uses_local_llm else 90.0

    @property
    def bot_token(self) -> str | None:
        return self.telegram_bot_token.get_secret_value() if self.telegram_bot_token else None


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
