"""Voice, audio and video: decoding for Whisper (`audio`) and the transcript's text layout (`transcript`)."""
