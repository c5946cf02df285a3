"""A pretrained BERT (all-MiniLM-L6-v2) in NumPy: checkpoint, tokenizer, forward pass.

Every layer's attention runs through ``core.multihead.multi_head_attention``, so the
views draw the model's heads from the same ``AttentionTrace`` as the random ones.
"""

from core.pretrained.bert import BertLayer, BertOutput, BertWeights, bert_forward
from core.pretrained.checkpoint import CheckpointError, read_safetensors
from core.pretrained.config import BertConfig
from core.pretrained.locate import ENV_VAR, FIX_COMMAND, ChecksumError, NotInstalled, WeightsNotFound, locate_minilm
from core.pretrained.minilm import MINILM, NAME, MiniLM, PretrainedBatch, PretrainedRun, load_minilm
from core.pretrained.wordpiece import Encoding, WordPieceTokenizer

__all__ = [
    "ENV_VAR",
    "FIX_COMMAND",
    "MINILM",
    "NAME",
    "BertConfig",
    "BertLayer",
    "BertOutput",
    "BertWeights",
    "CheckpointError",
    "ChecksumError",
    "Encoding",
    "MiniLM",
    "NotInstalled",
    "PretrainedBatch",
    "PretrainedRun",
    "WeightsNotFound",
    "WordPieceTokenizer",
    "bert_forward",
    "load_minilm",
    "locate_minilm",
    "read_safetensors",
]
