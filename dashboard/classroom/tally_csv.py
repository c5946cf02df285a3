"""After class: the tally of each revealed question as CSV. Pure: the room's kept results in, text out.

One row per question and choice, columns ``question, choice, count, right answer`` ("yes" on the right
choice's row). Question and choice texts may quote a token the teacher typed: a cell that a spreadsheet would
read as a formula (it starts with = + - @, a tab or a carriage return) gets a leading apostrophe.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping

COLUMNS = ("question", "choice", "count", "right answer")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a cell as a formula (OWASP's CSV injection list)."""


def _cell(text: str) -> str:
    return "'" + text if text.startswith(FORMULA_START) else text


def tally_csv(results: Iterable[Mapping]) -> str:
    """``results`` as ``rooms.RoomStore.results`` gives them (``text``, ``choices``, ``answer``, ``counts``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in results:
        counts = list(r["counts"]) + [0] * (len(r["choices"]) - len(r["counts"]))  # (n_choices,)
        for i, choice in enumerate(r["choices"]):
            right = "yes" if i == r["answer"] else "no"
            writer.writerow((_cell(str(r["text"])), _cell(str(choice)), int(counts[i]), right))
    return out.getvalue()
