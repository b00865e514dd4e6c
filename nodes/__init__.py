"""Reusable units of work, one package per concern: the users' tables (store), embedding,
ingestion, retrieval, answering and the Telegram sender. Each node is one small typed module
holding tasks; a new node is one file in its package plus one test. Nodes never import `flows`
or the app (`tests/test_layout.py`).
"""
