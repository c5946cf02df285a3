"""Rooms the class follows: one teacher's settings, many students' pages, a tally of anonymous guesses.

A room is a short code (what students type or scan) and a secret teacher key (what changes it). Both come from
``secrets``; both are compared with ``secrets.compare_digest``. Every call that changes a room's settings,
reveals a question's answer or reads its tally takes the key and raises ``Forbidden`` without the right one.

What a room holds, and nothing more: the teacher's widget values keyed by URL key (``settings.LINK_KEYS``), a
version number that grows with every change (students poll it), anonymous session ids (Streamlit's random
per-tab ids, to count students and keep one guess each), one integer guess per session per question, and the
revealed answers. No name, address or text a student typed.

Plain Python, tested without a server; ``dashboard.classroom.room_page`` keeps one ``RoomStore`` per server
process (``st.cache_resource``). Several server replicas would need a shared store (e.g. Redis) instead.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""Upper-case letters and digits without the look-alikes 0/O and 1/I: read off a projector without doubt."""
CODE_LENGTH = 6
"""32^6 = 10^9 codes: guessing one of 50 open rooms takes ~20 million tries."""
KEY_BYTES = 24
"""The teacher key: 192 random bits, URL-safe base64 (32 characters)."""
IDLE_SECONDS = 3 * 3600
"""A room the teacher has not touched for 3 hours is closed (a lecture is shorter)."""
MAX_ROOMS = 50
"""Open rooms per server: the limit keeps memory and polling bounded on a 1 GB host."""
MAX_STUDENTS = 200
"""Students per room; the largest lecture halls."""
STUDENT_IDLE_SECONDS = 10 * 60
"""A student whose page has not polled for 10 minutes (tab closed) frees their seat when the room is full."""
MAX_QUESTIONS = 50
"""Questions whose guesses a room keeps (the oldest dropped first)."""
MAX_ANSWER = 1000
"""A guess is an option's index, 0 <= answer < MAX_ANSWER."""
MAX_QUESTION_ID = 200
"""Characters of a question id (the quiz's own id: settings and head, never student text)."""


class RoomError(ValueError):
    """A request the room cannot take; the message is ours and safe to show."""


class Forbidden(RoomError):
    """A request that needs the room's teacher key came without it."""


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def new_key() -> str:
    return secrets.token_urlsafe(KEY_BYTES)


def normal_code(raw: str) -> str | None:
    """``raw`` as a room code (upper-cased, spaces dropped), or None if it cannot be one."""
    code = "".join(raw.split()).upper()
    ok = len(code) == CODE_LENGTH and all(c in CODE_ALPHABET for c in code)
    return code if ok else None


@dataclass
class Room:
    code: str
    key: str = field(repr=False)
    settings: dict[str, object]
    version: int = 1
    touched: float = 0.0
    """When the teacher last acted (clock seconds): the room closes ``IDLE_SECONDS`` later."""
    students: dict[str, float] = field(default_factory=dict)
    """Session id -> when its page last polled."""
    guesses: OrderedDict[str, dict[str, int]] = field(default_factory=OrderedDict)
    """Question id -> {session id: answer index}."""
    revealed: dict[str, int] = field(default_factory=dict)
    """Question id -> the right answer's index, once the teacher reveals it."""


@dataclass(frozen=True)
class Snapshot:
    """What a student's page may read of a room: settings, version, revealed answers; never the key."""

    code: str
    version: int
    settings: Mapping[str, object]
    revealed: Mapping[str, int]
    students: int


class RoomStore:
    """The rooms of one server process; thread-safe (every session runs in its own thread)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._rooms: dict[str, Room] = {}

    # -- finding rooms -------------------------------------------------------------------------------------------
    def _find(self, code: str) -> Room | None:
        """The open room whose code equals ``code`` (constant-time comparisons); closes idle rooms first."""
        self._close_idle()
        found = None
        for room in self._rooms.values():
            if secrets.compare_digest(room.code.encode(), code.encode()):
                found = room
        return found

    def _teacher(self, code: str, key: str) -> Room:
        """The room if ``key`` is its teacher key; else ``Forbidden`` (same message for every wrong case)."""
        room = self._find(code)
        if room is None or not key or not secrets.compare_digest(room.key.encode(), key.encode()):
            raise Forbidden("Only the room's teacher key can do that.")
        room.touched = self._clock()
        return room

    def _close_idle(self) -> None:
        now = self._clock()
        for code in [c for c, r in self._rooms.items() if now - r.touched > IDLE_SECONDS]:
            del self._rooms[code]

    # -- the teacher ---------------------------------------------------------------------------------------------
    def open(self, settings: Mapping[str, object]) -> tuple[str, str]:
        """A new room showing ``settings``: its (code, teacher key). ``RoomError`` when the server is full."""
        with self._lock:
            self._close_idle()
            if len(self._rooms) >= MAX_ROOMS:
                raise RoomError(f"This server already has {MAX_ROOMS} open rooms: try again later.")
            code = new_code()
            while code in self._rooms:
                code = new_code()
            key = new_key()
            self._rooms[code] = Room(code=code, key=key, settings=dict(settings), touched=self._clock())
            return code, key

    def is_teacher(self, code: str, key: str) -> bool:
        with self._lock:
            try:
                self._teacher(code, key)
            except Forbidden:
                return False
            return True

    def publish(self, code: str, key: str, settings: Mapping[str, object]) -> int:
        """Show ``settings`` in the room; the version grows only when they changed. Needs the key."""
        with self._lock:
            room = self._teacher(code, key)
            if dict(settings) != room.settings:
                room.settings = dict(settings)
                room.version += 1
            return room.version

    def reveal(self, code: str, key: str, question_id: str, answer: int) -> None:
        """Reveal question ``question_id``'s right answer to the room. Needs the key."""
        with self._lock:
            room = self._teacher(code, key)
            room.revealed[_question(question_id)] = _answer(answer)
            room.version += 1

    def tally(self, code: str, key: str, question_id: str) -> dict[int, int]:
        """How many students chose each answer to ``question_id`` (answer -> count). Needs the key."""
        with self._lock:
            room = self._teacher(code, key)
            counts: dict[int, int] = {}
            for answer in room.guesses.get(question_id, {}).values():
                counts[answer] = counts.get(answer, 0) + 1
            return dict(sorted(counts.items()))

    def close(self, code: str, key: str) -> None:
        with self._lock:
            room = self._teacher(code, key)
            del self._rooms[room.code]

    # -- the students --------------------------------------------------------------------------------------------
    def snapshot(self, code: str) -> Snapshot | None:
        """The room's settings, version and revealed answers, or None when there is no such open room."""
        with self._lock:
            room = self._find(code)
            if room is None:
                return None
            return Snapshot(room.code, room.version, dict(room.settings), dict(room.revealed), len(room.students))

    def poll(self, code: str, session_id: str) -> int | None:
        """The room's version (None: closed), and this student is still here. The cheap call made every second."""
        with self._lock:
            room = self._find(code)
            if room is None:
                return None
            if session_id in room.students:
                room.students[session_id] = self._clock()
            return room.version

    def join(self, code: str, session_id: str) -> None:
        """Take a seat in the room (again: no change). ``RoomError`` when it is closed or full."""
        with self._lock:
            room = self._find(code)
            if room is None:
                raise RoomError("There is no open room with this code: it may have closed. Ask for the new code.")
            now = self._clock()
            if session_id not in room.students and len(room.students) >= MAX_STUDENTS:
                gone = [s for s, seen in room.students.items() if now - seen > STUDENT_IDLE_SECONDS]
                for s in gone:
                    del room.students[s]
                if len(room.students) >= MAX_STUDENTS:
                    raise RoomError(f"This room is full ({MAX_STUDENTS} students).")
            room.students[session_id] = now

    def record_guess(self, code: str, question_id: str, session_id: str, answer: int) -> None:
        """A student's guess: one integer per session per question; a new guess replaces the old one."""
        with self._lock:
            room = self._find(code)
            if room is None or session_id not in room.students:
                raise RoomError("Join the room to send your guess.")
            question = _question(question_id)
            if question not in room.guesses and len(room.guesses) >= MAX_QUESTIONS:
                room.guesses.popitem(last=False)
            room.guesses.setdefault(question, {})[session_id] = _answer(answer)

    def __len__(self) -> int:
        with self._lock:
            self._close_idle()
            return len(self._rooms)


def _question(question_id: str) -> str:
    if not isinstance(question_id, str) or not 0 < len(question_id) <= MAX_QUESTION_ID:
        raise RoomError("A question id is a short text.")
    return question_id


def _answer(answer: int) -> int:
    if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < MAX_ANSWER:
        raise RoomError(f"A guess is a whole number from 0 to {MAX_ANSWER - 1}.")
    return answer
