"""Talking back over Telegram: the one sender (`reply`), Telegram HTML, streamed drafts, file downloads.

Imports `grove.core`, `grove.store` and the ingestion shapes.
"""
