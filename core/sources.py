"""Where the weights come from: one small interface, one class per kind of weights.

Every view draws what a ``ModelSource`` gives it, never a kind's name:

    source = ConfigSource.of(tokenize("the cat sat"), AttentionConfig(weights="identity"))
    source.tokens()          # Tokens: the tokens as the model sees them, and what they are
    source.architecture()    # Architecture: d_model, heads, layers, positions; fixed by the weights or not
    source.runs()            # one core.Run per layer: the same type for every source
    source.supports("cross") # Support: ok, and if not, why and what to pick instead

Three kinds today:

- ``ConfigSource``: random or hand-built weights, one model from an ``AttentionConfig``; ``ToySource``, its
  hand-built kind, says what those weights cannot do (grouped K/V heads).
- ``MiniLMSource``: the pretrained all-MiniLM-L6-v2 on a sentence's WordPiece pieces (at most
  ``MAX_TOKENS`` of them, in every use).
- ``TrainedSource``: a model trained in the train view, on its task's fixed example.

Adding a source (an attention variant, say) is one new class: subclass ``ModelSource``, fill in the four
answers, add it to ``SOURCES``. Adding a use (a forward with one head knocked out, logits) is one new method
here with a ``NotImplementedError`` default (``ablated_runs``, ``logits``) and a ``supports`` answer, then
an override in each source that can. ``supports`` is asked of the class, so a page can ask before anything
is computed (the sidebar draws its controls from it); ``SUPPORTS`` lists only what differs from "ok".
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from core.ablation import Knockout
from core.pipeline import AttentionConfig, PermutationResult, Run, permutation_experiment, run
from core.pretrained.bert import BertOutput, bert_forward
from core.pretrained.minilm import MINILM, MiniLM, PretrainedRun
from core.pretrained.runs import layer_runs, permutation_layers
from core.pretrained.runs import runs_of as pretrained_runs_of
from core.tokens import MAX_TOKENS, tokenize
from core.training.model import forward
from core.training.probes import knockout, probe_set
from core.training.runs import runs_of
from core.training.train import TrainResult

EXPERIMENTS = (
    "permutation",
    "cross",
    "positions",
    "scaling",
    "unscaled",
    "causal",
    "seed",
    "ablation",
    "logits",
    "decode",
    "tiles",
    "kv_heads",
    "window",
    "prefix",
    "alibi",
    "sentences",
    "examples",
)
"""What a view may ask a source for: reorder the tokens, read a second sentence, shift or change the positions,
compare with and without ÷√d_k on the sentence, run unscaled (the sidebar's toggle), add the causal mask, draw
other weights with another seed; decode one token at a time with a KV cache (the kv_cache view), recompute a head
block by block (the flash view); run today's variants (the sidebar's controls of the same names: grouped-query
K/V heads, a sliding window, a prefix-LM mask, ALiBi's bias); knock a head out (``ablated_runs``), read the
next-token logits (``logits``); read other typed sentences through the same weights (``reads``: the class and contrast
views), or the model's own inputs (``examples``: a trained model's held-out sequences)."""


@dataclass(frozen=True)
class Support:
    """A source's answer to "can you do this experiment?"."""

    ok: bool
    reason: str = ""
    """Why not (or, when ok, a caveat worth saying: MiniLM's causal mask is an experiment)."""
    instead: str = ""
    """What to pick instead, in words the page can show ("random weights of the same shape")."""

    def __bool__(self) -> bool:
        return self.ok


OK = Support(True)
NOT_BUILT = Support(False, "No source computes this yet: it is the seam's next use.")
ONE_LAYER = Support(
    False,
    "Random and hand-built weights are one attention layer with nothing after it: knocking a head out only "
    "zeroes its own slice of the output, which no later layer reads.",
    "the pretrained MiniLM or a trained model",
)
NO_UNEMBEDDING = Support(
    False,
    "Only a model trained to predict tokens has an unembedding that turns its last layer into next-token scores.",
    "a trained model",
)


@dataclass(frozen=True)
class Architecture:
    """The shape of the model a source runs."""

    d_model: int
    n_heads: int
    n_layers: int
    positional: str
    fixed: bool
    """True when the weights fix these (a pretrained model): the page says them instead of offering controls."""

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class Tokens:
    """The tokens as the model sees them."""

    tokens: tuple[str, ...]
    label: str
    """What they are, for the page: "the sentence's tokens", "the sentence's WordPiece pieces", ..."""
    movable: tuple[int, int]
    """(first, stop): the positions a reordering may move (MiniLM keeps [CLS] and [SEP] in place)."""
    how: str = ""
    """How they were made from the input, in one sentence for the page."""
    word_ids: tuple[int | None, ...] | None = None
    """(T,) the word each piece belongs to, for WordPiece pieces; None when every token is a word."""


class ModelSource(ABC):
    """A kind of weights, bound to its input: tokens, architecture, runs, and what it supports."""

    label: ClassVar[str]
    """The weights in the page's words ("random weights", "the pretrained MiniLM", ...)."""
    SUPPORTS: ClassVar[dict[str, Support]] = {}
    """Experiments this kind cannot do (or does with a caveat); anything else is ``OK``."""
    ARCHITECTURE: ClassVar[Architecture | None] = None
    """The architecture the weights fix (a pretrained model's), or None: the sidebar's controls choose it."""
    TRAINS: ClassVar[bool] = False
    """True when the model is the train view's: its task and training controls choose it."""
    LEARNED: ClassVar[bool] = False
    """True when the weights were learned: a pattern in them is learned, not chance or built by hand."""
    EXAMPLES: ClassVar[tuple[tuple[str, int, int, str], ...]] = ()
    """(sentence, layer, head, what to look for): where this model shows a named pattern (the page offers them)."""

    @property
    def chance(self) -> bool:
        """True when the weights are random draws, so any pattern in the maps is chance."""
        return False

    @classmethod
    def config_weights(cls, weights: str) -> str:
        """The ``AttentionConfig.weights`` a config of this kind runs with: its own for random and hand-built
        weights, random for the others (a view a source cannot serve draws random weights of its shape)."""
        return "random"

    @property
    @abstractmethod
    def key(self) -> tuple:
        """Hashable: equal keys, equal runs (a cache key for what the page computes from this source)."""

    @property
    def weights_key(self) -> tuple:
        """Hashable: equal keys, equal weights whatever the input (a cache key for ``reads`` and ``examples``)."""
        return self.key

    @classmethod
    def supports(cls, experiment: str) -> Support:
        """Whether this kind of weights can do ``experiment`` (one of ``EXPERIMENTS``), and if not why."""
        if experiment not in EXPERIMENTS:
            raise ValueError(f"unknown experiment {experiment!r}; choose one of {', '.join(EXPERIMENTS)}")
        if experiment in ("ablation", "logits", "examples"):
            return cls.SUPPORTS.get(experiment, NOT_BUILT)
        return cls.SUPPORTS.get(experiment, OK)

    @abstractmethod
    def tokens(self) -> Tokens:
        """The tokens every map of this source has one row and one column for."""

    @abstractmethod
    def architecture(self) -> Architecture:
        """d_model, heads, layers and positions of the model that ran."""

    @abstractmethod
    def runs(self) -> tuple[Run, ...]:
        """One ``Run`` per layer, in order; every view reads these."""

    def run(self, layer: int) -> Run:
        """Layer ``layer``'s run (1-based), clipped to the model's layers."""
        runs = self.runs()
        return runs[min(max(layer, 1), len(runs)) - 1]

    def tokens_of(self, text: str) -> tuple[str, ...]:
        """``text`` split as this source splits its input, only the movable part (for a typed reordering)."""
        raise NotImplementedError(f"{type(self).__name__} reads no typed text")

    def permutation(self, permutation: tuple[int, ...]) -> tuple[PermutationResult, ...]:
        """Per layer: the map of the tokens and of the movable ones reordered by ``permutation``, compared."""
        raise NotImplementedError(f"{type(self).__name__}: {self.supports('permutation').reason}")

    def reads(self, text: str) -> tuple[Run, ...]:
        """``text`` through these same weights, one ``Run`` per layer (a second sentence, a class's sentences);
        ``ValueError`` with a message for the user when the text cannot be read (empty, too long)."""
        raise NotImplementedError(f"{type(self).__name__}: {self.supports('sentences').reason}")

    def examples(self, n: int) -> tuple[tuple[Run, ...], ...]:
        """``n`` inputs of the model's own (a trained model's held-out sequences), each through the model: one
        tuple of runs (one per layer) per input."""
        raise NotImplementedError(f"{type(self).__name__}: {self.supports('examples').reason}")

    def ablated_runs(self, layer: int, head: int, mode: str = "zero") -> tuple[Run, ...]:
        """The runs again with head ``head`` of layer ``layer`` (both 1-based) knocked out (``core.ablation``:
        its output zeroed, or for ``mode="mean"`` set to its mean over a held-out set, where a source has one).
        A source that can rerun its forward pass overrides this and answers ``supports("ablation")``."""
        raise NotImplementedError(f"{type(self).__name__} cannot knock a head out: {self.supports('ablation').reason}")

    def logits(self) -> np.ndarray:
        """``(T, vocab)`` the model's next-token scores, where a model has them: a source with an unembedding (the
        trained model) overrides this and answers ``supports("logits")``."""
        raise NotImplementedError(f"{type(self).__name__} has no logits: {self.supports('logits').reason}")


@dataclass(frozen=True)
class ConfigSource(ModelSource):
    """Random or hand-built weights (``AttentionConfig.weights``): one layer, the sentence's own tokens."""

    config: AttentionConfig
    input_tokens: tuple[str, ...]
    layer_runs: tuple[Run, ...]

    label: ClassVar[str] = "random or hand-built weights"
    SUPPORTS: ClassVar[dict[str, Support]] = {"ablation": ONE_LAYER, "logits": NO_UNEMBEDDING}

    @classmethod
    def config_weights(cls, weights: str) -> str:
        return weights

    @property
    def key(self) -> tuple:
        return ("config", self.input_tokens, self.config)

    @property
    def weights_key(self) -> tuple:
        return ("config", self.config)

    @property
    def chance(self) -> bool:
        return self.config.weights == "random"

    @classmethod
    def of(cls, tokens: tuple[str, ...] | list[str], config: AttentionConfig) -> ConfigSource:
        return cls(config, tuple(tokens), (run(tokens, config),))

    def tokens(self) -> Tokens:
        how = (
            "The text is normalised (NFC) and lower-cased; words, numbers, punctuation marks and emoji each become "
            "one token."
        )
        return Tokens(self.input_tokens, "the sentence's tokens", (0, len(self.input_tokens)), how)

    def architecture(self) -> Architecture:
        c = self.config
        return Architecture(c.d_model, c.n_heads, 1, c.positional, fixed=False)

    def runs(self) -> tuple[Run, ...]:
        return self.layer_runs

    def tokens_of(self, text: str) -> tuple[str, ...]:
        return tuple(tokenize(text))

    def permutation(self, permutation: tuple[int, ...]) -> tuple[PermutationResult, ...]:
        return (permutation_experiment(self.input_tokens, list(permutation), self.config),)

    def reads(self, text: str) -> tuple[Run, ...]:
        return (run(tokenize(text), self.config),)


@dataclass(frozen=True)
class ToySource(ConfigSource):
    """Hand-built weights ("identity", "previous"): a config source whose every query head has its own K."""

    label: ClassVar[str] = "hand-built weights"
    SUPPORTS: ClassVar[dict[str, Support]] = {
        "kv_heads": Support(
            False,
            "The hand-built weights have no grouped form: identity's W_K = I and the previous-token head's "
            "hand-set W_K give every query head its own K, so sharing one would change the pattern they were built "
            "to show.",
            "random weights",
        ),
    }


INSTEAD = "random weights of the same shape"


@dataclass(frozen=True)
class MiniLMSource(ModelSource):
    """The pretrained all-MiniLM-L6-v2 on a sentence: WordPiece pieces between [CLS] and [SEP], six layers."""

    model: MiniLM
    text: str
    causal: bool
    layer_runs: tuple[Run, ...]

    label: ClassVar[str] = "the pretrained MiniLM"
    LEARNED: ClassVar[bool] = True
    EXAMPLES: ClassVar[tuple[tuple[str, int, int, str], ...]] = (
        ("The bank of the river.", 1, 3, "layer 1, head 3 looks at the previous piece"),
        ("The bank of the river.", 2, 9, "layer 2, head 9 sends “the” to the next piece"),
        (
            "the teacher praised the students because they worked hard",
            4,
            2,
            "layer 4, head 2 sends “they” to “students”",
        ),
        ("the cat sat on the mat because it was tired", 3, 8, "layer 3, head 8 parks its weight on [CLS]"),
    )
    """A pattern core names the head for (most of its rows show it), or a token-to-token claim where the head is
    specific (``core.head_summary.SPECIFIC``); each holds on at least 8 of the 10 held-out sentences of
    tests/core/test_pretrained_heads.py (``HELD_OUT``), which no example, tour or threshold uses. Layer 2 head 9
    is named for its determiner rows, not as a next-token head: a thin majority of its rows look one piece ahead
    (42-67% on those sentences), while every "the", "a" or "my" there puts 0.70-0.95 on the next piece."""
    ARCHITECTURE: ClassVar[Architecture] = Architecture(
        MINILM.d_model, MINILM.n_heads, MINILM.n_layers, "learned", fixed=True
    )
    """What all-MiniLM-L6-v2 was trained with (``core.pretrained.MINILM``): a link cannot change it."""
    SUPPORTS: ClassVar[dict[str, Support]] = {
        "cross": Support(False, "MiniLM is an encoder: it reads one sentence and has no cross-attention.", INSTEAD),
        "positions": Support(
            False, "MiniLM's learned positions are part of its weights: they cannot be swapped or shifted.", INSTEAD
        ),
        "scaling": Support(False, "MiniLM was trained with the 1/√d_k factor: it is part of its weights.", INSTEAD),
        "unscaled": Support(False, "MiniLM was trained with the 1/√d_k factor: it is part of its weights.", INSTEAD),
        "seed": Support(False, "The pretrained model's weights are fixed: a seed does not change them.", INSTEAD),
        "decode": Support(False, "MiniLM is an encoder: it reads the whole sentence and never generates.", INSTEAD),
        "tiles": Support(
            False, "The flash view tiles a run of random or hand-built weights; MiniLM's: not built yet.", INSTEAD
        ),
        "kv_heads": Support(False, "MiniLM has 12 K/V heads, one per query head: its weights fix them.", INSTEAD),
        "window": Support(
            False, "MiniLM was trained to read the whole sentence: a window is not built for it.", INSTEAD
        ),
        "prefix": Support(
            False, "MiniLM reads every piece both ways already: a prefix mask is not built for it.", INSTEAD
        ),
        "alibi": Support(
            False,
            "MiniLM was trained with learned position embeddings, not ALiBi's bias: it is not in its weights.",
            INSTEAD,
        ),
        "causal": Support(
            True,
            "MiniLM is an encoder, trained to read the whole sentence: the mask shows what it does when it may not "
            "look ahead, which it never saw in training.",
        ),
        "ablation": Support(
            True, "MiniLM has no held-out set to take a head's mean over: a knocked-out head's output is zeroed."
        ),
        "logits": Support(
            False,
            "all-MiniLM-L6-v2 is a sentence encoder: it was kept without its masked-word head, so it has no "
            "token scores.",
            "a trained model",
        ),
    }

    @property
    def key(self) -> tuple:
        return ("minilm", self.text, self.causal)

    @property
    def weights_key(self) -> tuple:
        return ("minilm", self.causal)

    @classmethod
    def of(cls, model: MiniLM, text: str, causal: bool = False) -> MiniLMSource:
        """Raises ``ValueError`` when the text has more than ``MAX_TOKENS`` pieces (the cap of every use)."""
        return cls(model, text, causal, layer_runs(model, text, causal=causal, limit=MAX_TOKENS))

    def tokens(self) -> Tokens:
        first = self.layer_runs[0]
        how = f"WordPiece pieces of the sentence between [CLS] and [SEP], at most {MAX_TOKENS} of them."
        return Tokens(first.tokens, "the sentence's WordPiece pieces", (1, len(first.tokens) - 1), how, first.word_ids)

    def architecture(self) -> Architecture:
        return self.ARCHITECTURE

    def runs(self) -> tuple[Run, ...]:
        return self.layer_runs

    def tokens_of(self, text: str) -> tuple[str, ...]:
        return self.model.encode(text).tokens[1:-1]  # without [CLS] and [SEP]

    def permutation(self, permutation: tuple[int, ...]) -> tuple[PermutationResult, ...]:
        return permutation_layers(self.model, self.text, list(permutation), causal=self.causal, limit=MAX_TOKENS)

    def reads(self, text: str) -> tuple[Run, ...]:
        tokenize(text)  # the sentence box's own limits and messages first, as the page's sentence (empty, too long)
        return layer_runs(self.model, text, causal=self.causal, limit=MAX_TOKENS)

    def ablated_output(self, layer: int, head: int) -> BertOutput:
        """The whole forward pass with head ``head`` of layer ``layer`` (1-based) zeroed: maps and embedding."""
        ids = np.array(self.model.encode(self.text).ids, dtype=np.int64)  # (T,): the runs' pieces (under the cap)
        return bert_forward(self.model.weights, ids, causal=self.causal, knockout=Knockout(layer - 1, head - 1))

    def ablated_runs(self, layer: int, head: int, mode: str = "zero") -> tuple[Run, ...]:
        if mode != "zero":
            raise ValueError(self.SUPPORTS["ablation"].reason)
        output = self.ablated_output(layer, head)
        return pretrained_runs_of(PretrainedRun(self.model.encode(self.text), output), self.model.weights.layers)


@dataclass(frozen=True)
class TrainedSource(ModelSource):
    """A model trained in the train view, on its task's fixed example (not the sidebar's sentence)."""

    result: TrainResult
    layer_runs: tuple[Run, ...]

    label: ClassVar[str] = "the model trained in the train view"
    TRAINS: ClassVar[bool] = True
    LEARNED: ClassVar[bool] = True
    SUPPORTS: ClassVar[dict[str, Support]] = {
        "permutation": Support(
            False, "The trained model reads only its task's sequences, and this view reorders your sentence.", INSTEAD
        ),
        "cross": Support(False, "The trained model attends within its task's sequence: it has no second one.", INSTEAD),
        "positions": Support(
            False, "The trained model learned with one positional encoding: it cannot be swapped or shifted.", INSTEAD
        ),
        "scaling": Support(
            False, "The trained model was trained with the 1/√d_k factor: it is in its weights.", INSTEAD
        ),
        "unscaled": Support(
            False, "The trained model was trained with the 1/√d_k factor: it is in its weights.", INSTEAD
        ),
        "decode": Support(False, "The trained model reads its task's sequences, not your sentence.", INSTEAD),
        **{
            key: Support(False, f"The trained model was trained without {what}: it is not in its weights.", INSTEAD)
            for key, what in (
                ("kv_heads", "grouped K/V heads"),
                ("window", "a sliding window"),
                ("prefix", "a prefix mask"),
                ("alibi", "ALiBi's bias"),
            )
        },
        "tiles": Support(
            False,
            "The flash view tiles a run of random or hand-built weights; the trained model's: not built yet.",
            INSTEAD,
        ),
        "sentences": Support(
            False,
            "The trained model reads only its task's sequences of symbols, not typed sentences.",
            INSTEAD,
        ),
        "ablation": OK,
        "logits": OK,
        "examples": OK,
    }

    @property
    def key(self) -> tuple:
        return ("trained", self.result.settings, self.result.steps_done)

    @classmethod
    def of(cls, result: TrainResult) -> TrainedSource:
        return cls(result, runs_of(result, result.fixed_example.inputs[0]))

    def tokens(self) -> Tokens:
        tokens = self.layer_runs[0].tokens
        how = (
            f"The model was trained on the {self.result.settings.task} task's sequences: every map of it is drawn on "
            "this fixed example (the same for every seed), not on the sidebar's sentence."
        )
        return Tokens(tokens, f"the {self.result.settings.task} task's fixed example", (0, len(tokens)), how)

    def architecture(self) -> Architecture:
        m = self.result.settings.model
        return Architecture(m.d_model, m.n_heads, m.n_layers, m.positional, fixed=False)

    def runs(self) -> tuple[Run, ...]:
        return self.layer_runs

    def ablated_runs(self, layer: int, head: int, mode: str = "zero") -> tuple[Run, ...]:
        r = self.result
        knock = knockout(r.params, r.settings.model, probe_set(r), layer - 1, head - 1, mode)  # mean: held-out set
        return runs_of(r, r.fixed_example.inputs[0], knock)

    def logits(self) -> np.ndarray:
        return forward(self.result.params, self.result.settings.model, self.result.fixed_example.inputs[0]).logits

    def examples(self, n: int) -> tuple[tuple[Run, ...], ...]:
        held_out = probe_set(self.result).inputs[:n]  # (n, T): the set training evaluates on, never trained on
        return tuple(runs_of(self.result, tokens) for tokens in held_out)


SOURCES: dict[str, type[ModelSource]] = {
    "random": ConfigSource,
    "identity": ToySource,
    "previous": ToySource,
    "minilm": MiniLMSource,
    "trained": TrainedSource,
}
"""The weights control's choices and the source each builds: the one place a kind's name meets its class."""
WEIGHTS = tuple(SOURCES)
"""Every choice of weights, in the control's order."""


def source_class(weights: str) -> type[ModelSource]:
    """The source for the weights control's value; ``ValueError`` naming the choices otherwise."""
    if weights not in SOURCES:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, got {weights!r}")
    return SOURCES[weights]


__all__ = [
    "EXPERIMENTS",
    "INSTEAD",
    "SOURCES",
    "WEIGHTS",
    "Architecture",
    "ConfigSource",
    "MiniLMSource",
    "ModelSource",
    "Support",
    "Tokens",
    "ToySource",
    "TrainedSource",
    "source_class",
]
