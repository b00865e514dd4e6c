"""The users' tables, one module per table family: history, modes, consultation state, topics, confirmations, dialogue metrics, the moderation queue, documents and chunks.

Imports `grove.core`, `grove.store`, and the embedding of approved answers.
"""
