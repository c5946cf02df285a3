"""Named head patterns: the metrics on hand-built weights, then the real model's heads, checked in float32.

A head is named from per-row evidence (``HeadSummary.shares`` against ``NAMED_SHARE``), and a token-to-token
claim needs ``specificity >= SPECIFIC``. Both thresholds were chosen on the CHOOSE sentences below and are
checked here on the CHECK sentences, which played no part in choosing them. The numbers in the tables were
read from MiniLM by hand once; the tests recompute them and hold the thresholds' claims to them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from core.head_summary import (
    NAMED_SHARE,
    PATTERNS,
    ROW_WEIGHT,
    SPECIFIC,
    HeadSummary,
    head_summary,
    name_patterns,
    named_shares,
    pattern_label,
    specificity,
)
from core.pretrained import MiniLM, load_minilm
from core.sources import MiniLMSource
from dashboard.classroom.tours import load_tours
from dashboard.page.common import PRETRAINED_EXAMPLES
from tests.conftest import ROOT, require_minilm


def _one_hot(targets: list[int], t: int) -> np.ndarray:
    """(T, T) weights: row i puts all its weight on key targets[i]."""
    w = np.zeros((t, t))
    w[np.arange(t), targets] = 1.0
    return w


def test_next_weight_and_its_name() -> None:
    w = _one_hot([1, 2, 3, 3], 4)[None]  # (1, 4, 4): rows 0-2 look one ahead, the last row at itself
    s = head_summary(w)
    assert s.next_weight.tolist() == [1.0]  # the last row has no next key and is left out
    assert s.shares["next_weight"].tolist() == [1.0]
    assert name_patterns(s) == [("next-token",)]
    assert named_shares(s) == [(("next-token", 1.0),)]
    assert pattern_label("next-token", 1.0) == "next-token (100% of rows)"


def test_a_head_is_named_by_its_rows_not_by_its_mean() -> None:
    """Mean 0.63 on the next key, but only 1 row of 3 gives it more than half: not a next-token head."""
    w = np.zeros((4, 4))
    w[0] = [0.0, 1.0, 0.0, 0.0]  # one-hot on the next key
    w[1] = [0.3, 0.25, 0.45, 0.0]  # 0.45 on the next key: short of half
    w[2] = [0.3, 0.25, 0.0, 0.45]
    w[3] = [0.25, 0.25, 0.25, 0.25]  # the last row has no next key
    s = head_summary(w[None])
    assert s.next_weight[0] == pytest.approx((1.0 + 0.45 + 0.45) / 3) and s.next_weight[0] > ROW_WEIGHT
    assert s.shares["next_weight"][0] == pytest.approx(1 / 3)
    assert "next-token" not in name_patterns(s)[0]
    w[1] = [0.2, 0.2, 0.6, 0.0]  # now 2 of 3 rows: a majority
    s = head_summary(w[None])
    assert s.shares["next_weight"][0] == pytest.approx(2 / 3) and NAMED_SHARE < 2 / 3
    assert named_shares(s)[0] == (("next-token", pytest.approx(2 / 3)),)


def test_exactly_half_the_rows_is_not_a_majority() -> None:
    w = _one_hot([1, 2, 0, 0, 4], 5)  # rows 0, 1 on the next key; rows 2, 3 on key 0; row 4 has no next key
    s = head_summary(w[None])
    assert s.shares["next_weight"][0] == 0.5
    assert "next-token" not in name_patterns(s)[0]


def test_same_word_weight_counts_the_other_pieces_of_the_word_only() -> None:
    # [CLS] un ##aff ##able cat [SEP]: word ids None 0 0 0 1 None
    word_ids = [None, 0, 0, 0, 1, None]
    w = _one_hot([0, 2, 3, 1, 4, 5], 6)[None]  # pieces of word 0 look at each other, the rest at themselves
    s = head_summary(w, word_ids=word_ids)
    assert s.same_word_weight.tolist() == [1.0]  # mean over the 3 rows of word 0 only
    assert s.shares["same_word_weight"].tolist() == [1.0]
    assert "same-word" in name_patterns(s)[0]
    assert np.isnan(head_summary(w).same_word_weight).all()  # no word ids, no number
    assert np.isnan(head_summary(w).shares["same_word_weight"]).all()
    assert name_patterns(head_summary(np.eye(6)[None]))[0] == ("self",)


def test_every_pattern_has_a_metric_of_head_summary_and_a_reason() -> None:
    fields = HeadSummary.__dataclass_fields__
    assert len({p.name for p in PATTERNS}) == len(PATTERNS) == 5
    for p in PATTERNS:
        assert p.metric in fields and p.threshold == ROW_WEIGHT and len(p.reason) > 40
    assert set(head_summary(np.eye(3)[None]).shares) == {p.metric for p in PATTERNS}


def test_nan_and_missing_metrics_name_nothing() -> None:
    s = head_summary(np.ones((2, 1, 1)))  # one token: previous and next are NaN
    assert np.isnan(s.previous_weight).all() and np.isnan(s.shares["previous_weight"]).all()
    names = name_patterns(s)
    assert all("previous-token" not in n and "next-token" not in n for n in names)
    means_only = HeadSummary(*(np.array([0.9]),) * 5)  # means without per-row shares: no evidence for a name
    assert name_patterns(means_only) == [()]


def test_specificity_tells_a_chosen_key_from_a_column_every_row_reads() -> None:
    t = 5
    column = np.full((t, t), 0.05)
    column[:, 2] = 0.8  # every row reads key 2
    chosen = np.full((t, t), 0.2)
    chosen[3] = [0.05, 0.05, 0.8, 0.05, 0.05]  # only row 3 reads key 2
    s = specificity(np.stack([column, chosen]), query=3, key=2)  # (2,)
    np.testing.assert_allclose(s, [0.0, 0.6])
    assert s[0] < SPECIFIC <= s[1]
    causal = np.tril(np.ones((t, t), dtype=bool))
    w = np.where(causal, chosen, 0.0)  # rows 0 and 1 may not attend to key 2: left out of the mean
    assert specificity(w, 3, 2, causal) == pytest.approx(0.8 - 0.2)


@pytest.fixture(scope="module")
def model() -> MiniLM:
    require_minilm()
    return load_minilm(dtype=np.float32)


def _summaries(model: MiniLM, text: str) -> list[HeadSummary]:
    run = model.run(text)
    return [head_summary(t.weights, t.mask, run.encoding.word_ids) for t in run.output.traces]


CHOOSE = (
    "The bank of the river.",
    "the cat sat on the mat because it was tired",
    "unaffable strawberries hyperparameters tokenization",
    "the teacher praised the students because they worked hard",
    "A quick brown fox jumps over the lazy dog.",
)
"""Sentences NAMED_SHARE was chosen on (core/head_summary.py says what they showed)."""

CHECK = {
    # sentence: share of rows of (layer 1 head 3 on the previous piece, layer 2 head 9 on the next piece,
    # layer 3 head 8 on [CLS]), read from MiniLM once
    "she sold the old piano to a neighbour last spring": (1.0, 7 / 11, 1.0),
    "my brother plays football every saturday morning": (1.0, 5 / 8, 1.0),
    "the committee postponed the vote until further notice": (1.0, 6 / 9, 1.0),
    "rain fell softly on the quiet village all night": (1.0, 5 / 10, 1.0),
    "they built a bridge across the wide river in winter": (1.0, 7 / 11, 1.0),
    "the scientist measured the temperature twice a day": (1.0, 5 / 9, 1.0),
}
"""Sentences no threshold was chosen on. Layer 2 head 9 on "rain fell ...": exactly half its rows, so not named."""

MEASURED = {(1, 3): ("previous-token", 0), (2, 9): ("next-token", 1), (3, 8): ("first-token sink", 2)}
"""(layer, head) -> the pattern of its column in CHECK. Layer 2 head 9 is measured here but not named for it
by the app: see HELD_OUT."""


@pytest.mark.parametrize("text", CHECK)
def test_named_heads_on_sentences_the_thresholds_were_not_chosen_on(model: MiniLM, text: str) -> None:
    summaries = _summaries(model, text)
    for (layer, head), (pattern, column) in MEASURED.items():
        [metric] = [p.metric for p in PATTERNS if p.name == pattern]
        share = float(summaries[layer - 1].shares[metric][head - 1])
        assert share == pytest.approx(CHECK[text][column], abs=1e-6), (layer, head)
        assert (pattern in name_patterns(summaries[layer - 1])[head - 1]) == (share > NAMED_SHARE), (layer, head)
    previous = summaries[0].shares["previous_weight"]
    assert np.sum(previous > NAMED_SHARE) == 1, "layer 1 has exactly one previous-token head"


def test_the_measured_patterns_hold_on_most_check_sentences() -> None:
    """Each measured pattern holds on at least 5 of the 6 CHECK sentences (the counts of the table above)."""
    for _, column in MEASURED.values():
        assert sum(shares[column] > NAMED_SHARE for shares in CHECK.values()) >= 5


@pytest.mark.parametrize("text", CHOOSE[:2])
def test_middle_layers_put_more_than_half_their_weight_on_cls(model: MiniLM, text: str) -> None:
    summaries = _summaries(model, text)
    for layer in (2, 3, 4, 5):
        mean = float(summaries[layer - 1].first_weight.mean())
        assert mean > 0.5, f"layer {layer}: {mean:.2f} of its weight on [CLS]"
    assert float(summaries[0].first_weight.mean()) < 0.5  # layer 1 still reads the sentence


PLURALS = {
    # sentence: (pronoun, its antecedent (not the sentence's first noun), layer 4 head 2's weight from the
    # pronoun on it, its specificity), read from MiniLM once
    "the girl ate the apples because they were sweet": ("they", "apples", 0.895, 0.783),
    "the king visited the farmers because they were poor": ("they", "farmers", 0.885, 0.730),
    "the woman fed the dogs because they were hungry": ("they", "dogs", 0.773, 0.635),
    "the boy saw the birds and he fed them": ("them", "birds", 0.815, 0.660),
    "the mother called the children because they were late": ("they", "children", 0.717, 0.641),
    "the cook burned the cakes so he threw them away": ("them", "cakes", 0.921, 0.840),
    "the student asked the teachers and they answered": ("they", "teachers", 0.210, 0.182),
}
"""CHECK sentences for the claim "layer 4 head 2 sends a plural pronoun to its plural antecedent": SPECIFIC
was chosen on other sentences (core/head_summary.py). It holds on 6 of these 7; on the last, the head gives
"teachers" 0.21 only."""


@pytest.mark.parametrize("text", PLURALS)
def test_layer4_head2_sends_a_plural_pronoun_to_its_antecedent(model: MiniLM, text: str) -> None:
    pronoun, antecedent, weight, specific = PLURALS[text]
    run = model.run(text)
    tokens = run.encoding.tokens
    q, k = tokens.index(pronoun), tokens.index(antecedent)
    w = run.output.traces[3].weights[1]  # (T, T): layer 4, head 2
    assert float(w[q, k]) == pytest.approx(weight, abs=1e-3)
    assert float(specificity(w, q, k)) == pytest.approx(specific, abs=1e-3)
    holds = specific >= SPECIFIC
    assert holds == (text != "the student asked the teachers and they answered")
    if holds:  # the right noun, not the other one: the pronoun gives the antecedent more than the first noun
        first_noun = tokens[2]  # "the <noun> ...": every sentence here starts so
        assert w[q, k] > w[q, tokens.index(first_noun)]
    assert sum(v[3] >= SPECIFIC for v in PLURALS.values()) >= 5


def test_layer6_head12_is_not_specific_to_it_and_cat(model: MiniLM) -> None:
    """The old example: most of the weight of every row goes to "cat", so "it" -> "cat" says nothing about "it"."""
    run = model.run("the cat sat on the mat because it was tired")
    tokens = run.encoding.tokens
    w = run.output.traces[5].weights[11]  # layer 6, head 12
    cat = tokens.index("cat")
    assert np.sum(w[:, cat] > 0.5) >= len(tokens) - 3  # nearly every row (the issue counts 12 of 12 real ones)
    assert specificity(w, tokens.index("it"), cat) < SPECIFIC
    assert specificity(run.output.traces[3].weights[1], tokens.index("it"), cat) >= SPECIFIC  # layer 4 head 2 is


def test_same_word_pieces_attend_to_each_other_somewhere(model: MiniLM) -> None:
    """Some head of layer 1 keeps most of a split word's weight inside the word (the same-word pattern)."""
    summaries = _summaries(model, "unaffable strawberries hyperparameters tokenization")
    assert "same-word" in name_patterns(summaries[0])[2]  # layer 1 head 3 (previous-token) also joins pieces


# -- every head the app names, on sentences none of its claims was made on -------------------------------------------
HELD_OUT = {
    # sentence: (its plural pronoun, the plural noun it refers to); written before any head was measured on them
    "My uncle grows tomatoes, and he sells them at the market every morning.": ("them", "tomatoes"),
    "When the tourists reached the summit, the guide told them to rest.": ("them", "tourists"),
    "The manager interviewed three candidates before she hired them.": ("them", "candidates"),
    "Our neighbour adopted two dogs last year and they sleep all day.": ("they", "dogs"),
    "The pilot greeted the passengers as they boarded the plane.": ("they", "passengers"),
    "The soldiers crossed the river at dawn because they wanted to surprise the enemy.": ("they", "soldiers"),
    "The librarian sorted the returned books before she shelved them.": ("them", "books"),
    "A farmer planted apple trees, and a decade later they gave fruit.": ("they", "trees"),
    "The company recalled its cars because they had faulty brakes.": ("they", "cars"),
    "Before the concert, the conductor warned the musicians that they were too loud.": ("they", "musicians"),
}
"""Ten sentences that no example button, tour step or threshold uses. Every head the app names (the example
buttons, the tours' notes and checks, README's list) must hold on at least HELD_OUT_BAR of them. Each has a
plural pronoun and one plural noun it can refer to, for the "they" -> "students" head; the rest of each
sentence is ordinary text, with capitals, commas, a full stop and a word WordPiece splits ("shelved")."""

HELD_OUT_BAR = 8
"""A fixed claim about a head holds on at least this many of the 10 HELD_OUT sentences."""

DETERMINERS = frozenset({"the", "a", "an", "my", "our", "your", "his", "its", "their"})
"""Articles and possessive determiners ("her" is left out: it is also a pronoun)."""


def _looks_at(run, head: int, query: int, key: int) -> bool:
    """The app's rule for "X looks at Y" (a tour's ``attends``): Y has X's largest weight, and the head is
    specific to X (``specificity >= SPECIFIC``)."""
    w = run.trace.weights[head - 1]  # (T, T)
    return int(np.argmax(w[query])) == key and float(specificity(w, query, key, run.trace.mask)) >= SPECIFIC


def _pattern_share(run, head: int, pattern: str) -> float:
    """The share of the head's rows that show ``pattern`` (core's per-row rule)."""
    [metric] = [p.metric for p in PATTERNS if p.name == pattern]
    summary = head_summary(run.trace.weights[head - 1 : head], run.trace.mask, run.word_ids)
    return float(summary.shares[metric][0])


def _named(pattern: str):
    def holds(run, head: int, sentence: str) -> bool:
        [names] = name_patterns(head_summary(run.trace.weights[head - 1 : head], run.trace.mask, run.word_ids))
        return pattern in names

    return holds


def _determiners_to_the_next_piece(run, head: int, sentence: str) -> bool:
    """Every determiner of the sentence looks at the piece after it (and the sentence has one)."""
    rows = [i for i, token in enumerate(run.tokens[:-1]) if token in DETERMINERS]
    return bool(rows) and all(_looks_at(run, head, i, i + 1) for i in rows)


def _pronoun_to_its_noun(run, head: int, sentence: str) -> bool:
    pronoun, noun = HELD_OUT[sentence]
    return _looks_at(run, head, run.tokens.index(pronoun), run.tokens.index(noun))


@dataclass(frozen=True)
class HeadClaim:
    """What the app says of one MiniLM head, in each place it says it, and how a sentence shows it."""

    button: str
    """The example button's words after "layer L, head H " (``PRETRAINED_EXAMPLES``)."""
    readme: str
    """README's words after "layer L head H: "."""
    holds: Callable[..., bool]
    """(the layer's run, head, sentence) -> whether this sentence shows the claim."""
    pattern: str | None = None
    """The named pattern (``core.PATTERNS``) when the claim is one; None for a row claim (a tour's ``attends``)."""


CLAIMS = {
    (1, 3): HeadClaim("looks at the previous piece", "the previous piece", _named("previous-token"), "previous-token"),
    (2, 9): HeadClaim("sends “the” to the next piece", '"the" → the next piece', _determiners_to_the_next_piece),
    (3, 8): HeadClaim("parks its weight on [CLS]", "[CLS]", _named("first-token sink"), "first-token sink"),
    (4, 2): HeadClaim("sends “they” to “students”", '"they" → "students"', _pronoun_to_its_noun),
}
"""(layer, head) -> the app's claim. Layer 2 head 9 is claimed for its determiner rows, not as a next-token head:
on HELD_OUT 42-67% of its rows look one piece ahead (a majority on 9 of the 10, but never by more than 17 points,
and the sentence's [CLS] row always looks at itself), while every determiner there puts 0.70-0.95 of its weight
on the piece after it, specifically (a margin of 0.69 or more over the other rows)."""


@pytest.fixture(scope="module")
def held_out_runs(model: MiniLM) -> dict[str, tuple]:
    return {text: MiniLMSource.of(model, text).runs() for text in HELD_OUT}


def _held_out(held_out_runs, layer: int, head: int) -> list[str]:
    """The HELD_OUT sentences on which the claim about (layer, head) holds."""
    claim = CLAIMS[layer, head]
    return [text for text, runs in held_out_runs.items() if claim.holds(runs[layer - 1], head, text)]


def _tour_sentences() -> set[str]:
    return {str(s.settings.get("sentence", "")) for tour in load_tours().values() for s in tour.steps}


def test_the_held_out_sentences_are_new() -> None:
    used = {e[0] for e in PRETRAINED_EXAMPLES} | _tour_sentences() | set(CHOOSE) | set(CHECK) | set(PLURALS)
    assert len(HELD_OUT) == 10 and not set(HELD_OUT) & used


@pytest.mark.parametrize(("layer", "head"), list(CLAIMS), ids=[f"L{ly}H{h}" for ly, h in CLAIMS])
def test_every_named_head_holds_on_most_held_out_sentences(held_out_runs, layer: int, head: int) -> None:
    held = _held_out(held_out_runs, layer, head)
    assert len(held) >= HELD_OUT_BAR, f"layer {layer} head {head}: {len(held)} of {len(HELD_OUT)}"


def test_layer2_head9_is_a_determiner_head_not_a_next_token_head(held_out_runs) -> None:
    """Why CLAIMS names it for its determiner rows: every determiner row holds, the next-token share is thin."""
    shares, margins = [], []
    for runs in held_out_runs.values():
        run = runs[1]
        shares.append(_pattern_share(run, 9, "next-token"))
        assert run.trace.weights[8][0, 0] > ROW_WEIGHT  # the [CLS] row looks at itself, never one piece ahead
        rows = [i for i, token in enumerate(run.tokens[:-1]) if token in DETERMINERS]
        margins += [float(specificity(run.trace.weights[8], i, i + 1, run.trace.mask)) for i in rows]
    assert max(shares) < NAMED_SHARE + 0.2 and min(shares) < NAMED_SHARE  # a thin majority, not always one
    assert min(margins) > 2 * SPECIFIC  # every determiner row, by a wide margin


def _claims_in_readme() -> list[tuple[int, int, str]]:
    """README's list of named heads: (layer, head, its words), as 'layer 1 head 3: the previous piece;'."""
    text = " ".join((ROOT / "README.md").read_text().split())
    listed = text[text.index("the example buttons open heads") :][:400]
    listed = listed[: listed.index(")")]
    return [(int(ly), int(h), words.strip()) for ly, h, words in re.findall(r"layer (\d) head (\d+): ([^;]+)", listed)]


def _heads_a_step_names(step) -> set[tuple[int, int]]:
    """A MiniLM tour step's heads: those its note names ("Layer 4, head 2") and the one its checks are about."""
    named = {(int(ly), int(h)) for ly, h in re.findall(r"\b[Ll]ayer (\d+), head (\d+)", step.note)}
    if step.pattern or step.attends:
        named.add((int(step.settings["layer"]), int(step.settings["head"])))
    return named


def test_every_head_the_app_names_is_a_claim_checked_here() -> None:
    """The example buttons, the tours on MiniLM and README's list name only CLAIMS' heads, in CLAIMS' words."""
    for _, layer, head, what in PRETRAINED_EXAMPLES:
        assert what == f"layer {layer}, head {head} {CLAIMS[layer, head].button}"
    assert {(ly, h) for _, ly, h, _ in PRETRAINED_EXAMPLES} == set(CLAIMS)
    assert _claims_in_readme() == [(ly, h, c.readme) for (ly, h), c in CLAIMS.items()]
    for slug, tour in load_tours().items():
        for number, step in enumerate(tour.steps, 1):
            if step.settings.get("weights") != "minilm":
                continue
            for layer, head in _heads_a_step_names(step):
                assert (layer, head) in CLAIMS, (slug, number, layer, head)
            if step.pattern:
                assert CLAIMS[step.settings["layer"], step.settings["head"]].pattern == step.pattern, (slug, number)
            if step.attends:
                assert CLAIMS[step.settings["layer"], step.settings["head"]].pattern is None, (slug, number)


def test_the_held_out_counts_the_readme_and_the_tours_state_are_measured(model: MiniLM, held_out_runs) -> None:
    counts = {head: len(_held_out(held_out_runs, *head)) for head in CLAIMS}
    text = " ".join((ROOT / "README.md").read_text().split())
    *first, last = (str(n) for n in counts.values())
    assert f"holding on {', '.join(first)} and {last} of the {len(HELD_OUT)} in that order" in text
    stated = 0
    for tour in load_tours().values():
        for step in tour.steps:
            if step.settings.get("weights") != "minilm":
                continue
            [*heads] = _heads_a_step_names(step)
            for n, total in re.findall(r"(\d+) of the (\d+) new sentences", step.note):
                assert len(heads) == 1 and (int(n), int(total)) == (counts[heads[0]], len(HELD_OUT)), step.title
                stated += 1
            for low, high, total in re.findall(r"from (\d+)% to (\d+)% of its rows on the (\d+) new", step.note):
                [(layer, head)] = heads
                pattern = step.pattern or _verdict_pattern(model, step, layer, head)
                shares = [_pattern_share(runs[layer - 1], head, pattern) for runs in held_out_runs.values()]
                assert (low, high, int(total)) == (f"{min(shares):.0%}"[:-1], f"{max(shares):.0%}"[:-1], len(HELD_OUT))
                stated += 1
    assert stated >= 2  # the tour says how the "they" head and layer 2 head 9 do on new text


def _verdict_pattern(model: MiniLM, step, layer: int, head: int) -> str:
    """The pattern the page's verdict line names the step's head for on the step's own sentence (the first)."""
    run = MiniLMSource.of(model, step.settings["sentence"]).runs()[layer - 1]
    [named] = named_shares(head_summary(run.trace.weights[head - 1 : head], run.trace.mask, run.word_ids))
    return named[0][0]
