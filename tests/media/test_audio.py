"""Media as audio for Whisper (`nodes.ingestion.media.audio`), on WAV files written here with
numpy and the stdlib `wave` module: probing without decoding, 16 kHz mono windows, quiet cuts,
and the refusals of empty, broken and too long files."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from grove.core.ingest_types import IngestError
from nodes.ingestion.media.audio import (
    MSG_UNREADABLE,
    SAMPLE_RATE,
    iter_audio_windows,
    probe_media,
    quiet_cut,
)


def _wav(path: Path, seconds: float, *, rate: int = 8000, channels: int = 2, hz: float = 440.0) -> Path:
    t = np.arange(int(seconds * rate)) / rate
    tone = (np.sin(2 * np.pi * hz * t) * 12000).astype(np.int16)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(np.repeat(tone, channels).tobytes())
    return path


def test_probing_reads_the_container_without_decoding(tmp_path: Path) -> None:
    info = probe_media(_wav(tmp_path / "tone.wav", 3.0), max_seconds=60)
    assert info.duration_seconds == pytest.approx(3.0, abs=0.01)
    assert (info.has_audio, info.has_video, info.container) == (True, False, "wav")
    assert (info.audio_codec, info.sample_rate, info.channels) == ("pcm_s16le", 8000, 2)


def test_too_long_media_is_refused_with_both_lengths(tmp_path: Path) -> None:
    with pytest.raises(IngestError) as caught:
        probe_media(_wav(tmp_path / "tone.wav", 3.0), max_seconds=2)
    assert caught.value.user_message == "Запись слишком длинная (0:03); можно не длиннее 0:02."
    assert "exceeds max_media_seconds=2" in caught.value.reason


def test_empty_and_broken_files_are_unreadable_and_a_missing_one_is_not_found(tmp_path: Path) -> None:
    empty = tmp_path / "empty.ogg"
    empty.write_bytes(b"")
    garbage = tmp_path / "garbage.mp3"
    garbage.write_bytes(np.random.default_rng(3).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    for path in (empty, garbage):
        with pytest.raises(IngestError) as caught:
            probe_media(path)
        assert caught.value.user_message == MSG_UNREADABLE
    with pytest.raises(FileNotFoundError):
        probe_media(tmp_path / "nowhere.wav")


def test_windows_are_16_khz_mono_and_hard_cut_without_a_quiet_search(tmp_path: Path) -> None:
    windows = list(iter_audio_windows(_wav(tmp_path / "tone.wav", 2.5), window_seconds=1.0,
                                      quiet_search_seconds=0))
    assert [w.offset for w in windows] == [0.0, 1.0, 2.0]
    assert [len(w.audio) for w in windows[:2]] == [SAMPLE_RATE, SAMPLE_RATE]
    assert len(windows[2].audio) == pytest.approx(SAMPLE_RATE / 2, abs=64)
    assert all(w.audio.dtype == np.float32 for w in windows)
    assert all(w.audio.ndim == 1 for w in windows)  # stereo mixed down to one channel
    mono = list(iter_audio_windows(_wav(tmp_path / "mono.wav", 1.5, channels=1), window_seconds=1.0,
                                   quiet_search_seconds=0))
    assert float(np.abs(mono[0].audio).max()) == pytest.approx(12000 / 32768, rel=0.05)  # float in [-1, 1]


def test_overlapping_windows_repeat_exactly_the_overlap(tmp_path: Path) -> None:
    windows = list(iter_audio_windows(_wav(tmp_path / "tone.wav", 2.5), window_seconds=1.0, overlap_seconds=0.25,
                                      quiet_search_seconds=0))
    # the third window ends with the file; its last 0.25 s, already yielded, makes no fourth
    assert [w.offset for w in windows] == [0.0, 0.75, 1.5]
    np.testing.assert_array_equal(windows[0].audio[-4000:], windows[1].audio[:4000])


def test_window_settings_that_cannot_work_are_refused(tmp_path: Path) -> None:
    path = _wav(tmp_path / "tone.wav", 1.0)
    with pytest.raises(ValueError, match="window_seconds must be positive"):
        next(iter_audio_windows(path, window_seconds=0))
    with pytest.raises(ValueError, match="overlap_seconds"):
        next(iter_audio_windows(path, window_seconds=1.0, overlap_seconds=0.5, quiet_search_seconds=0))


def test_decoding_stops_when_more_audio_than_allowed_turns_up(tmp_path: Path) -> None:
    with pytest.raises(IngestError) as caught:
        list(iter_audio_windows(_wav(tmp_path / "tone.wav", 3.0), window_seconds=1.0, quiet_search_seconds=0,
                                max_seconds=2.0))
    assert caught.value.user_message.startswith("Запись слишком длинная")


def test_the_quiet_cut_is_the_middle_of_the_quietest_half_second_near_the_end() -> None:
    audio = np.full(20 * SAMPLE_RATE, 0.5, dtype=np.float32)
    audio[14 * SAMPLE_RATE : 15 * SAMPLE_RATE] = 0.0  # a second of silence inside the last 10 s
    cut = quiet_cut(audio)
    assert 14 * SAMPLE_RATE + SAMPLE_RATE // 4 <= cut <= 15 * SAMPLE_RATE - SAMPLE_RATE // 4
    audio[3 * SAMPLE_RATE : 4 * SAMPLE_RATE] = 0.0  # silence before the last 10 s is not looked at
    assert quiet_cut(audio) == cut


def test_among_equal_blocks_the_latest_wins_and_short_audio_is_not_cut() -> None:
    silence = np.zeros(12 * SAMPLE_RATE, dtype=np.float32)
    assert quiet_cut(silence) == len(silence) - SAMPLE_RATE // 4  # the last block's middle
    short = np.ones(SAMPLE_RATE // 4, dtype=np.float32)
    assert quiet_cut(short) == len(short)
