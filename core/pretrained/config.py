"""The shape of a BERT encoder, as a frozen dataclass with a reason per field."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from core.heads import check_heads


@dataclass(frozen=True)
class BertConfig:
    """A BERT-family encoder's sizes. The defaults are all-MiniLM-L6-v2's (its config.json)."""

    vocab_size: int = 30522
    """Rows of the word-embedding table: one per WordPiece piece in vocab.txt."""
    d_model: int = 384
    """Width of every token vector between layers (config.json: hidden_size)."""
    n_layers: int = 6
    """Transformer blocks stacked one after the other (num_hidden_layers)."""
    n_heads: int = 12
    """Heads per attention layer; each reads d_k = d_model / n_heads = 32 columns (num_attention_heads)."""
    d_ff: int = 1536
    """Width of the feed-forward layer inside each block, 4 x d_model (intermediate_size)."""
    max_positions: int = 512
    """Rows of the learned position table: the longest input the model has positions for."""
    type_vocab_size: int = 2
    """Segment embeddings (sentence A / B); a single sentence uses row 0 throughout."""
    layer_norm_eps: float = 1e-12
    """Added to the variance inside every LayerNorm, as trained (not the usual 1e-5)."""

    def __post_init__(self) -> None:
        check_heads(self.d_model, self.n_heads)
        if min(self.vocab_size, self.d_model, self.n_layers, self.d_ff, self.max_positions, self.type_vocab_size) < 1:
            raise ValueError(f"every size must be positive, got {self}")

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    @classmethod
    def from_json(cls, path: str | Path) -> BertConfig:
        """Read a transformers ``config.json``; refuses what this forward pass does not implement."""
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        unsupported = {
            "hidden_act": (raw.get("hidden_act", "gelu"), "gelu"),
            "position_embedding_type": (raw.get("position_embedding_type", "absolute"), "absolute"),
        }
        for key, (value, supported) in unsupported.items():
            if value != supported:
                raise ValueError(f"{path}: {key} = {value!r}; this BERT forward implements only {supported!r}")
        names = {
            "vocab_size": "vocab_size",
            "d_model": "hidden_size",
            "n_layers": "num_hidden_layers",
            "n_heads": "num_attention_heads",
            "d_ff": "intermediate_size",
            "max_positions": "max_position_embeddings",
            "type_vocab_size": "type_vocab_size",
            "layer_norm_eps": "layer_norm_eps",
        }
        return cls(**{ours: raw[theirs] for ours, theirs in names.items() if theirs in raw})
