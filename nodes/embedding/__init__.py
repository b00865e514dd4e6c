"""Text to vectors: the model, its runtimes (PyTorch, ONNX int8) and the export that builds the ONNX graph.

Imports `grove.core` and `chunking`.
"""
