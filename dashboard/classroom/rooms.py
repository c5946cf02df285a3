"""Rooms the class follows: one teacher's settings, many students' pages, a tally of anonymous guesses.

A room is a short code (what students type or scan) and a secret teacher key (what changes it). Both come from
``secrets``; both are compared with ``secrets.compare_digest``. The teacher link carries no key, only a claim
token, spent the first time a page presents it (``claim``); the teacher's page shows the next one
(``claim_token``). The rule and why: ``dashboard/classroom/teacher_key.py``. Every call that changes a room's
settings, reveals a question's answer or reads its tally takes the key and raises ``Forbidden`` without the right one.

What a room holds, and nothing more: the teacher's widget values keyed by URL key (``settings.LINK_KEYS``), the
state of the teacher's training of them with the id of the server process that holds it
(``training_jobs.TEACHER_TRAINING``), a version number that grows with every change (students poll it), the
teacher's current question, one seat per
student (Streamlit's random per-tab session id and when its page was last seen), one integer guess per seat for
the current question, the revealed answers with the class's counts at each reveal (and that question's text and
choices, computed from the teacher's settings, for the teacher's download), how often the teacher called
everyone back, and when a teacher's page last showed the room with that page's session id (``held``,
``holder``). Who started the room is kept as salted hashes of the connection's address and of the browser
(``dashboard.serve.clients.browser``), only to count rooms per address and per browser, and to list a browser's rooms
for it. Each student's one pending sentence for the teacher (``send_sentence``: the text, when, and a salted hash
of its tab), until the teacher uses or dismisses it, and when each tab and each address (hashed) sent last, for the
send limits. No name, no address in the clear. Everything goes with the room: 3 hours after the teacher's last
change, or 10 minutes after a teacher's page last showed it.

One interface, ``RoomStore``: it holds every rule (keys, limits, seats, guesses) and asks its backend for a few
storage steps. Two backends pass the same tests (``tests/dashboard/test_rooms.py``):

- ``MemoryRoomStore``, the default: the rooms of one server process (what Community Cloud runs; nothing to install).
  A restart ends every room.
- ``RedisRoomStore`` when ``ATTENTION_LAB_REDIS_URL`` is set: rooms, versions, seats and tallies live in Redis, so
  several app processes serve one room and rooms survive a restart of the app.

Limits, and what each counts. A lecture hall often sits behind one address (the campus NAT), and a script can
open as many tabs (sessions) as it likes, so each limit counts what is hardest to multiply for what it protects:

- rooms started: at most ``ROOMS_PER_BROWSER`` held rooms per browser (a teacher needs one), then
  ``ROOMS_PER_ADDRESS`` per address (a hall's teachers behind one NAT; the bound on a script, which can make up a
  browser per socket), ``MAX_ROOMS`` per server. A room counts while it is held: a teacher's page showed it within
  ``HOLD_SECONDS`` and that page's tab is not known to have closed. A room nobody holds is left behind: it counts
  against no limit, the server closes it to make room for a new one when it has ``MAX_ROOMS``, and it closes by
  itself ``LEFT_SECONDS`` after a teacher's page last showed it (the teacher link, reused, holds it again);
- seats: held only by a page that is there. Streamlit's runtime says when a tab's socket closed (``alive``); and
  a seat is seen only when its page itself asks (its first run, its check every ``room_page.CHECK_SECONDS``), so
  a seat whose page has not answered for ``SEAT_SECONDS`` is free too: a socket that never reads, a phone asleep,
  or a tab on another app process, whether the teacher changes anything or not (the server's pushed runs never
  see a seat). Seats are not counted per address: a whole hall shares one;
- sentences: one pending per tab (a new one replaces it), from a seated tab only, at most one send per
  ``SEND_SECONDS`` per tab and ``SENDS_PER_ADDRESS`` per ``FLOOD_SECONDS`` per address (a hall sends one each),
  ``MAX_SENTENCES`` per room;
- guesses: only for the teacher's current question, one per seat (the last one counts until the reveal), so
  students' own questions can neither add to nor evict it; a freed seat takes its guess with it.

A store whose server does not answer (Redis stopped, hung or restarting) raises ``Unreachable``, a ``RoomError``,
from every call, within ``SOCKET_SECONDS`` (a dropped connection is tried once more), and then at once for
``AWAY_SECONDS`` without asking: a hung Redis costs a process one time-out every 2 s, not one per page. The page
says so and asks again (``room_page``); nothing is lost but what the call would have done.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import math
import secrets
import threading
import time
import unicodedata
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from core.tokens import tokenize

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""Upper-case letters and digits without the look-alikes 0/O and 1/I: read off a projector without doubt."""
CODE_LENGTH = 6
"""32^6 = 10^9 codes: guessing one of 50 open rooms takes ~20 million tries."""
KEY_BYTES = 24
"""The teacher key: 192 random bits, URL-safe base64 (32 characters)."""
IDLE_SECONDS = 3 * 3600
"""A room the teacher has not touched for 3 hours is closed (a lecture is shorter)."""
MAX_ROOMS = 50
"""Open rooms per server (per Redis): the limit keeps memory and polling bounded on a 1 GB host. Held rooms count;
to open one more, the server closes the room left behind longest (``RoomStore.open``)."""
ROOMS_PER_BROWSER = 3
"""Held rooms started from one browser: a teacher needs one, a rehearsal's rooms are left behind and do not count."""
ROOMS_PER_ADDRESS = 20
"""Held rooms started from one address: a campus's teachers behind one NAT, not a script's 49."""
HOLD_SECONDS = 90.0
"""A room is held while a teacher's page showed it within 90 s (the page says so every ``room_page.TALLY_SECONDS``;
a hidden tab's timers run once a minute in Chrome) and that page's tab is not known to have closed."""
LEFT_SECONDS = 10 * 60.0
"""A room no teacher's page has shown for 10 minutes closes: its teacher closed every page that held it."""
MAX_STUDENTS = 300
"""Seats per room: an introductory lecture seats 100-300 (bench.load --lecture-hall runs 300 on one process). A
seat is held only while its page answers (``SEAT_SECONDS``), so a script's tabs, closed or silent, do not keep a hall
out."""
SEAT_SECONDS = 30.0
"""A seat whose page has not answered for 30 s is free: every student's page answers every
``room_page.CHECK_SECONDS`` (10 s), so a seat outlives one late answer."""
MAX_QUESTIONS = 50
"""Revealed answers a room keeps (the oldest dropped first); only the teacher adds to them."""
MAX_ANSWER = 1000
"""A guess is an option's index, 0 <= answer < MAX_ANSWER."""
MAX_QUESTION_ID = 200
"""Characters of a question id (the quiz's own id: settings and head, never student text)."""
CLAIM_BYTES = 24
"""A claim token: 192 random bits, like the key, so guessing one is as hopeless as guessing the key."""
TTL_SECONDS = int(IDLE_SECONDS + 60)
"""A room's Redis keys expire this long after the teacher's last change (``RedisRoomStore``)."""
LISTEN_RETRY_SECONDS = 1.0
"""A Redis store's listener, its connection lost (Redis restarted, the socket closed), subscribes again this often."""
LOG_SECONDS = 60.0
"""The listener logs a lost connection at most once a minute, not at every retry."""
SOCKET_SECONDS = 1.0
"""A Redis call waits at most this long for an answer (a hung Redis: SIGSTOP, a host gone); a dropped connection
(a Redis restart) is tried once more at once. redis-py's own default waits 5 s and retries 10 times."""
AWAY_SECONDS = 2.0
"""After a call found the room's server unreachable, every call says so at once for this long without asking it."""
GONE_KEPT = 10_000
"""Codes of closed rooms the in-process store remembers (why they closed, for the page's message)."""
SEND_SECONDS = 10.0
"""A tab sends at most one sentence to its teacher per 10 s (``RoomStore.send_sentence``)."""
FLOOD_SECONDS = 30.0
SENDS_PER_ADDRESS = MAX_STUDENTS
"""Sentences one address may send to a room per ``FLOOD_SECONDS``: a whole hall behind one NAT sends one each
within 30 s; a script's flood beyond that is refused."""
MAX_SENTENCES = MAX_STUDENTS
"""Pending sentences a room holds: one per student."""

_LOGGER = logging.getLogger(__name__)

Alive = Callable[[str], "bool | None"]
"""session id -> True while its tab is connected, False once it left, None when this process cannot tell."""


class RoomError(ValueError):
    """A request the room cannot take; the message is ours and safe to show."""


class Forbidden(RoomError):
    """A request that needs the room's teacher key came without it."""


class Unreachable(RoomError):
    """The room's server (Redis) did not answer in time or refused the connection: the call did nothing."""

    def __init__(self) -> None:
        super().__init__("The room's server cannot be reached right now.")


def _reaching(method):
    """A ``RoomStore`` call that needs its backend's server: what the backend raises when that server is away
    (``RoomStore._away_errors``) becomes ``Unreachable``, and for ``AWAY_SECONDS`` after that every such call raises
    it at once, asking nothing (logged at most every ``LOG_SECONDS``)."""

    @functools.wraps(method)
    def call(self: RoomStore, *args, **kwargs):
        if time.monotonic() < self._away_until:
            raise Unreachable
        try:
            return method(self, *args, **kwargs)
        except self._away_errors as err:
            now = time.monotonic()
            self._away_until = now + AWAY_SECONDS
            if now - self._away_logged >= LOG_SECONDS:
                self._away_logged = now
                _LOGGER.warning("The room store's server cannot be reached: %r", err)
            raise Unreachable from err

    return call


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def new_key() -> str:
    return secrets.token_urlsafe(KEY_BYTES)


def new_claim() -> str:
    return secrets.token_urlsafe(CLAIM_BYTES)


def normal_code(raw: str) -> str | None:
    """``raw`` as a room code (upper-cased, spaces dropped), or None if it cannot be one."""
    code = "".join(raw.split()).upper()
    ok = len(code) == CODE_LENGTH and all(c in CODE_ALPHABET for c in code)
    return code if ok else None


@dataclass(frozen=True)
class Client:
    """Who asks: the connection's address, the browser tab's session id, and the browser (``serve.clients``)."""

    address: str
    session: str
    browser: str = ""
    """This browser's id (``dashboard.serve.clients.browser``); "" when it has none: the tab then stands for it."""


@dataclass
class Room:
    code: str
    key: str = field(repr=False)
    settings: dict[str, object]
    version: int = 1
    touched: float = 0.0
    """When the teacher last acted (clock seconds): the room closes ``IDLE_SECONDS`` later."""
    address: str = ""
    """A salted hash of the address that started the room (``RoomStore._tag``), to count rooms per address."""
    browser: str = ""
    """A salted hash of the browser that started the room (``Client.browser``), to count and list its rooms."""
    held: float = 0.0
    """When a teacher's page last showed the room (clock seconds): it closes ``LEFT_SECONDS`` later."""
    holder: str = ""
    """The session id of that page: while its tab is open the room is held, once it closed the room is not."""
    question: str | None = None
    """The teacher's current question: the only one students' guesses go to."""
    seats: dict[str, float] = field(default_factory=dict)
    """Session id -> when its page was last seen."""
    guesses: dict[str, int] = field(default_factory=dict)
    """Session id -> answer index, for ``question`` only."""
    revealed: dict[str, int] = field(default_factory=dict)
    """Question id -> the right answer's index, once the teacher reveals it (insertion order: oldest first)."""
    claim: str = field(default="", repr=False)
    """The unspent claim token of the teacher link ("" once spent, until a teacher page asks for the next)."""
    results: dict[str, dict] = field(default_factory=dict)
    """Question id -> the class's answers as they stood at the reveal: ``{"text", "choices", "answer", "counts"}``
    (``counts[i]``: how many picked choice i), for the teacher's after-class download. Oldest dropped first."""
    recall: int = 0
    """How many times the teacher pressed "Bring everyone back": a student's page that saw a lower number follows."""


@dataclass(frozen=True)
class Snapshot:
    """What a student's page may read of a room: settings, version, revealed answers; never the key."""

    code: str
    version: int
    settings: Mapping[str, object]
    revealed: Mapping[str, int]
    question: str | None = None
    recall: int = 0
    """The teacher's "Bring everyone back" count (``Room.recall``)."""


@dataclass(frozen=True)
class Sent:
    """A student's pending sentence, as the teacher's page reads it: no session id, no address."""

    id: str
    """A salted hash of the tab that sent it (``RoomStore._tag``): one pending sentence per tab, named by it."""
    text: str
    """What the student typed, within the sentence box's limits (``_sentence``): plain text, to show as such."""
    at: float
    """When it was sent (clock seconds)."""


@dataclass(frozen=True)
class Owned:
    """A room as the browser that started it sees it in its list (``RoomStore.mine``)."""

    code: str
    held: bool
    """A teacher's page holds it (``RoomStore._held``): it counts against the limits."""
    since: float
    """Seconds since a teacher's page last showed it: it closes by itself at ``LEFT_SECONDS``."""


def _expired(touched: float, held: float, now: float) -> str | None:
    """Why a room stored with these times is closed at ``now``: "idle" (no teacher's change for ``IDLE_SECONDS``),
    "left" (no teacher's page for ``LEFT_SECONDS``), or None while it is open."""
    if now - touched > IDLE_SECONDS:
        return "idle"
    if now - held > LEFT_SECONDS:
        return "left"
    return None


class RoomStore(ABC):
    """The rules of every room; a backend stores them (``MemoryRoomStore``, ``RedisRoomStore``). Thread-safe."""

    survives_restart: bool
    """True when rooms outlive this process (a shared store): the page words a missing room accordingly."""
    _away_errors: tuple[type[BaseException], ...] = ()
    """What the backend raises when its server is away (none for the in-process store): ``Unreachable`` then."""

    def __init__(self, clock: Callable[[], float], alive: Alive) -> None:
        self._clock = clock
        self._alive = alive
        self._away_until = 0.0
        self._away_logged = -LOG_SECONDS
        self.started = time.time()
        """When this store (in effect, this server process's rooms) began: wall-clock seconds."""

    # -- storage: what a backend provides --------------------------------------------------------------------------
    @abstractmethod
    def _locked(self, code: str) -> contextlib.AbstractContextManager:
        """Exclusive access to room ``code`` (``"*"``: to the set of rooms, for opening one)."""

    @abstractmethod
    def _reading(self, code: str) -> contextlib.AbstractContextManager:
        """Access for a consistent read of room ``code``."""

    @abstractmethod
    def _load(self, code: str) -> Room | None:
        """The stored room whose code equals ``code``, or None."""

    @abstractmethod
    def _head(self, code: str) -> tuple[float, float, Snapshot] | None:
        """(touched, held, snapshot) of room ``code`` without reading a seat or a guess: a follower's every run."""

    @abstractmethod
    def _holding(self, code: str) -> tuple[str, float, float] | None:
        """(key, touched, held) of room ``code``, or None: what a teacher's page needs to hold it (``hold``)."""

    @abstractmethod
    def _hold(self, code: str, session: str, now: float) -> None:
        """Room ``code`` was shown ``now`` by the teacher's page of tab ``session`` (nothing if it is gone)."""

    @abstractmethod
    def _save(self, room: Room, new_question: bool = False) -> None:
        """Store the room's own fields (not its seats or guesses: ``_seat``, ``_unseat``, ``_guess`` change those
        one at a time, so a guess or a poll made meanwhile is never written over). ``new_question``: its guesses
        go, in the same step as the question changes."""

    @abstractmethod
    def _seat(self, code: str, session: str, now: float) -> None:
        """Seat ``session`` in room ``code``, seen ``now``."""

    @abstractmethod
    def _unseat(self, code: str, sessions: Sequence[str]) -> None:
        """Free the seats of ``sessions`` and their guesses."""

    @abstractmethod
    def _guesses(self, code: str) -> dict[str, int]:
        """Session id -> answer, for the room's current question."""

    @abstractmethod
    def _guess(self, code: str, question: str, session: str, answer: int, now: float) -> str:
        """Record the guess in one atomic step if ``session`` holds a seat seen within ``SEAT_SECONDS``, and
        ``question`` is the room's current question, not revealed: "" then, else why not ("room": it closed or went
        idle, "seat", "question", "revealed")."""

    @abstractmethod
    def _sentences(self, code: str) -> dict[str, Sent]:
        """The room's pending sentences by ``Sent.id``."""

    @abstractmethod
    def _sends(self, code: str) -> dict[str, list[float]]:
        """Who sent to room ``code`` lately (``"tab:"`` or ``"address:"`` and its tag) -> when."""

    @abstractmethod
    def _put_sentence(self, code: str, sent: Sent, sends: Mapping[str, list[float]], stale: Sequence[str]) -> None:
        """Keep ``sent`` (in place of its tab's last one) and the senders' new times ``sends``, forget ``stale``."""

    @abstractmethod
    def _drop_sentences(self, code: str, ids: Sequence[str] | None) -> None:
        """Forget the pending sentences ``ids`` (None: every one)."""

    @abstractmethod
    def _delete(self, code: str, why: str) -> None:
        """Remove the room and remember for a while why it went (``gone``)."""

    @abstractmethod
    def _codes(self) -> list[str]:
        """The codes of every stored room."""

    @abstractmethod
    def _see(self, code: str, session: str, now: float) -> tuple[int, float, float, bool] | None:
        """(version, touched, held, seated) of room ``code``, the seat's time set to ``now`` if ``session`` holds
        one."""

    @abstractmethod
    def _salt(self) -> bytes:
        """The secret that salts address hashes (shared by every process of one store)."""

    @abstractmethod
    def gone(self, code: str) -> str | None:
        """Why room ``code`` closed recently ("closed" by its teacher, "idle", "left" by every teacher's page), or
        None if this store never knew it."""

    @abstractmethod
    def _announce(self, code: str) -> None:
        """Room ``code``'s version grew or it closed: tell the other processes' listeners (``on_change``)."""

    @abstractmethod
    def on_change(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` soon after any process changes a room's version or closes it (a callback given
        again is still called once per change)."""

    # -- finding rooms -------------------------------------------------------------------------------------------
    def _find(self, code: str) -> Room | None:
        """The open room ``code``; a room idle for ``IDLE_SECONDS``, or left for ``LEFT_SECONDS``, is closed first."""
        room = self._load(code)
        if room is not None and (why := _expired(room.touched, room.held, self._clock())) is not None:
            self._delete(room.code, why)
            return None
        return room

    def _teacher(self, code: str, key: str) -> Room:
        """The room if ``key`` is its teacher key; else ``Forbidden`` (same message for every wrong case). The
        teacher's page acts: the room is touched and held now."""
        room = self._find(code)
        if room is None or not key or not secrets.compare_digest(room.key.encode(), key.encode()):
            raise Forbidden("Only the room's teacher key can do that.")
        room.touched = room.held = self._clock()
        return room

    def _held(self, room: Room, now: float) -> bool:
        """A teacher's page holds the room: it showed the room within ``HOLD_SECONDS``, and its tab is not known to
        have closed (this process's runtime knows at once; of a tab on another process it cannot tell). A tab still
        open whose page left the room (its code box cleared) holds it no longer than ``HOLD_SECONDS``."""
        return self._alive(room.holder) is not False and now - room.held <= HOLD_SECONDS

    def _browser(self, client: Client) -> str:
        """``client``'s browser as a room keeps it (``Room.browser``); a client without one is its tab."""
        return self._tag(client.browser or client.session)

    def _tag(self, address: str) -> str:
        """``address`` as the room keeps it: a salted hash, enough to count and never to read back."""
        return hashlib.blake2b(address.encode(), key=self._salt(), digest_size=12).hexdigest()

    def _seated(self, room: Room, now: float) -> list[str]:
        """The sessions that still hold their seat: seen within ``SEAT_SECONDS`` and not known to have left."""
        return [s for s, seen in room.seats.items() if now - seen <= SEAT_SECONDS and self._alive(s) is not False]

    def _free_seats(self, room: Room, now: float) -> None:
        """Drop the seats of students who left or went silent, and their guesses."""
        seated = set(self._seated(room, now))
        freed = [s for s in room.seats if s not in seated]
        if freed:
            self._unseat(room.code, freed)
        room.seats = {s: t for s, t in room.seats.items() if s in seated}
        room.guesses = {s: a for s, a in room.guesses.items() if s in seated}

    # -- the teacher ---------------------------------------------------------------------------------------------
    @_reaching
    def open(self, settings: Mapping[str, object], client: Client) -> tuple[str, str]:
        """A new room showing ``settings``: its (code, teacher key). ``RoomError`` past a limit (the message says).

        Every limit counts held rooms only (``_held``): per browser first, then per address, then the server's. A
        server with ``MAX_ROOMS`` open rooms closes the ones left behind longest (why: "left") to open this one."""
        with self._locked("*"):
            now = self._clock()
            rooms = [r for c in self._codes() if (r := self._find(c)) is not None]
            held = [r for r in rooms if self._held(r, now)]
            browser, address = self._browser(client), self._tag(client.address)
            if sum(r.browser == browser for r in held) >= ROOMS_PER_BROWSER:
                raise RoomError(
                    f"This browser already runs {ROOMS_PER_BROWSER} open rooms: close one of them to start another "
                    "(a room's teacher link reopens it). A room no page of yours shows closes by itself within "
                    f"{LEFT_SECONDS / 60:g} minutes."
                )
            if sum(r.address == address for r in held) >= ROOMS_PER_ADDRESS:
                raise RoomError(
                    f"{ROOMS_PER_ADDRESS} rooms started from your network are open: close one of yours, or start "
                    f"yours when a colleague closes theirs. A room no teacher's page shows closes by itself within "
                    f"{LEFT_SECONDS / 60:g} minutes."
                )
            if len(held) >= MAX_ROOMS:
                raise RoomError(f"This server already has {MAX_ROOMS} open rooms: try again later.")
            kept = {r.code for r in held}
            left = sorted((r for r in rooms if r.code not in kept), key=lambda r: r.held)
            for room in left[: max(0, len(rooms) + 1 - MAX_ROOMS)]:  # the server is full: the longest left go
                self._delete(room.code, "left")
                self._announce(room.code)
            taken = {r.code for r in rooms}
            code = new_code()
            while code in taken:
                code = new_code()
            key = new_key()
            room = Room(
                code,
                key,
                dict(settings),
                touched=now,
                address=address,
                browser=browser,
                held=now,
                holder=client.session,
            )
            self._save(room)
            return code, key

    @_reaching
    def is_teacher(self, code: str, key: str) -> bool:
        with self._reading(code):
            room = self._find(code)
            return bool(room and key and secrets.compare_digest(room.key.encode(), key.encode()))

    @_reaching
    def claim_token(self, code: str, key: str) -> str:
        """The room's unspent claim token for the teacher link, a new one if the last was spent. Needs the key.

        The same token until a page spends it, so a link shown twice is one link."""
        with self._locked(code):
            room = self._teacher(code, key)
            if not room.claim:
                room.claim = new_claim()
            self._save(room)
            return room.claim

    @_reaching
    def claim(self, code: str, token: str) -> str | None:
        """Spend claim token ``token`` of room ``code``: the room's key, once; None for any other token or room."""
        with self._locked(code):
            room = self._find(code)
            if room is None or not token or not room.claim:
                return None
            if not secrets.compare_digest(room.claim.encode(), token.encode()):
                return None
            room.claim = ""  # spent: the link in the history, the chat or the mail opens nothing any more
            room.held = self._clock()  # the teacher link reused: a teacher's page holds the room again
            self._save(room)
            return room.key

    @_reaching
    def publish(self, code: str, key: str, settings: Mapping[str, object], question: str | None = None) -> int:
        """Show ``settings`` and ask ``question`` (None: no quiz) in the room; the version grows when settings
        changed. A new question starts with no guesses. Needs the key."""
        with self._locked(code):
            room = self._teacher(code, key)
            changed = dict(settings) != room.settings
            if changed:
                room.settings = dict(settings)
                room.version += 1
            question = None if question is None else _question(question)
            new_question = question != room.question
            if new_question:
                room.question, room.guesses = question, {}
            self._save(room, new_question)
            if changed:
                self._announce(code)
            return room.version

    @_reaching
    def reveal(
        self, code: str, key: str, question_id: str, answer: int, text: str = "", choices: Sequence[str] = ()
    ) -> None:
        """Reveal question ``question_id``'s right answer to the room, and keep the class's answers as they stand
        (with the question's ``text`` and ``choices``, for the teacher's download). Needs the key."""
        question, answer = _question(question_id), _answer(answer)
        with self._locked(code):
            room = self._teacher(code, key)
            self._free_seats(room, self._clock())
            room.revealed[question] = answer
            self._save(room)  # guesses close here (``_guess`` reads ``revealed``); then count what came in
            seated = set(room.seats)
            guesses = {s: a for s, a in self._guesses(code).items() if s in seated}
            counts = [0] * max(len(choices), answer + 1)  # one count per choice
            for picked in guesses.values() if question == room.question else ():
                if picked < len(counts):
                    counts[picked] += 1
            room.results[question] = {"text": str(text), "choices": [str(c) for c in choices], "answer": answer}
            room.results[question]["counts"] = counts
            for kept in (room.revealed, room.results):
                while len(kept) > MAX_QUESTIONS:
                    del kept[next(iter(kept))]
            room.version += 1
            self._save(room)
            self._announce(code)

    @_reaching
    def results(self, code: str, key: str) -> list[dict]:
        """Every revealed question's answers as they stood at its reveal (``Room.results``, with its ``"id"``),
        oldest first. Needs the key."""
        with self._locked(code):
            return [{"id": qid, **r} for qid, r in self._teacher(code, key).results.items()]

    @_reaching
    def recall_students(self, code: str, key: str) -> None:
        """ "Bring everyone back": every student's page follows the teacher again at its next look. Needs the key."""
        with self._locked(code):
            room = self._teacher(code, key)
            room.recall += 1
            room.version += 1  # followers rerun, and an explorer's page at its next check (room_page._keep_seat)
            self._save(room)
            self._announce(code)

    @_reaching
    def tally(self, code: str, key: str, question_id: str) -> dict[int, int]:
        """How many seated students chose each answer to ``question_id`` (answer -> count). Needs the key."""
        with self._locked(code):
            room = self._teacher(code, key)
            self._free_seats(room, self._clock())
            self._save(room)
            counts: dict[int, int] = {}
            if question_id == room.question:
                for answer in room.guesses.values():
                    counts[answer] = counts.get(answer, 0) + 1
            return dict(sorted(counts.items()))

    @_reaching
    def close(self, code: str, key: str) -> None:
        with self._locked(code):
            room = self._teacher(code, key)
            self._delete(room.code, "closed")
            self._announce(code)

    @_reaching
    def hold(self, code: str, key: str, session: str) -> bool:
        """The teacher's page of tab ``session`` shows room ``code`` now (``room_page``'s teacher line says so every
        ``TALLY_SECONDS``): it is held. Needs the key; False when the room is not open or the key is not its. One
        light read and one write, no room lock, no seat read."""
        now = self._clock()
        with self._reading(code):
            found = self._holding(code)
            if found is None or not key or not secrets.compare_digest(found[0].encode(), key.encode()):
                return False
            if (why := _expired(found[1], found[2], now)) is not None:
                self._delete(code, why)
                return False
            self._hold(code, session, now)
            return True

    @_reaching
    def mine(self, client: Client) -> list[Owned]:
        """The open rooms ``client``'s browser started (``Room.browser``), the one a page showed last first."""
        now = self._clock()
        browser = self._browser(client)
        with self._locked("*"):
            rooms = [r for c in self._codes() if (r := self._find(c)) is not None]
            found = [r for r in rooms if secrets.compare_digest(r.browser.encode(), browser.encode())]
            owned = [Owned(r.code, self._held(r, now), max(0.0, now - r.held)) for r in found]
        return sorted(owned, key=lambda o: o.since)

    @_reaching
    def close_mine(self, code: str, client: Client) -> None:
        """Close room ``code`` for everyone, as ``close`` does, if ``client``'s browser started it (``mine``);
        ``Forbidden`` otherwise."""
        with self._locked(code):
            room = self._find(code)
            if room is None or not secrets.compare_digest(room.browser.encode(), self._browser(client).encode()):
                raise Forbidden("Only the browser that started a room can close it without its key.")
            self._delete(room.code, "closed")
            self._announce(code)

    @_reaching
    def students(self, code: str) -> int:
        """How many students hold a seat (live tabs only; 0 when the room is not open). Reads every seat: the
        teacher's line asks, every ``room_page.TALLY_SECONDS``; a follower's run never does (``snapshot``)."""
        with self._reading(code):
            room = self._find(code)
            return 0 if room is None else len(self._seated(room, self._clock()))

    # -- the students --------------------------------------------------------------------------------------------
    @_reaching
    def snapshot(self, code: str) -> Snapshot | None:
        """The room's settings, version, revealed answers, question; None when it is not open. Every follower's
        run reads it, so it reads no seat and no guess: one Redis round trip, its bytes whatever the class's size
        (``students`` counts them)."""
        with self._reading(code):
            head = self._head(code)
            if head is None:
                return None
            if (why := _expired(head[0], head[1], self._clock())) is not None:
                self._delete(code, why)
                return None
            return head[2]

    @_reaching
    def poll(self, code: str, session_id: str) -> tuple[int, bool] | None:
        """(version, still seated) of the room (None: closed); a held seat is seen now. Made every second."""
        now = self._clock()
        seen = self._see(code, session_id, now)
        if seen is None or _expired(seen[1], seen[2], now) is not None:
            return None
        return seen[0], seen[3]

    @_reaching
    def join(self, code: str, session_id: str) -> None:
        """Take a seat in the room (again: seen now). ``RoomError`` when it is closed or full.

        A student who holds a seat is only seen now (``poll``: one Redis round trip, no room lock). Every follower's
        run joins, and a publish reruns them all at once: under the lock they queued on it, on Redis each waiting
        turn a 0.1 s sleep, and each rewrote every seat (100 at once: 0.49 s, now 0.075 s; bench/README.md,
        the lecture hall)."""
        polled = self.poll(code, session_id)
        if polled is not None and polled[1]:
            return
        with self._locked(code):
            room = self._find(code)
            if room is None:
                raise RoomError("There is no open room with this code: it may have closed. Ask for the new code.")
            now = self._clock()
            if session_id not in room.seats and len(room.seats) >= MAX_STUDENTS:
                self._free_seats(room, now)
                if len(room.seats) >= MAX_STUDENTS:
                    raise RoomError(
                        f"This room is full ({MAX_STUDENTS} students). A seat frees within {SEAT_SECONDS:.0f} s of "
                        "someone leaving."
                    )
            self._seat(code, session_id, now)

    @_reaching
    def leave(self, code: str, session_id: str) -> None:
        """Give the seat back (and its guess) at once. One step, no room lock."""
        self._unseat(code, [session_id])

    @_reaching
    def record_guess(self, code: str, question_id: str, session_id: str, answer: int) -> None:
        """A student's guess for the teacher's current question: one per seat, the last one counts until the reveal.

        One atomic step on one student's entry (on Redis a script: one round trip, no room lock), whatever the
        class's size: a quiz sends the whole hall's guesses within seconds."""
        question, answer = _question(question_id), _answer(answer)
        gone = self._alive(session_id) is False  # this process's runtime knows the tab closed
        why = "seat" if gone else self._guess(code, question, session_id, answer, self._clock())
        if why == "room":
            raise RoomError("This room has closed: your guess was not sent.")
        if why == "seat":
            raise RoomError("Join the room to send your guess: your seat was freed while your page was away.")
        if why == "question":
            raise RoomError(
                "Your guess counts for the class only on the teacher's question: turn on “Follow the teacher”."
            )
        if why == "revealed":
            raise RoomError("The teacher has revealed this answer: guesses are closed.")

    @_reaching
    def send_sentence(self, code: str, client: Client, text: str) -> None:
        """A seated student's sentence for the teacher: one pending per tab (a new one replaces it), at most one send
        per ``SEND_SECONDS`` per tab, ``SENDS_PER_ADDRESS`` per ``FLOOD_SECONDS`` per address, ``MAX_SENTENCES``
        per room; the sentence box's limits (``_sentence``). ``RoomError`` says why not."""
        text = _sentence(text)
        with self._locked(code):
            room = self._find(code)
            if room is None:
                raise RoomError("This room has closed: your sentence was not sent.")
            now = self._clock()
            if self._alive(client.session) is False or client.session not in self._seated(room, now):
                raise RoomError("Join the room to send a sentence: your seat was freed while your page was away.")
            sid = self._tag(client.session)
            tab, address = f"tab:{sid}", f"address:{self._tag(client.address)}"
            sends = {who: [t for t in times if now - t < FLOOD_SECONDS] for who, times in self._sends(code).items()}
            last = max(sends.get(tab, ()), default=None)
            if last is not None and now - last < SEND_SECONDS:
                wait = math.ceil(SEND_SECONDS - (now - last))
                raise RoomError(f"You sent a sentence a moment ago: you can send the next one in {wait} s.")
            if len(sends.get(address, ())) >= SENDS_PER_ADDRESS:
                raise RoomError(
                    f"More than {SENDS_PER_ADDRESS} sentences came from your network in {FLOOD_SECONDS:g} s: "
                    "try again in a little while."
                )
            pending = self._sentences(code)
            if sid not in pending and len(pending) >= MAX_SENTENCES:
                raise RoomError(
                    f"Your teacher's list is full ({MAX_SENTENCES} sentences): try again once your teacher has used "
                    "or dismissed some."
                )
            fresh = {tab: [now], address: [*sends.get(address, ()), now]}
            stale = [who for who, times in sends.items() if not times and who not in fresh]
            self._put_sentence(code, Sent(sid, text, now), fresh, stale)

    @_reaching
    def sentences(self, code: str, key: str) -> list[Sent]:
        """The class's pending sentences, oldest first. Needs the key."""
        with self._reading(code):
            if not self.is_teacher(code, key):
                raise Forbidden("Only the room's teacher key can do that.")
            return sorted(self._sentences(code).values(), key=lambda sent: sent.at)

    @_reaching
    def dismiss_sentences(self, code: str, key: str, ids: Sequence[str] | None = None) -> None:
        """Take sentences ``ids`` off the class's list (None: clear it). Needs the key."""
        with self._locked(code):
            self._teacher(code, key)
            self._drop_sentences(code, None if ids is None else list(ids))

    @_reaching
    def __len__(self) -> int:
        with self._locked("*"):
            return sum(self._find(c) is not None for c in self._codes())


class MemoryRoomStore(RoomStore):
    """The rooms of one server process (``st.cache_resource``): the default, nothing to install."""

    survives_restart = False

    def __init__(self, clock: Callable[[], float] = time.monotonic, alive: Alive = lambda session: None) -> None:
        super().__init__(clock, alive)
        self._lock = threading.RLock()
        self._rooms: dict[str, Room] = {}
        self._gone: OrderedDict[str, str] = OrderedDict()
        self._secret = secrets.token_bytes(16)
        self._sent: dict[str, dict[str, Sent]] = {}
        """Room code -> its pending sentences (``RoomStore._sentences``); they go with the room (``_delete``)."""
        self._senders: dict[str, dict[str, list[float]]] = {}
        """Room code -> who sent lately and when (``RoomStore._sends``)."""

    def _locked(self, code: str) -> contextlib.AbstractContextManager:
        return self._lock

    _reading = _locked

    def _load(self, code: str) -> Room | None:
        found = None
        for room in self._rooms.values():  # constant-time comparisons: the code's letters leak no timing
            if secrets.compare_digest(room.code.encode(), code.encode()):
                found = room
        return found

    def _head(self, code: str) -> tuple[float, float, Snapshot] | None:
        room = self._load(code)
        if room is None:
            return None
        snap = Snapshot(room.code, room.version, dict(room.settings), dict(room.revealed), room.question, room.recall)
        return room.touched, room.held, snap

    def _holding(self, code: str) -> tuple[str, float, float] | None:
        room = self._load(code)
        return None if room is None else (room.key, room.touched, room.held)

    def _hold(self, code: str, session: str, now: float) -> None:
        with self._lock:
            if (room := self._load(code)) is not None:
                room.held, room.holder = now, session

    def _save(self, room: Room, new_question: bool = False) -> None:
        self._rooms[room.code] = room  # its seats and guesses with it: one object, under the one lock

    def _seat(self, code: str, session: str, now: float) -> None:
        with self._lock:
            if (room := self._load(code)) is not None:
                room.seats[session] = now

    def _unseat(self, code: str, sessions: Sequence[str]) -> None:
        with self._lock:
            if (room := self._load(code)) is not None:
                for session in sessions:
                    room.seats.pop(session, None)
                    room.guesses.pop(session, None)

    def _guesses(self, code: str) -> dict[str, int]:
        with self._lock:
            room = self._load(code)
            return {} if room is None else dict(room.guesses)

    def _guess(self, code: str, question: str, session: str, answer: int, now: float) -> str:
        with self._lock:
            room = self._load(code)
            if room is None or now - room.touched > IDLE_SECONDS:
                return "room"
            seen = room.seats.get(session)
            if seen is None or now - seen > SEAT_SECONDS:
                return "seat"
            if question != room.question:
                return "question"
            if question in room.revealed:
                return "revealed"
            room.guesses[session] = answer
            return ""

    def _sentences(self, code: str) -> dict[str, Sent]:
        with self._lock:
            return dict(self._sent.get(code, {}))

    def _sends(self, code: str) -> dict[str, list[float]]:
        with self._lock:
            return {who: list(times) for who, times in self._senders.get(code, {}).items()}

    def _put_sentence(self, code: str, sent: Sent, sends: Mapping[str, list[float]], stale: Sequence[str]) -> None:
        with self._lock:
            kept = self._sent.setdefault(code, {})
            kept.pop(sent.id, None)  # a replacement goes last: the list stays in the order sent
            kept[sent.id] = sent
            senders = self._senders.setdefault(code, {})
            senders.update(sends)
            for who in stale:
                senders.pop(who, None)

    def _drop_sentences(self, code: str, ids: Sequence[str] | None) -> None:
        with self._lock:
            kept = self._sent.get(code, {})
            for sid in list(kept) if ids is None else ids:
                kept.pop(sid, None)

    def _delete(self, code: str, why: str) -> None:
        del self._rooms[code]
        self._sent.pop(code, None)
        self._senders.pop(code, None)
        self._gone[code] = why
        while len(self._gone) > GONE_KEPT:
            self._gone.popitem(last=False)

    def _codes(self) -> list[str]:
        return list(self._rooms)

    def _see(self, code: str, session: str, now: float) -> tuple[int, float, float, bool] | None:
        with self._lock:
            room = self._rooms.get(code)
            if room is None:
                return None
            seated = session in room.seats
            if seated:
                room.seats[session] = now
            return room.version, room.touched, room.held, seated

    def _salt(self) -> bytes:
        return self._secret

    def gone(self, code: str) -> str | None:
        with self._lock:
            return self._gone.get(code)

    def _announce(self, code: str) -> None:
        """No other process to tell: the teacher's page wakes this process's watcher (``push.changed``)."""

    def on_change(self, callback: Callable[[], None]) -> None:
        """Nothing to listen to: every change is made on this process, whose pages call ``push.changed``."""


SEE_SCRIPT = """
local head = redis.call('HMGET', KEYS[1], 'version', 'touched', 'held')
if not head[1] then return false end
local seated = redis.call('HEXISTS', KEYS[2], ARGV[1])
if seated == 1 then redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) end
return {head[1], head[2], head[3] or head[2], seated}
"""
"""A student's poll in one round trip: the room's version, teacher's last change and last page, and the seat seen
now."""

HOLD_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'held', ARGV[1], 'holder', ARGV[2])
return 1
"""
"""A teacher's page shows the room (``RoomStore.hold``): its time and tab, written only while the room exists (an
HSET alone would make a room that has just closed a hash of two fields)."""

GUESS_SCRIPT = """
local head = redis.call('HMGET', KEYS[1], 'touched', 'question', 'revealed')
if not head[1] or tonumber(head[1]) < tonumber(ARGV[5]) then return 'room' end
local seen = redis.call('HGET', KEYS[2], ARGV[2])
if not seen or tonumber(seen) < tonumber(ARGV[4]) then return 'seat' end
if head[2] ~= ARGV[1] then return 'question' end
if cjson.decode(head[3])[ARGV[6]] ~= nil then return 'revealed' end
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[3], redis.call('PTTL', KEYS[1]))
return ''
"""
"""A guess in one atomic step (``RoomStore._guess``): KEYS room, seats, guesses; ARGV the question as stored
(JSON), session, answer, seen since (now - SEAT_SECONDS), touched since (now - IDLE_SECONDS), the question id. The
guesses go with the room (its key's time to live)."""

HEAD_FIELDS = ("touched", "held", "version", "settings", "revealed", "question", "recall")
"""What ``_head`` reads of a room's hash: not the key, the claim, or the kept results (up to ``MAX_QUESTIONS``)."""


class RedisRoomStore(RoomStore):
    """Rooms in Redis (``ATTENTION_LAB_REDIS_URL``): every app process that points at it serves the same rooms.

    Keys, under ``prefix``: ``room:CODE`` (a hash: key, claim token, settings as JSON, version, touched,
    question, revealed, who started it, when and from which tab a teacher's page last showed it), ``seats:CODE``
    and ``guesses:CODE`` (hashes by session id), the set ``rooms``, ``gone:CODE`` (why a room closed), ``salt``,
    and ``lock:CODE`` (redis-py's lock); the pub/sub channel ``changed`` carries a room's code when its version
    grew (``on_change``). Every key expires: a room ``IDLE_SECONDS`` after its teacher's last change, whatever
    happens to the app processes. The clock is the wall clock (``time.time``), the one every process shares.
    """

    survives_restart = True

    def __init__(
        self,
        url: str,
        clock: Callable[[], float] = time.time,
        alive: Alive = lambda session: None,
        prefix: str = "attention_lab:",
    ) -> None:
        import redis  # only when configured: the default store needs nothing installed
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        super().__init__(clock, alive)
        self._away_errors = (redis.ConnectionError, redis.TimeoutError, redis.exceptions.LockError, OSError)

        def client(retries: int) -> redis.Redis:
            retry = Retry(NoBackoff(), retries, supported_errors=(redis.ConnectionError,))  # a time-out: not again
            timeouts = {"socket_timeout": SOCKET_SECONDS, "socket_connect_timeout": SOCKET_SECONDS}
            return redis.Redis.from_url(url, decode_responses=True, retry=retry, health_check_interval=30, **timeouts)

        self._redis = client(1)
        self._listening = client(0)
        """The listener's own connections: one it loses raises (``_listen`` subscribes again and calls back), where a
        retry would have reconnected in silence, past the changes made meanwhile."""
        self._prefix = prefix
        self._see_script = self._redis.register_script(SEE_SCRIPT)
        self._guess_script = self._redis.register_script(GUESS_SCRIPT)
        self._hold_script = self._redis.register_script(HOLD_SCRIPT)
        self._secret: bytes | None = None
        """Read at its first use, not here: a store made while Redis is away works once it is back."""
        self._callbacks: list[Callable[[], None]] = []
        self._listener: threading.Thread | None = None
        self._listen_lock = threading.Lock()
        self.stopped = threading.Event()
        """Set it to end the listener (tests: a store whose redis-server is gone)."""

    def _k(self, *parts: str) -> str:
        return self._prefix + ":".join(parts)

    def _keys(self, code: str) -> tuple[str, str, str]:
        return self._k("room", code), self._k("seats", code), self._k("guesses", code)

    def _sentence_keys(self, code: str) -> tuple[str, str]:
        """The room's pending sentences (a hash by ``Sent.id``) and who sent lately (``RoomStore._sends``)."""
        return self._k("sentences", code), self._k("sends", code)

    @contextlib.contextmanager
    def _locked(self, code: str) -> Iterator[None]:
        with self._redis.lock(self._k("lock", code), timeout=10, blocking_timeout=10):
            yield

    def _reading(self, code: str) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()  # _load reads the room in one MULTI transaction

    def _load(self, code: str) -> Room | None:
        room_key, seats_key, guesses_key = self._keys(code)
        with self._redis.pipeline() as pipe:
            raw, seats, guesses = pipe.hgetall(room_key).hgetall(seats_key).hgetall(guesses_key).execute()
        if not raw:
            return None
        return Room(
            code=code,
            key=raw["key"],
            settings=json.loads(raw["settings"]),
            version=int(raw["version"]),
            touched=float(raw["touched"]),
            address=raw["address"],
            browser=raw.get("browser", ""),
            held=float(raw.get("held", raw["touched"])),
            holder=raw.get("holder", ""),
            question=json.loads(raw["question"]),
            seats={s: float(t) for s, t in seats.items()},
            guesses={s: int(a) for s, a in guesses.items()},
            revealed=json.loads(raw["revealed"]),
            claim=raw.get("claim", ""),
            results=json.loads(raw.get("results", "{}")),
            recall=int(raw.get("recall", 0)),
        )

    def _head(self, code: str) -> tuple[float, float, Snapshot] | None:
        raw = dict(zip(HEAD_FIELDS, self._redis.hmget(self._k("room", code), HEAD_FIELDS), strict=True))
        if raw["version"] is None:
            return None
        snap = Snapshot(
            code,
            int(raw["version"]),
            json.loads(raw["settings"]),
            json.loads(raw["revealed"]),
            json.loads(raw["question"]),
            int(raw["recall"] or 0),
        )
        return float(raw["touched"]), float(raw["held"] or raw["touched"]), snap

    def _holding(self, code: str) -> tuple[str, float, float] | None:
        key, touched, held = self._redis.hmget(self._k("room", code), ("key", "touched", "held"))
        return None if key is None else (key, float(touched), float(held or touched))

    def _hold(self, code: str, session: str, now: float) -> None:
        self._hold_script(keys=[self._k("room", code)], args=[repr(now), session])

    def _save(self, room: Room, new_question: bool = False) -> None:
        room_key, seats_key, guesses_key = self._keys(room.code)
        fields = {
            "key": room.key,
            "settings": json.dumps(room.settings),
            "version": room.version,
            "touched": repr(room.touched),
            "address": room.address,
            "browser": room.browser,
            "held": repr(room.held),
            "holder": room.holder,
            "question": json.dumps(room.question),
            "revealed": json.dumps(room.revealed),
            "claim": room.claim,
            "results": json.dumps(room.results),
            "recall": room.recall,
        }
        with self._redis.pipeline() as pipe:  # one MULTI: a guess sees the old question and its guesses, or neither
            pipe.hset(room_key, mapping=fields)
            if new_question:
                pipe.delete(guesses_key)
            for key in (room_key, seats_key, guesses_key, *self._sentence_keys(room.code)):
                pipe.expire(key, TTL_SECONDS)
            pipe.sadd(self._k("rooms"), room.code)
            pipe.execute()

    def _seat(self, code: str, session: str, now: float) -> None:
        seats_key = self._k("seats", code)
        with self._redis.pipeline() as pipe:
            pipe.hset(seats_key, session, repr(now)).expire(seats_key, TTL_SECONDS).execute()

    def _unseat(self, code: str, sessions: Sequence[str]) -> None:
        _, seats_key, guesses_key = self._keys(code)
        with self._redis.pipeline() as pipe:
            pipe.hdel(seats_key, *sessions).hdel(guesses_key, *sessions).execute()

    def _guesses(self, code: str) -> dict[str, int]:
        return {s: int(a) for s, a in self._redis.hgetall(self._k("guesses", code)).items()}

    def _guess(self, code: str, question: str, session: str, answer: int, now: float) -> str:
        args = [json.dumps(question), session, answer, repr(now - SEAT_SECONDS), repr(now - IDLE_SECONDS), question]
        return self._guess_script(keys=list(self._keys(code)), args=args)

    def _sentences(self, code: str) -> dict[str, Sent]:
        raw = self._redis.hgetall(self._sentence_keys(code)[0])
        return {sid: Sent(sid, *json.loads(value)) for sid, value in raw.items()}

    def _sends(self, code: str) -> dict[str, list[float]]:
        return {who: json.loads(times) for who, times in self._redis.hgetall(self._sentence_keys(code)[1]).items()}

    def _put_sentence(self, code: str, sent: Sent, sends: Mapping[str, list[float]], stale: Sequence[str]) -> None:
        sentences_key, sends_key = self._sentence_keys(code)
        ttl = self._redis.pttl(self._k("room", code))  # they go with the room (its key's time to live)
        with self._redis.pipeline() as pipe:
            pipe.hset(sentences_key, sent.id, json.dumps([sent.text, sent.at]))
            pipe.hset(sends_key, mapping={who: json.dumps(times) for who, times in sends.items()})
            if stale:
                pipe.hdel(sends_key, *stale)
            if ttl > 0:
                pipe.pexpire(sentences_key, ttl).pexpire(sends_key, ttl)
            pipe.execute()

    def _drop_sentences(self, code: str, ids: Sequence[str] | None) -> None:
        sentences_key = self._sentence_keys(code)[0]
        if ids is None:
            self._redis.delete(sentences_key)
        elif ids:
            self._redis.hdel(sentences_key, *ids)

    def _announce(self, code: str) -> None:
        self._redis.publish(self._k("changed"), code)

    def on_change(self, callback: Callable[[], None]) -> None:
        """Redis pub/sub: one listener thread per store subscribes to ``changed`` and calls every callback on each
        message. A lost connection (the socket closed, Redis restarted) is logged and subscribed again, at once
        and then every ``LISTEN_RETRY_SECONDS`` while Redis is away; the thread never ends on an error. Once
        subscribed again it calls back (a change meanwhile reached no one). Meanwhile the watcher's own tick still
        looks (``push.WATCH_SECONDS``): a change is seen late, never missed."""
        with self._listen_lock:
            if callback not in self._callbacks:
                self._callbacks.append(callback)
            if self._listener is None:
                self._listener = threading.Thread(target=self._listen, name="AttentionLabRoomListener", daemon=True)
                self._listener.start()

    def _listen(self) -> None:
        logged, lost = -LOG_SECONDS, False
        while not self.stopped.is_set():
            pubsub = self._listening.pubsub(ignore_subscribe_messages=True)
            since = time.monotonic()
            try:
                pubsub.subscribe(self._k("changed"))
                if lost:  # a change made while the connection was down reached no one: look now
                    lost = False
                    self._heard()
                while not self.stopped.is_set():
                    if pubsub.get_message(timeout=1.0) is not None:
                        self._heard()
            except Exception:  # whatever went wrong, listen again (the watcher's tick covers the gap)
                lost = True
                if time.monotonic() - logged >= LOG_SECONDS:
                    logged = time.monotonic()
                    _LOGGER.warning("The room listener lost Redis: subscribing again", exc_info=True)
                if time.monotonic() - since < LISTEN_RETRY_SECONDS:  # it failed at once: Redis is away
                    self.stopped.wait(LISTEN_RETRY_SECONDS)
            finally:
                with contextlib.suppress(Exception):
                    pubsub.close()

    def _heard(self) -> None:
        for callback in list(self._callbacks):
            callback()

    def _delete(self, code: str, why: str) -> None:
        with self._redis.pipeline() as pipe:
            pipe.delete(*self._keys(code), *self._sentence_keys(code)).srem(self._k("rooms"), code)
            pipe.set(self._k("gone", code), why, ex=IDLE_SECONDS).execute()

    def _codes(self) -> list[str]:
        codes = sorted(self._redis.smembers(self._k("rooms")))
        expired = [c for c in codes if not self._redis.exists(self._keys(c)[0])]  # a key's TTL ran out
        if expired:
            self._redis.srem(self._k("rooms"), *expired)
        return [c for c in codes if c not in expired]

    def _see(self, code: str, session: str, now: float) -> tuple[int, float, float, bool] | None:
        room_key, seats_key, _ = self._keys(code)
        found = self._see_script(keys=[room_key, seats_key], args=[session, repr(now)])
        return None if found is None else (int(found[0]), float(found[1]), float(found[2]), bool(found[3]))

    def _salt(self) -> bytes:
        if self._secret is None:
            self._redis.set(self._k("salt"), secrets.token_hex(16), nx=True)  # the first process's, kept
            self._secret = bytes.fromhex(self._redis.get(self._k("salt")))
        return self._secret

    @_reaching
    def gone(self, code: str) -> str | None:
        return self._redis.get(self._k("gone", code))


def _question(question_id: str) -> str:
    if not isinstance(question_id, str) or not 0 < len(question_id) <= MAX_QUESTION_ID:
        raise RoomError("A question id is a short text.")
    return question_id


def _sentence(text: str) -> str:
    """``text`` stripped, if the sentence box would take it: ``core.tokenize``'s limits and messages (empty, too
    long, too many tokens), and no control or invisible format character but an emoji's joiner (a student's text
    is shown to the teacher as it is: a right-to-left override would hide what it says). ``RoomError`` otherwise."""
    if not isinstance(text, str):
        raise RoomError("A sentence is text.")
    text = text.strip()
    try:
        tokenize(text)
    except ValueError as err:
        raise RoomError(str(err)) from err
    hidden = next((c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Cs") and c != "\u200d"), None)
    if hidden is not None:
        raise RoomError(
            f"The sentence has an invisible control character (U+{ord(hidden):04X}): delete it and send again."
        )
    return text


def _answer(answer: int) -> int:
    if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < MAX_ANSWER:
        raise RoomError(f"A guess is a whole number from 0 to {MAX_ANSWER - 1}.")
    return answer
