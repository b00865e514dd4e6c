"""Real Russian speech and media files for the transcription tests.

Speech comes from Festival (`text2wave`) with the Russian voice of Debian's
`festvox-ru` (`voice_msu_ru_nsh_clunits`, a male unit-selection voice; it reads
UTF-8 text). Containers are written with PyAV: OGG/Opus at 48 kHz mono (what Telegram
voice messages are), MP4 with H.264 black frames and AAC audio (a Telegram video),
MP4 without audio, and long files encoded from a repeating stream so that no test
ever builds the whole long signal in memory.

System packages: `festival` and `festvox-ru` (Debian/Ubuntu).
"""

from __future__ import annotations

import shutil
import subprocess
import wave
from collections.abc import Iterable, Iterator, Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

FESTIVAL_VOICE = "voice_msu_ru_nsh_clunits"
FESTIVAL_VOICE_DIR = Path("/usr/share/festival/voices/russian/msu_ru_nsh_clunits")
APT_PACKAGES = ("festival", "festvox-ru")
TTS_RATE = 16_000  # what the msu_ru_nsh voice produces


def festival_missing() -> str | None:
    """None when Russian TTS works here, else why not (for pytest.skip)."""
    if shutil.which("text2wave") is None:
        return f"text2wave not found: apt-get install {' '.join(APT_PACKAGES)}"
    if not FESTIVAL_VOICE_DIR.is_dir():
        return f"Russian Festival voice missing: apt-get install {APT_PACKAGES[1]}"
    return None


def synthesize_ru(text: str, wav_path: Path) -> Path:
    """Speak Russian `text` (UTF-8, as the voice expects) into a 16 kHz mono WAV."""
    wav_path = Path(wav_path)
    txt = wav_path.with_suffix(".txt")
    txt.write_text(text, encoding="utf-8")
    subprocess.run(
        ["text2wave", "-eval", f"({FESTIVAL_VOICE})", str(txt), "-o", str(wav_path)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return wav_path


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """Mono float32 samples in [-1, 1] and the sample rate of a 16-bit PCM WAV."""
    with wave.open(str(path), "rb") as w:
        assert w.getsampwidth() == 2, "expected 16-bit PCM"
        rate, channels = w.getframerate(), w.getnchannels()
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32)
    if channels > 1:
        data = data.reshape(-1, channels).mean(axis=1)
    return data / 32768.0, rate


def speak(text: str, workdir: Path, name: str) -> np.ndarray:
    """Synthesised speech of `text` as 16 kHz float32 samples (WAV kept in `workdir`)."""
    samples, rate = read_wav(synthesize_ru(text, Path(workdir) / f"{name}.wav"))
    assert rate == TTS_RATE, rate
    return samples


def silence(seconds: float, rate: int = TTS_RATE) -> np.ndarray:
    return np.zeros(int(seconds * rate), dtype=np.float32)


def noise(seconds: float, level: float = 0.003, rate: int = TTS_RATE, seed: int = 7) -> np.ndarray:
    """Quiet white noise (a room with no one talking)."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(int(seconds * rate)) * level).astype(np.float32)


def place(
    pieces: Sequence[tuple[float, np.ndarray]], total_seconds: float, rate: int = TTS_RATE
) -> np.ndarray:
    """Silence of `total_seconds` with each (at_seconds, samples) piece placed at its time."""
    out = silence(total_seconds, rate)
    for at, samples in pieces:
        start = int(at * rate)
        end = min(len(out), start + len(samples))
        out[start:end] += samples[: end - start]
    return out


def chunked(samples: np.ndarray, size: int = 16_000) -> Iterator[np.ndarray]:
    for i in range(0, len(samples), size):
        yield samples[i : i + size]


def repeated(
    samples: np.ndarray, total_seconds: float, rate: int = TTS_RATE, size: int = 16_000
) -> Iterator[np.ndarray]:
    """`samples` looped to `total_seconds`, streamed in pieces (never held whole)."""
    remaining = int(total_seconds * rate)
    pos = 0
    while remaining > 0:
        take = min(size, remaining, len(samples) - pos)
        yield samples[pos : pos + take]
        remaining -= take
        pos = (pos + take) % len(samples)


def _audio_frames(chunks: Iterable[np.ndarray], rate: int) -> Iterator[av.AudioFrame]:
    pts = 0
    for chunk in chunks:
        pcm = (np.clip(chunk, -1.0, 1.0) * 32767).astype("<i2").reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(pcm, format="s16", layout="mono")
        frame.sample_rate = rate
        frame.pts = pts
        frame.time_base = Fraction(1, rate)
        pts += pcm.shape[1]
        yield frame


def write_audio(
    path: Path,
    chunks: Iterable[np.ndarray],
    *,
    rate: int = TTS_RATE,
    container_format: str = "ogg",
    codec: str = "libopus",
    out_rate: int = 48_000,
    bit_rate: int = 32_000,
    options: dict[str, str] | None = None,
) -> Path:
    """Encode mono float32 chunks (streamed) to an audio file.

    Defaults: OGG/Opus, 48 kHz, 20 ms frames, 32 kbit/s: what Telegram voice messages are."""
    with av.open(str(path), "w", format=container_format) as out:
        stream = out.add_stream(codec, rate=out_rate, layout="mono", options=options or {})
        if bit_rate:
            stream.bit_rate = bit_rate
        for frame in _audio_frames(chunks, rate):
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return Path(path)


def write_video(
    path: Path,
    samples: np.ndarray | None,
    *,
    seconds: float | None = None,
    rate: int = TTS_RATE,
    fps: int = 10,
    size: tuple[int, int] = (64, 64),
) -> Path:
    """MP4 (container chosen by suffix) with black H.264 frames and, if `samples`, an AAC track."""
    duration = seconds if seconds is not None else len(samples) / rate  # type: ignore[arg-type]
    with av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=fps)
        video.width, video.height = size
        video.pix_fmt = "yuv420p"
        audio = None
        if samples is not None:
            audio = out.add_stream("aac", rate=44_100, layout="mono")
            audio.bit_rate = 64_000
        black = np.zeros((size[1], size[0], 3), dtype=np.uint8)
        audio_frames: Iterator[av.AudioFrame] = iter(())
        if samples is not None:
            audio_frames = _audio_frames(chunked(samples, rate // fps), rate)
        for i in range(round(duration * fps)):
            frame = av.VideoFrame.from_ndarray(black, format="rgb24")
            frame.pts = i
            out.mux(video.encode(frame))
            if audio is not None:
                piece = next(audio_frames, None)
                if piece is not None:
                    out.mux(audio.encode(piece))
        out.mux(video.encode(None))
        if audio is not None:
            for piece in audio_frames:
                out.mux(audio.encode(piece))
            out.mux(audio.encode(None))
    return Path(path)


def write_wav(path: Path, samples: np.ndarray, rate: int = TTS_RATE) -> Path:
    """16-bit mono WAV from float samples in [-1, 1] or from int16 samples as they are."""
    if samples.dtype != np.int16:
        samples = np.round(np.clip(samples, -1, 1) * 32767).astype(np.int16)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())
    return Path(path)


def corrupt_copy(source: Path, target: Path, keep_bytes: int = 0) -> Path:
    """A file that claims to be media but is garbage: the source's first bytes then noise."""
    head = Path(source).read_bytes()[:keep_bytes]
    rng = np.random.default_rng(3)
    Path(target).write_bytes(head + rng.integers(0, 256, 50_000, dtype=np.uint8).tobytes())
    return Path(target)
