"""A tiny real sentence-transformers model: a two-layer Gemma3 encoder (random weights, EmbeddingGemma's
tokenizer) → mean pooling → Dense → Normalize, saved like EmbeddingGemma, so the ONNX export,
its quantisations and the int8 verdict run on it exactly as on the real model, in seconds."""

from __future__ import annotations

from pathlib import Path

__all__ = ["build_tiny_encoder"]


def build_tiny_encoder(root: Path, tokenizer_source: Path) -> Path:
    """The model's folder (``root / "st"``), built with seed 0 from ``tokenizer_source``'s tokenizer."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer
    from transformers import AutoTokenizer, Gemma3TextConfig, Gemma3TextModel

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_source))
    torch.manual_seed(0)
    config = Gemma3TextConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=512,
        sliding_window=8, layer_types=["sliding_attention", "full_attention"],
        use_bidirectional_attention=True, pad_token_id=tokenizer.pad_token_id,
    )
    Gemma3TextModel(config).save_pretrained(root / "encoder")
    tokenizer.save_pretrained(root / "encoder")
    transformer = Transformer(str(root / "encoder"), max_seq_length=256)
    modules = [transformer, Pooling(32, pooling_mode="mean"),
               Dense(32, 16, activation_function=torch.nn.Identity()), Normalize()]
    SentenceTransformer(modules=modules, device="cpu").save(str(root / "st"))
    return root / "st"
