"""all-MiniLM-L6-v2 in one object: find and verify the files, map the weights, tokenize, run.

    model = load_minilm()                          # once per process (the dashboard caches it)
    run = model.run("The bank of the river.")
    run.encoding.tokens                            # ('[CLS]', 'the', 'bank', ..., '[SEP]')
    run.output.traces[0].weights                   # (12, T, T): layer 1's heads

The numbers match Hugging Face's ``transformers`` run of the same checkpoint
(``tests/core/test_pretrained_reference.py``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.pretrained.bert import BertOutput, BertWeights, bert_forward
from core.pretrained.checkpoint import read_safetensors
from core.pretrained.config import BertConfig
from core.pretrained.locate import locate_minilm
from core.pretrained.wordpiece import PAD, Encoding, WordPieceTokenizer

MINILM = BertConfig()
"""all-MiniLM-L6-v2's architecture, pinned in code like its weights' sha256 (config.json must agree)."""

NAME = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass(frozen=True)
class PretrainedRun:
    """One sentence through the model: its pieces and every array of the forward pass."""

    encoding: Encoding
    output: BertOutput


@dataclass(frozen=True)
class PretrainedBatch:
    """Several sentences padded to the longest (``B`` sentences, ``T`` pieces of the longest)."""

    encodings: tuple[Encoding, ...]
    ids: np.ndarray
    """(B, T) int64, [PAD] after each shorter sentence's [SEP]."""
    output: BertOutput
    """``output.real`` (B, T) says which positions are real; traces' weights are (B, h, T, T)."""


@dataclass(frozen=True)
class MiniLM:
    """The loaded model: read-only weights (a memory map of the checkpoint) and the tokenizer."""

    weights: BertWeights
    tokenizer: WordPieceTokenizer
    directory: Path
    """Where the verified files were found."""

    @property
    def config(self) -> BertConfig:
        return self.weights.config

    def encode(self, text: str) -> Encoding:
        """``text -> Encoding``: [CLS] pieces [SEP], with ids and the word of each piece."""
        return self.tokenizer.encode(text)

    def run(self, text: str, *, causal: bool = False) -> PretrainedRun:
        """One sentence: traces' weights are (h, T, T), T counting [CLS] and [SEP]; ``causal``: see bert_forward."""
        return self.run_encoded(self.encode(text), causal=causal)

    def run_encoded(self, encoding: Encoding, *, causal: bool = False) -> PretrainedRun:
        """``run`` for a sentence already encoded (its pieces and ids)."""
        ids = np.array(encoding.ids, dtype=np.int64)  # (T,)
        return PretrainedRun(encoding, bert_forward(self.weights, ids, causal=causal))

    def run_batch(self, texts: Sequence[str]) -> PretrainedBatch:
        """A padded batch: padding keys are masked, so they get exactly zero weight."""
        encodings = tuple(self.encode(text) for text in texts)
        t = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), t), self.tokenizer.vocab[PAD], dtype=np.int64)  # (B, T)
        real = np.zeros((len(encodings), t), dtype=bool)  # (B, T)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            real[row, : len(e.ids)] = True
        return PretrainedBatch(encodings, ids, bert_forward(self.weights, ids, real))


def load_minilm(directory: str | os.PathLike | None = None, dtype=np.float32, *, download: bool = True) -> MiniLM:
    """Find (``locate_minilm``), verify by sha256 and map all-MiniLM-L6-v2; float32 (the app) or float64.

    ``directory`` overrides the search (the dashboard passes its ``ATTENTION_LAB_MINILM_DIR``
    secret here). Raises ``WeightsNotFound`` (with the fix command) or ``ChecksumError``.
    """
    found = locate_minilm(directory, download=download)
    if (found / "config.json").is_file() and BertConfig.from_json(found / "config.json") != MINILM:
        raise ValueError(f"{found / 'config.json'} describes another architecture than {MINILM}")
    tensors = read_safetensors(found / "model.safetensors")
    weights = BertWeights.from_tensors(tensors, MINILM, np.dtype(dtype))
    return MiniLM(weights, WordPieceTokenizer.from_file(found / "vocab.txt"), found)
