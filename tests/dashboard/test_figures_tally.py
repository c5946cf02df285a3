"""The class's tally (dashboard/figures/tally.py): horizontal bars whose wrapped labels are whole choices, escaped.

How it reads on the teacher's projector and phone is measured in chromium (tests/e2e/test_room_quiz_in_browser.py).
"""

from __future__ import annotations

from dashboard.figures.layout import BAR_LABEL_CHARS, PRESENTER_MIN_TICK
from dashboard.figures.tally import choice_label, tally_figure

ZEROS = (
    "above the diagonal: a key after its query",
    "below the diagonal: a key before its query",
    "the diagonal: each query's own key",
    "none: every weight is above 0",
)
"""The zero question's choices on random weights: the first question a room's quiz asks."""


def test_each_choice_wraps_to_short_lines_and_keeps_every_word():
    for choice in ZEROS:
        lines = choice_label(choice, right=False).split("<br>")
        assert len(lines) > 1 and max(map(len, lines)) <= BAR_LABEL_CHARS
        assert " ".join(lines) == choice
    assert choice_label(ZEROS[3], right=True).endswith(" ✓")


def test_a_typed_token_is_escaped_after_the_wrap():
    """A label may quote a typed token: "<b>" is drawn literally, and no entity is split by a line break."""
    label = choice_label("2·<b>&&&&&&&&&&&&&&&&&&&&</b>", right=False)
    assert "<b>" not in label and "&lt;b&gt;" in label
    assert all(not part.endswith("&am") for part in label.split("<br>"))


def test_bars_lie_down_one_row_per_choice_tall_enough_for_its_lines():
    fig = tally_figure(ZEROS, {0: 2, 3: 1}, 3, presenter=True)
    [bars] = fig.data
    assert bars.orientation == "h" and list(bars.x) == [2, 0, 0, 1]
    assert fig.layout.yaxis.autorange == "reversed"  # the choices top to bottom, in the order the question lists
    lines = max(label.count("<br>") + 1 for label in bars.y)
    assert fig.layout.height - fig.layout.margin.t - fig.layout.margin.b >= len(ZEROS) * lines * PRESENTER_MIN_TICK
    assert fig.layout.xaxis.tickfont.size >= PRESENTER_MIN_TICK and fig.layout.yaxis.tickfont.size >= PRESENTER_MIN_TICK
    assert fig.layout.title.text.startswith("3 guesses;")
    assert tally_figure(ZEROS, {1: 1}, 3).layout.title.text.startswith("1 guess;")
