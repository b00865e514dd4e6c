"""Reusable units of work. Each node is one small typed module holding Prefect tasks.

A node may import from `grove` (settings, store, message shapes), `chunking` and
`prompts`; never from `flows`. Adding a node = one file here + one test.
"""
