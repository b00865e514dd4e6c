"""Media as audio for Whisper: probing a container (PyAV, no decoding), then decoding its audio
stream frame by frame, resampled to 16 kHz mono float32, in windows of about `window_seconds`
cut at the quietest 0.5 s of their last ~10 s. Only one window is ever held, so a two-hour file
costs as much memory as a ten-minute one. No, unreadable or too long audio fails early with an
`IngestError` whose Russian message is shown to the user.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import av
import numpy as np

from grove.core.settings import DEFAULTS
from grove.core.ingest_types import IngestError

SAMPLE_RATE = 16_000  # what Whisper expects
MAX_MEDIA_SECONDS = DEFAULTS.max_media_seconds
DEFAULT_WINDOW_SECONDS = 600.0
QUIET_SEARCH_SECONDS = 10.0  # look for a cut point in the last this-many seconds of a window
QUIET_BLOCK_SECONDS = 0.5  # ... as the 0.5 s block with the lowest energy
QUIET_HOP_SECONDS = 0.05

MSG_NO_AUDIO = "В файле нет звуковой дорожки"
MSG_NO_SPEECH = "В записи не удалось распознать речь"
MSG_UNREADABLE = "Не удалось прочитать медиафайл: он повреждён или в неподдерживаемом формате."


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
    path: str | os.PathLike[str], *, require_audio: bool = True, max_seconds: float = MAX_MEDIA_SECONDS
) -> MediaInfo:
    """Read container metadata with PyAV.

    Raises IngestError when the file is unreadable, has no audio stream (unless
    `require_audio=False`) or is longer than `max_seconds` (the settings' `max_media_seconds`, which
    transcription hands; by default the settings' default).
    """
    limit = max_seconds
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
            resampler: av.AudioResampler | None = None
            setup = None
            for frame in _decoded_frames(container, stream, path):
                key = (frame.format.name, frame.layout.name, frame.sample_rate)
                if resampler is None or key != setup:  # first frame, or the stream changed its format
                    if resampler is not None:
                        yield from resampler.resample(None)
                    resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
                    setup = key
                yield from resampler.resample(frame)
            if resampler is not None:
                yield from resampler.resample(None)  # flush

        for out in frames():
            # packed float32 mono: one plane (a view, no copy; to_ndarray is 3x slower)
            data = np.frombuffer(memoryview(out.planes[0]), dtype=np.float32, count=out.samples)
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
