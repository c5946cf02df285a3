"""Who the page is for, read once per run (``Role``), and what that makes of its controls (``Controls``).

A student who follows cannot use the page's controls: changing one leaves following ("You are exploring on your
own"), and the room's settings say what every one of them holds. Drawing them anyway (the view bar, the tour
picker, a view's switches) cost each follower redraw a widget per control, and every follower of a room redraws on
each change the teacher makes (``python -m bench.follower --profile``). So the page hands every view, the tour and
the quiz a ``Controls``: on a following page it returns the room's value for each control without drawing it;
anywhere else it draws the control. A view says where a control goes and what it reads; it never asks whether the
page follows. Turning "Follow the teacher" off gives the controls back on the next run, holding the teacher's values
(``room_page._apply`` wrote them into the page's state).

The page (``dashboard/app.py``) makes the one ``Controls`` of a run from its role: ``OWN`` for an explorer's or a
teacher's page, ``Controls(room_values)`` for a follower's (``follower_page.follower_controls``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


class Role(enum.Enum):
    """Whose page this run draws: it decides which controls exist (``Controls``) and what the room panel offers."""

    EXPLORER = "explorer"
    """A page of one's own: in no room, or a student in a room exploring with "Follow the teacher" off."""
    TEACHER = "teacher"
    """The page that runs a room: its settings become the room's (``room_page.publish_room``)."""
    FOLLOWER = "follower"
    """A student's page that shows the room's settings: the teacher's content, no controls."""


@dataclass(frozen=True)
class Controls:
    """The page's controls, as a view, the tour and the quiz ask for them: ``choice(key, default, draw)``.

    ``room`` is None on a page with controls (``OWN``); on a following page it holds the room's values, every
    followed key the teacher's page set and what else the room holds (the teacher's training)."""

    room: Mapping[str, object] | None = None

    @property
    def drawn(self) -> bool:
        """The page draws its controls: a sentence may point the reader to one."""
        return self.room is None

    def choice(self, key: str, default: T, draw: Callable[[], T]) -> T:
        """The control keyed ``key``: ``draw()`` (the widget, returning its value) on a page with controls; on a
        following page the room's value for ``key`` (``default`` when the teacher's page never set it, which is
        what the teacher's widget then shows), and no widget."""
        if self.room is None:
            return draw()
        return self.room.get(key, default)  # type: ignore[return-value]

    def hint(self, text: str) -> str:
        """``text``, a sentence that tells the reader to use one of the page's controls: itself on a page with
        controls, "" on a following page, which draws none of them (the sidebar's settings, the view bar, a view's
        switches)."""
        return text if self.room is None else ""

    def room_value(self, key: str) -> object:
        """On a following page, the room's value for ``key`` (None when it has none); None on any other page."""
        return None if self.room is None else self.room.get(key)


OWN = Controls()
"""An explorer's or a teacher's page: every control drawn."""
