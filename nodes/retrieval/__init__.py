"""From a question to ranked fragments: the hybrid first stage, the consultation tiers, rerank stages, the lexical tools, the local model's search gate, source labels.

Imports `grove.core`, `grove.store`, the stores, embedding and `chunking`.
"""
