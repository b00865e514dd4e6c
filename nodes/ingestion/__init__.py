"""From what a user sends to clean text with its structure: links, files (one module per format), voice and video, OCR, chunking into stored chunks.

Imports `grove.core`, `grove.store`, the stores, embedding, `chunking` and the Telegram file download.
"""
