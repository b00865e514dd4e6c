"""The settings of what answers are made of: the models, the LLM, retrieval, consultation, plans.

A part of :class:`grove.core.settings.Settings` (its base class), apart so each module stays one
screen of concerns: the service's places, servers and Telegram there, the answering knobs here.
Read from the environment as ``GROVE_<NAME>`` like every other setting.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, Field, SecretStr


class AnsweringSettings(BaseModel):
    """Models, the LLM endpoint and the local model's answers, retrieval, consultation and plans."""

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
    embedding_runtime: Literal["torch", "onnx", "onnx-auto", "onnx-int8", "onnx-int8-reduced", "onnx-u8u8"] = Field(
        default="onnx-auto",
        description=(
            "What computes sentence vectors: the PyTorch model, or its ONNX export run by ONNX Runtime "
            "in fp32 or with int8 linear layers. onnx-auto runs the int8 kind that this CPU keeps close to "
            "fp32 (checked once per CPU), else fp32; onnx-int8 (int8 weights) saturates on CPUs without VNNI, "
            "onnx-int8-reduced (7-bit weights) and onnx-u8u8 (uint8 weights) do not "
            "(nodes/embedding/int8_verdict.py; bench/int8_probe.py)."
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
            "Seconds one model call may take; unset: 120 for a remote model; for the local one what its "
            "measured speed says the prompt needs (nodes/answering/model_speed.py), else 300, as its "
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
    stream_drafts: bool = Field(
        default=True,
        description=("In private chats, stream through Telegram's own animated drafts (sendMessageDraft, "
                     "Bot API 9.3+), the final answer sent once; off, or where the server refuses drafts, "
                     "and in groups: one message, edited."),
    )
    stream_edit_interval: float = Field(
        default=1.5, description="Seconds between edits of a streamed answer (groups: at least 3)."
    )
    stream_first_chars: int = Field(
        default=40, description="Characters written before the streamed answer first appears."
    )
    stream_first_delay: float = Field(
        default=1.0,
        description=("Seconds into a turn before anything is streamed (the draft placeholder, the first "
                     "words): an answer whole by then is sent as one message (the «печатает…» indicator waits the "
                     "same second). "
                     "The local model's first words come later than this anyway."),
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
    local_llm_chat_format: str = Field(
        default="chatml",
        description=("The local server's chat template (llama-cpp-python `--chat_format`). `chatml`: the model "
                     "reads the documents as written. `chatml-function-calling` escapes every message as HTML "
                     "(the model read `&#34;` and wrote it into answers); grove sends the local model no tools."),
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
    local_general_max_tokens: int = Field(
        default=120,
        description=("Token limit of a local answer from general knowledge (no fragments): the model wrote its "
                     "whole 320 tokens there, minutes on a busy machine, for an answer said not to be the "
                     "documents'."),
    )
    local_prompt_tokens_per_s: float = Field(
        default=40.0,
        description=("Prompt tokens the local model reads per second, guessed until its first answer is timed "
                     "(nodes/answering/model_speed.py); 95 on 2 idle AVX2 cores, a third of it beside busy work."),
    )
    local_tokens_per_s: float = Field(
        default=5.0, description="Tokens the local model writes per second, guessed until its first answer is timed."
    )
    local_call_cap: float = Field(
        default=900.0,
        description=("The longest a local model call may be given, however slow the machine is measured to be; "
                     "also the longest a chat turn's deadline may be moved for its calls (a plan makes several)."),
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
    local_answer_opening: int = Field(
        default=0,
        description=("Words of a streamed local answer's opening, written from the best quoted passage before "
                     "the whole fragments are read (nodes/answering/opening.py); 0: one request. Off by "
                     "default: first words in ~4.7 s instead of ~16.5 s, but measured less often right "
                     "(bench/README.md, «Offline answers end to end»)."),
    )
    local_answer_strict: bool = Field(
        default=True,
        description=("A local draft naming a command, a name or a number that neither the question nor any shown "
                     "fragment has, or most of whose sentences no fragment backs, is replaced by the fragments' "
                     "own words (nodes/answering/answer_check.py `invents`, `unsupported`)."),
    )
    local_answer_reask: bool = Field(
        default=True,
        description=("A local draft that refuses («об этом не сказано») or fails the answer checks over fragments "
                     "the gate passed is asked again from the passages that answer the question alone; the "
                     "second draft is shown only when it passes the checks (flows/chat.py `reasked`)."),
    )
    local_answer_judge: float = Field(
        default=0.55,
        description=("Before a local draft over fragments the gate passed, the model is asked whether the passages "
                     "to be quoted answer the question (nodes/answering/answer_judge.py). Below this probability "
                     "of «да» the passages are shown as only the nearest, with no draft; at or above it a refusal "
                     "over them is overruled. 0 turns the judgment off. Chosen on the gate-passed questions of "
                     "sets AA–AD (bench/README.md, «Whether the passages answer»)."),
    )
    local_answer_judge_near: float = Field(
        default=0.8,
        description=("In the search gate's near band the same judgment: at or above this probability the model "
                     "drafts from the nearest passages as past the gate, below it they are shown as the nearest "
                     "with no draft. Beyond the band (the gate shut) a question is judged too: at or above "
                     "`local_answer_judge_far` the model drafts from the passages; below it, at `local_answer_judge` or "
                     "above, it shows them as the nearest, and below that answers from general knowledge. 0 turns it "
                     "off. Chosen on the near band of sets AA–AD: 2 of 10 answering questions drafted, 1 of 17 silent "
                     "ones (bench/README.md, «Whether the passages answer»)."),
    )
    local_answer_judge_far: float = Field(
        default=0.75,
        description=("Beyond the near band (the gate shut, the question asks) the model drafts from the passages at "
                     "or above this probability, in place of `local_answer_judge_near`'s odds (below it, the nearest "
                     "passages or a general answer, as there): a question in the user's own words sits far from the "
                     "passage that answers it. Chosen on the shut questions of the development sets through BJ: 23 "
                     "of 60 answering ones drafted against 17 at 0.8, for 1 more of 130 silent (bench/README.md, "
                     "«Whether the passages answer»)."),
    )
    local_fallback_judge: float = Field(
        default=0.9,
        description=("After a local draft failed the answer checks by saying what the passages do not (a command, a "
                     "key, sentences, a yes or the question's terms no fragment holds: answer_check.py "
                     "`INVENTING_CHECKS`), its passages are led as the documents' answer only at or above this "
                     "probability of «да» (below it, as the nearest): a draft from the model's own knowledge is a "
                     "sign they do not answer. Over the development runs of sets BC–BX, at 0.7 the passages of 8 "
                     "silent questions were led as the answer after such a draft (judged 0.71–0.87), and of 5 "
                     "answerable ones whose passage held the fact (0.71–0.88); none was judged 0.9 or more "
                     "(bench/README.md, «Whether the passages answer»)."),
    )
    local_prompt_style: Literal["short", "full", "exact"] = Field(
        default="short", description="Rules of the answer template for the local model (prompts/answer_parts.yaml)."
    )
    local_answer_quote: bool = Field(
        default=True,
        description=("A local answer from fragments ends with the passage that backs it, quoted "
                     "(nodes/answering/quote.py; bench/quote_eval.py and bench/answer_eval.py)."),
    )
    quote_selector: str = Field(
        default="meaning", description="How quoted sentences are chosen (nodes/answering/quote.py SELECTORS)."
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
            "none, bm25-fusion (nodes/retrieval/rerankers), or a CrossEncoder model (path or hub id). "
            "bm25-fusion gave the best mean MRR@10 and hit@10 over the three sets of bench/retrieval_eval.py."
        ),
    )
    search_gate_score: str = Field(
        default="distance",
        description="What the local model's search gate scores (nodes/retrieval/search_gate.py GATE_SCORES).",
    )
    search_gate_threshold: float = Field(
        default=0.625,
        description=(
            "The local model answers from the fragments when the gate's score passes this "
            "(for `distance`: the best fragment's cosine distance is at most this) and the question names "
            "nothing the base lacks. 0.625, the near band's edge, since the unknown things shut the gate on "
            "questions the documents do not answer: chosen on the development sets of bench/answerability.py "
            "(0.575 before, by bench/search_gate.py against other sets' questions)."
        ),
    )
    search_gate_near: float = Field(
        default=0.625,
        description=(
            "The near band's edge: a score past the threshold but within this shows the nearest passages "
            "with their sources, said to be the nearest, and no model answer (set it to the threshold to "
            "turn the band off). No small talk or general question passed it on any store of "
            "bench/search_gate.py; 94–100 % of each set's own questions do."
        ),
    )
    search_gate_everyday_zipf: float = Field(
        default=3.5,
        description=(
            "A Russian word the base lacks is an everyday word (the user's own wording, not a thing the "
            "documents would name) when wordfreq puts it at this Zipf frequency or above (3.5: about 3 per "
            "million words; «кусок» 4.3, «десяток» 3.9, «макрос» 2.3, «гибернация» 1.6). Chosen with "
            "`search_gate_everyday_overlap` on the development sets of bench/answerability.py."
        ),
    )
    search_gate_everyday_overlap: float = Field(
        default=0.6,
        description=(
            "Everyday words the base lacks do not shut the gate when one fragment holds at least this share "
            "of the question's content lemmas (0.5 opened 14 answerable and 4 silent questions of the "
            "development sets, 0.6 opened 7 and none; bench/answerability.py)."
        ),
    )
    local_unfounded_terms: int = Field(
        default=2,
        description=(
            "A local draft that states this many of the question's terms no shown fragment holds, while no "
            "fragment sentence covers the question, is not shown (nodes/answering/answer_check.py `_unfounded`; "
            "bench/answer_eval.py measured 1 and 2)."
        ),
    )
    search_gate_unknown_things: bool = Field(
        default=True,
        description=(
            "The gate stays shut for a question that names a thing (a noun, a Latin token) no chunk of the "
            "user's base contains: its nearest passages are shown as the nearest, with that said "
            "(nodes/retrieval/base_vocabulary.py; bench/answerability.py measured the separation)."
        ),
    )
    search_gate_synonym_line: float = Field(
        default=0.86,
        description=(
            "In the near band, a word the base lacks is the user's word for one the shown passages use "
            "(«скрин» for «снимок», «мышка» for «мыши») and does not shut the gate when its nearest word of "
            "those passages has at least this embedding cosine (nodes/retrieval/synonyms.py). 0.86 opened 10 "
            "of 32 answerable near-band questions and none of 46 silent ones over the AM–AT dumps "
            "(bench/missing_words.py); above 1 turns it off."
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

    @property
    def uses_local_llm(self) -> bool:
        return self.llm_api_key is None

    @property
    def call_timeout(self) -> float:
        """The limit of one model call (`llm_timeout`, else the measured default of the endpoint)."""
        if self.llm_timeout is not None:
            return self.llm_timeout
        return 300.0 if self.uses_local_llm else 120.0
