"""Transcription node: real Russian speech (Festival) through PyAV and faster-whisper.

Media is generated once per session (tests/support/speech.py) into a temp dir. Plain
functions are tested, not the Prefect task, so no Prefect server is needed. Tests that
run Whisper need the bundled model (`make models`); speech needs Debian packages
`festival` and `festvox-ru`.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from grove.core.settings import PROJECT_ROOT, reset_settings
from nodes.ingestion import transcribe as tr
from nodes.ingestion.media import audio, transcript
from grove.core.ingest_types import ExtractedDocument, IngestError, Segment
from tests.support import speech
from tests.support.prerequisites import require

SENTENCE = (
    "Завтра утром мы поедем в библиотеку и возьмём несколько интересных книг об истории города."
)
PHRASE_A = "Москва является столицей России и крупнейшим городом страны."
PHRASE_B = "Погода сегодня хорошая, поэтому вечером мы пойдём гулять в парк."
PHRASE_C = "Мой друг работает врачом в большой больнице и очень любит свою работу."
AT_A, AT_B, AT_C, LONG_SECONDS = 2.0, 56.0, 150.0, 180.0  # B straddles the 60 s window edge

BUNDLED_WHISPER = PROJECT_ROOT / ".grove" / "models" / "whisper-base-ct2"
RTFS: list[float] = []  # real-time factors of this session's transcriptions


# ----------------------------------------------------------------------------- helpers


def words(text: str) -> list[str]:
    return re.findall(r"[a-zа-я0-9]+", text.lower().replace("ё", "е"))


def content_words(text: str) -> set[str]:
    """Normalised words of 4+ letters: drops prepositions and particles such as "в", "мы", "об"."""
    return {w for w in words(text) if len(w) >= 4}


def recall(said: str, heard: str) -> float:
    expected = content_words(said)
    return len(expected & set(words(heard))) / len(expected)


def assert_heard(said: str, doc: ExtractedDocument, at_least: float = 0.6) -> None:
    score = recall(said, doc.text)
    print(f"\nsaid:  {said}\nheard: {doc.text}\nrecall {score:.0%}, meta {doc.meta}")
    assert score >= at_least, f"heard {doc.text!r} for {said!r} ({score:.0%} of content words)"


def assert_timeline(doc: ExtractedDocument) -> None:
    assert doc.segments, "no segments"
    assert doc.duration_seconds and doc.duration_seconds > 0
    starts = [s.start for s in doc.segments]
    assert starts == sorted(starts), starts
    for seg in doc.segments:
        assert 0 <= seg.start <= seg.end <= doc.duration_seconds + 0.01, seg
        assert seg.text.strip()


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("speech")


@pytest.fixture(scope="session")
def tts(media_dir: Path):
    """speak(text, name) -> 16 kHz float32 samples, cached per name for the session."""
    require(speech.festival_missing())
    cache: dict[str, np.ndarray] = {}

    def speak(text: str, name: str) -> np.ndarray:
        if name not in cache:
            cache[name] = speech.speak(text, media_dir, name)
        return cache[name]

    return speak


@pytest.fixture(scope="session")
def voice_ogg(tts, media_dir: Path) -> Path:
    """A Telegram-like voice message: OGG/Opus, 48 kHz mono."""
    return speech.write_audio(media_dir / "voice.ogg", speech.chunked(tts(SENTENCE, "sentence")))


@pytest.fixture(scope="session")
def video_mp4(tts, media_dir: Path) -> Path:
    """A Telegram-like video: MP4 with H.264 (black) and AAC, speech after a short pause."""
    samples = np.concatenate([speech.silence(1.0), tts(PHRASE_C, "phrase_c"), speech.silence(1.0)])
    return speech.write_video(media_dir / "video.mp4", samples)


@pytest.fixture(scope="session")
def long_ogg(tts, media_dir: Path) -> Path:
    """Three minutes: three phrases in silence, one of them across the 60 s window edge."""
    samples = speech.place(
        [
            (AT_A, tts(PHRASE_A, "phrase_a")),
            (AT_B, tts(PHRASE_B, "phrase_b")),
            (AT_C, tts(PHRASE_C, "phrase_c")),
        ],
        LONG_SECONDS,
    )
    return speech.write_audio(media_dir / "long.ogg", speech.chunked(samples))


@pytest.fixture(scope="session")
def memory_ogg(tts, media_dir: Path) -> Path:
    """Twenty minutes of speech and pauses, encoded as a stream (never built whole).

    Opus at 16 kHz, 60 ms frames, complexity 0: quick to encode and decode; the decoder
    path (Opus -> 48 kHz -> resampled to 16 kHz) is the same as for voice messages."""
    unit = np.concatenate([tts(SENTENCE, "sentence"), speech.silence(3.0)])
    return speech.write_audio(
        media_dir / "twenty_minutes.ogg",
        speech.repeated(unit, 20 * 60),
        out_rate=16_000,
        bit_rate=16_000,
        options={"compression_level": "0", "frame_duration": "60"},
    )


@pytest.fixture(scope="session")
def whisper() -> Iterator[object]:
    """The real model: the bundled folder of the checkout (conftest moves GROVE_DATA_DIR)."""
    previous = os.environ.get("GROVE_WHISPER_MODEL")
    if previous is None:
        if not (BUNDLED_WHISPER / "model.bin").is_file():
            require("whisper-base-ct2 not installed: run `make models`")
        os.environ["GROVE_WHISPER_MODEL"] = str(BUNDLED_WHISPER)
    reset_settings()
    yield tr.get_whisper()
    if RTFS:
        print(f"\nwhisper real-time factors {RTFS}, median {statistics.median(RTFS):.3f}")
    if previous is None:
        os.environ.pop("GROVE_WHISPER_MODEL", None)
    reset_settings()


def transcribe(path: Path, **kwargs) -> ExtractedDocument:
    kwargs = {"source_type": "voice", "source_identifier": path.name, **kwargs}
    doc = tr.transcribe_media(path, **kwargs)
    RTFS.append(float(doc.meta["rtf"]))
    return doc


# ----------------------------------------------------------------------------- with Whisper


@pytest.mark.models
def test_voice_message_in_russian(whisper, voice_ogg: Path) -> None:
    info = audio.probe_media(voice_ogg)
    assert (info.container, info.audio_codec) == ("ogg", "opus")
    assert info.has_audio and not info.has_video
    doc = transcribe(voice_ogg)
    assert_heard(SENTENCE, doc)
    assert_timeline(doc)
    assert doc.source_type == "voice" and doc.source_identifier == "voice.ogg"
    assert abs(doc.duration_seconds - info.duration_seconds) < 0.1
    assert doc.meta["language"] == "ru"
    assert doc.meta["language_rule"] in ("detected", "ru-preferred")
    assert 0 < doc.meta["language_probability"] <= 1
    assert doc.meta["rtf"] > 0
    assert doc.text.startswith("[00:00] ")
    assert transcript.render_transcript(doc.segments).text == doc.text


@pytest.mark.models
def test_video_with_audio_track(whisper, video_mp4: Path) -> None:
    info = audio.probe_media(video_mp4)
    assert info.has_video and info.audio_codec == "aac"
    doc = tr.transcribe_media(video_mp4, source_type="video", source_identifier="v1", language="ru")
    RTFS.append(float(doc.meta["rtf"]))
    assert_heard(PHRASE_C, doc)
    assert_timeline(doc)
    assert doc.meta["language_rule"] == "given" and doc.meta["has_video"] is True
    assert 0.5 <= doc.segments[0].start <= 2.0  # speech begins after the 1 s pause


@pytest.mark.models
def test_long_media_windows_keep_the_timeline(whisper, long_ogg: Path) -> None:
    calls: list[tuple[float, float]] = []
    doc = transcribe(long_ogg, window_seconds=60, progress=lambda d, t: calls.append((d, t)))
    timeline = [(s.start, s.end, s.text) for s in doc.segments]
    print(f"\n{doc.text}\nsegments {timeline}\nmeta {doc.meta}")
    assert_timeline(doc)
    assert abs(doc.duration_seconds - LONG_SECONDS) < 0.5
    assert doc.meta["windows"] >= 3
    # progress: once per window, never backwards, ends at the total
    assert len(calls) == doc.meta["windows"]
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert abs(calls[-1][0] - calls[-1][1]) < 0.5 and abs(calls[-1][1] - LONG_SECONDS) < 0.5

    def find(phrase: str) -> list[Segment]:
        wanted = content_words(phrase)
        return [s for s in doc.segments if len(wanted & set(words(s.text))) >= 2]

    for phrase, at in ((PHRASE_A, AT_A), (PHRASE_B, AT_B), (PHRASE_C, AT_C)):
        found = find(phrase)
        assert found, f"{phrase!r} not heard in {doc.text!r}"
        assert abs(found[0].start - at) <= 2.5, (phrase, found)
        assert recall(phrase, " ".join(s.text for s in found)) >= 0.6, found
    # the phrase across the 60 s edge was not cut in two or heard twice
    assert len(find(PHRASE_B)) == 1, find(PHRASE_B)
    assert doc.text.count("[02:") == 1  # the paragraph of phrase C carries its time


@pytest.mark.models
@pytest.mark.parametrize("kind", ["silence", "noise"])
def test_no_speech_is_a_russian_error(whisper, media_dir: Path, kind: str) -> None:
    samples = speech.silence(20) if kind == "silence" else speech.noise(20)
    path = speech.write_audio(media_dir / f"{kind}.ogg", speech.chunked(samples))
    with pytest.raises(IngestError) as err:
        transcribe(path)
    assert err.value.user_message == "В записи не удалось распознать речь"
    assert "no speech" in err.value.reason


# ----------------------------------------------------------------------------- without Whisper


def test_video_without_audio_is_rejected(media_dir: Path) -> None:
    path = speech.write_video(media_dir / "mute.mp4", None, seconds=2)
    with pytest.raises(IngestError) as err:
        audio.probe_media(path)
    assert err.value.user_message == "В файле нет звуковой дорожки"
    assert audio.probe_media(path, require_audio=False).has_audio is False
    with pytest.raises(IngestError) as err:
        tr.transcribe_media(path, source_type="video", source_identifier="mute")
    assert err.value.user_message == "В файле нет звуковой дорожки"
    with pytest.raises(IngestError):
        list(audio.iter_audio_windows(path))


@pytest.mark.parametrize("kind", ["garbage", "ogg-header", "empty"])
def test_corrupt_file_is_rejected(media_dir: Path, kind: str) -> None:
    path = media_dir / f"corrupt-{kind}.ogg"
    rng = np.random.default_rng(5)
    body = rng.integers(0, 256, 40_000, dtype=np.uint8).tobytes()
    path.write_bytes({"garbage": body, "ogg-header": b"OggS\x00\x02" + body, "empty": b""}[kind])
    with pytest.raises(IngestError) as err:
        tr.transcribe_media(path, source_type="audio", source_identifier=path.name)
    assert err.value.user_message in (audio.MSG_UNREADABLE, audio.MSG_NO_AUDIO)
    if kind != "ogg-header":
        assert err.value.user_message == audio.MSG_UNREADABLE
    with pytest.raises(IngestError):
        list(audio.iter_audio_windows(path))


def test_too_long_media_is_rejected(voice_ogg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(IngestError) as err:
        audio.probe_media(voice_ogg, max_seconds=3)
    assert "слишком длинная" in err.value.user_message
    with pytest.raises(IngestError):  # headers can lie: the decoder counts as well
        list(audio.iter_audio_windows(voice_ogg, window_seconds=60, max_seconds=3))
    monkeypatch.setenv("GROVE_MAX_MEDIA_SECONDS", "3")
    reset_settings()
    try:
        with pytest.raises(IngestError):  # rejected before any model is needed
            tr.transcribe_media(voice_ogg, source_type="voice", source_identifier="v")
    finally:
        monkeypatch.undo()
        reset_settings()


def test_windows_are_cut_in_quiet_places_and_cover_everything(media_dir: Path) -> None:
    """Exact check of the incremental decoder on PCM: windows tile the signal sample for
    sample, cuts land in the pauses, overlap repeats exactly `overlap_seconds`."""
    rate, total = speech.TTS_RATE, 130.0
    rng = np.random.default_rng(1)
    pcm = (rng.standard_normal(int(total * rate)) * 3000).astype(np.int16)
    for a, b in ((53.0, 54.0), (108.0, 109.0)):  # pauses inside the last 10 s of each window
        pcm[int(a * rate) : int(b * rate)] = 0
    path = speech.write_wav(media_dir / "tiles.wav", pcm)
    signal = pcm.astype(np.float32) / 32768

    windows = list(audio.iter_audio_windows(path, window_seconds=60))
    offsets = [w.offset for w in windows]
    assert len(windows) == 3, offsets
    assert 53.25 <= offsets[1] <= 53.75 and 108.25 <= offsets[2] <= 108.75, offsets
    joined = np.concatenate([w.audio for w in windows])
    assert len(joined) == len(signal)
    np.testing.assert_allclose(joined, signal, atol=1e-4)

    windows = list(audio.iter_audio_windows(path, window_seconds=60, overlap_seconds=2))
    for prev, cur in zip(windows, windows[1:]):
        assert abs(prev.offset + len(prev.audio) / rate - cur.offset - 2.0) < 1e-6
    for w in windows:
        start = round(w.offset * rate)
        np.testing.assert_allclose(w.audio, signal[start : start + len(w.audio)], atol=1e-4)
    assert round(windows[-1].offset * rate) + len(windows[-1].audio) == len(signal)


RSS_PROBE = """
import re, sys
from nodes.ingestion.media.audio import iter_audio_windows

def status(field):
    with open("/proc/self/status") as fh:
        return int(re.search(field + r":\\s+(\\d+) kB", fh.read()).group(1))

with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")  # reset the RSS high-water mark: imports' peak must not count
before_kib = status("VmRSS")
n = 0
for window in iter_audio_windows(sys.argv[1], window_seconds=60):
    n += len(window.audio)
    del window  # as transcribe_media does: the decoder can then reuse the memory
print(before_kib, status("VmHWM"), n)
"""


def test_decoding_memory_is_bounded_by_the_window(memory_ogg: Path) -> None:
    """A 20-minute file decodes in 60 s windows with memory of a few windows, not of the file.

    Two measures: tracemalloc's peak in this process (numpy buffers: what grows with the
    window), and, in a fresh process, the RSS high-water mark during decoding minus the
    RSS just before it (everything, FFmpeg's buffers and first-touched code included)."""
    info = audio.probe_media(memory_ogg)
    assert 1195 <= info.duration_seconds <= 1205
    whole_mb = info.duration_seconds * audio.SAMPLE_RATE * 4 / 1e6  # float32 mono 16 kHz
    decoded = 0
    started = time.perf_counter()
    tracemalloc.start()
    try:
        for window in audio.iter_audio_windows(memory_ogg, window_seconds=60):
            decoded += len(window.audio)
            del window  # as transcribe_media does: the decoder can then reuse the memory
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    seconds = time.perf_counter() - started
    assert abs(decoded / audio.SAMPLE_RATE - info.duration_seconds) < 0.5

    probe = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, str(memory_ogg)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300, check=True,
    )
    before_kib, max_kib, samples = map(int, probe.stdout.split()[-3:])
    assert samples == decoded
    peak_mb, rss_mb = peak / 1e6, (max_kib - before_kib) * 1024 / 1e6
    print(
        f"\n20 min decoded in {seconds:.1f}s: whole audio {whole_mb:.1f} MB, "
        f"traced peak {peak_mb:.1f} MB, RSS growth {rss_mb:.1f} MB"
    )
    assert peak_mb < whole_mb / 3
    assert rss_mb < whole_mb / 3


def test_language_choice_prefers_russian_only_in_near_ties() -> None:
    assert tr.choose_language([("ru", 0.97), ("uk", 0.02)]) == ("ru", 0.97, False)
    assert tr.choose_language([("uk", 0.45), ("ru", 0.35), ("be", 0.1)]) == ("ru", 0.35, True)
    assert tr.choose_language([("en", 0.40), ("ru", 0.25)]) == ("ru", 0.25, True)
    assert tr.choose_language([("uk", 0.70), ("ru", 0.25)]) == ("uk", 0.70, False)  # confident
    assert tr.choose_language([("en", 0.50), ("ru", 0.10)]) == ("en", 0.50, False)  # ru far behind
    assert tr.choose_language([("de", 0.93), ("en", 0.03)]) == ("de", 0.93, False)


def test_overlapping_windows_are_deduplicated_by_time() -> None:
    kept = [Segment(start=50, end=55, text="a"), Segment(start=58, end=61, text="b")]
    # next window starts at 58 with 4 s of overlap: boundary 60
    new = [Segment(start=58.1, end=61.0, text="b again"), Segment(start=62, end=64, text="c")]
    rest = tr._dedupe(kept, new, boundary=60.0)
    assert [s.text for s in kept + rest] == ["a", "b", "c"]
    kept = [Segment(start=50, end=55, text="a"), Segment(start=59, end=63, text="b cut")]
    rest = tr._dedupe(kept, [Segment(start=59.2, end=64, text="b whole")], boundary=60.0)
    assert [s.text for s in kept + rest] == ["a", "b whole"]


def test_rendered_transcript_maps_chunks_back_to_time() -> None:
    segs = [Segment(start=i * 7.0, end=i * 7.0 + 6.0, text=f"Фраза номер {i}.") for i in range(30)]
    segs.append(Segment(start=3725.0, end=3730.0, text="Через час."))
    timed = transcript.render_transcript(segs)
    assert transcript.transcript_with_timestamps(segs) == timed.text
    paragraphs = timed.text.split("\n\n")
    assert paragraphs[0].startswith("[00:00] Фраза номер 0.")
    assert paragraphs[-1] == "[1:02:05] Через час."
    labels = [p[1 : p.index("]")] for p in paragraphs]
    assert labels[:4] == ["00:00", "00:35", "01:10", "01:45"]  # every ~30-60 s
    assert len(timed.spans) == len(segs)
    for seg, span in zip(segs, timed.spans):
        assert timed.text[span.char_start : span.char_end] == seg.text
        assert (span.start, span.end) == (seg.start, seg.end)
    # a chunk from the middle of segment 5 to the middle of segment 8
    a, b = timed.spans[5], timed.spans[8]
    chunk = (a.char_start + 3, b.char_start + 3)
    assert transcript.segment_times_for_span(timed.spans, *chunk) == (35.0, 62.0)
    # a chunk that is only a paragraph label maps to the segment that follows it
    label = timed.text.index("[00:35]")
    assert transcript.segment_times_for_span(timed.spans, label, label + 7) == (35.0, 41.0)
    assert transcript.segment_times_for_span(timed.spans, 0, len(timed.text)) == (0.0, 3730.0)
    assert transcript.segment_times_for_span([], 0, 10) is None


def test_missing_model_names_make_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROVE_WHISPER_MODEL", "no-such-whisper")
    reset_settings()
    try:
        with pytest.raises(tr.WhisperModelMissing, match="make models"):
            tr.get_whisper()
    finally:
        monkeypatch.undo()
        reset_settings()


def test_model_is_loaded_once_across_threads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import faster_whisper

    folder = tmp_path / "fake-whisper"
    folder.mkdir()
    (folder / "model.bin").write_bytes(b"")
    created: list[dict] = []

    class SlowModel:
        def __init__(self, source: str, **kwargs) -> None:
            time.sleep(0.2)
            created.append({"source": source, **kwargs})

    monkeypatch.setattr(faster_whisper, "WhisperModel", SlowModel)
    monkeypatch.setattr(tr, "_model", None)
    monkeypatch.setattr(tr, "_model_key", None)
    monkeypatch.setenv("GROVE_WHISPER_MODEL", str(folder))
    monkeypatch.setenv("GROVE_CPU_THREADS", "3")
    reset_settings()
    try:
        got: list[object] = []
        threads = [threading.Thread(target=lambda: got.append(tr.get_whisper())) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(got) == 8 and all(m is got[0] for m in got)
        expected = {"device": "cpu", "compute_type": "int8", "cpu_threads": 3}
        assert created == [{"source": str(folder), **expected}]
    finally:
        monkeypatch.undo()
        reset_settings()
