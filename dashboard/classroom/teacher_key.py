"""The teacher's key in the teacher's browser: kept across a reload, a second tab and a restart; never in an address.

Why a component. Streamlit can neither set a cookie (``st.context.cookies`` is read-only, and Community Cloud's
proxy forwards only an allowlist of cookies) nor touch the browser's history: deleting a query parameter with
``st.query_params`` *pushes* a history entry, so Back showed the old address with the key in it. This module's
one component (the only one the app mounts; ``tests/dashboard/test_hostile_app.py`` bans every other) runs a few
lines of JavaScript in the page, written out below, for exactly two things:

- ``localStorage`` (this browser, this app's origin) keeps room code -> teacher key for the rooms this browser
  runs, so a reload, a second tab or (with Redis) a restarted server finds the key again;
- ``history.replaceState`` takes the claim token out of the address *in place*: the entry the teacher link made
  is rewritten, no entry is added, so Back never shows it. It is rewritten to the page's whole address, the one the
  run holding the token ended with (``address_in_place``): the page's first send is then the browser's address
  already and pushes nothing. Taking out the token alone left ``?room=CODE``, and the page's first send (the room's
  settings, ``?n_heads=2&room=CODE&seed=5``) pushed a second entry.

The rule for the teacher link (what it carries and how long it works):

- It carries a claim token, never the key: ``?room=CODE&claim=TOKEN``. The first page that presents the token
  spends it (``RoomStore.claim``): that page gets the key (into its session and this browser's localStorage), and
  the token opens nothing ever again. Opened a second time, anywhere, the link is a student's link and says so.
- The teacher's room dialog always shows the room's current unspent link (``RoomStore.claim_token``): after a
  link was used, the next one appears there. A teacher on another device opens that one.

Why single-use rather than a link that works while the room lives: the address a browser opens is written to its
global history (the address bar's suggestions, ``chrome://history``) before any page script runs, and on
Community Cloud the app sits in a frame whose host page mirrors the query itself. Neither can be rewritten from
here. A token that is spent once used makes every copy left behind (history, the chat, a screenshot) worthless.
The cost: a teacher who lost every page holding the key and every unused link cannot reclaim the room, and starts
a new one.
"""

from __future__ import annotations

import secrets

import streamlit as st

from dashboard.classroom.rooms import RoomError, RoomStore
from dashboard.state.session import KEY_ASKED, KEY_ASKED_BY, KEY_FORGET, KEY_IN_PLACE, forget, keep, keep_first

CLAIM_PARAM = "claim"
"""The teacher link's query parameter: a single-use claim token (``rooms.RoomStore.claim``). Not in LINK_KEYS."""
COMPONENT_KEY = "teacher_key"
"""The component's widget key (and ``st-key-teacher_key``, its element's class in the page)."""
KEPT_ROOMS = 10
"""Rooms whose key one browser keeps (the newest): a teacher runs one or two at a time."""

# Runs in the page each time the component gets new data (no HTML, nothing drawn). ``data`` comes from
# ``browser_keys`` below and holds only room codes (our alphabet), the key this session just claimed, and a
# parameter name (our constant) with the page's address to write in its place (our keys and parsed values, URL-encoded
# by ``urllib``), and this session's nonce (``KEY_ASKED_BY``: a new session's data differs, so the
# JavaScript runs again in a page that reconnected to a restarted server). It reports back with one trigger value,
# "done".
JS = """
const STORE = "attention-lab:teacher-keys";  // localStorage item: JSON [[code, key], ...], oldest first

function readKept() {
  try {
    const kept = JSON.parse(window.localStorage.getItem(STORE) || "[]");
    return Array.isArray(kept) ? kept.filter((e) => Array.isArray(e) && e.length === 2) : [];
  } catch (e) {
    return [];  // unreadable (or storage blocked): as if empty
  }
}

export default function ({ data, setTriggerValue }) {
  // 1. Keep and forget: rooms that no longer exist go, the teacher's room on this page goes last (newest).
  const drop = new Set(data.forget);
  if (data.remember) drop.add(data.remember[0]);
  let kept = readKept().filter(([code]) => !drop.has(code));
  if (data.remember) kept.push(data.remember);
  kept = kept.slice(-data.kept_rooms);
  try {
    window.localStorage.setItem(STORE, JSON.stringify(kept));
  } catch (e) {
    // storage blocked (private mode): the key stays in this tab's session only
  }
  // 2. The claim token leaves the address in place: this history entry is rewritten, none is added. What replaces
  // the link is the page's own address, so the page's next send finds it there and pushes nothing.
  if (data.drop) {
    const url = new URL(window.location.href);
    if (url.searchParams.has(data.drop)) {
      url.search = data.address;
      window.history.replaceState(window.history.state, "", url.href);
    }
  }
  // 3. Tell Python: the key this browser keeps for the room on the page (if asked), and what was done. A page
  // that is not the room's teacher always hears back (data.answer): it stops mounting this once answered. The
  // teacher's page only for a cleaned address or a key: a trigger reruns the page, which would close a dialog
  // the teacher is reading.
  const found = data.ask ? kept.find(([code]) => code === data.ask) : undefined;
  if (data.drop || found || data.answer) {
    setTriggerValue("done", { code: data.ask, key: found ? found[1] : null, forgot: data.forget });
  }
}
"""

_component = st.components.v2.component("attention_lab_teacher_key", js=JS)


def _noop() -> None:
    """The trigger's callback: the value is read from the component's result in the same run."""


def address_in_place(query: str) -> bool:
    """A run whose address holds the claim token ended with ``query`` (its address without the token, URL-encoded as
    the page sends it): the browser writes it in place of the teacher link. True when the component has not been
    given it yet: the run must rerun so that it is (``address.send``)."""
    if st.session_state.get(KEY_IN_PLACE) == query:
        return False
    keep(KEY_IN_PLACE, query)
    return True


def browser_keys(store: RoomStore, code: str | None, held: tuple[str, str] | None, become_teacher) -> None:
    """Mount the component when the browser has something to do. On the teacher's page (``held``: its (code, key))
    the browser keeps the key, every run; the claim token leaves the address; on a page that is not the teacher of
    room ``code``, the browser is asked, once per room, for a key it keeps: one that opens the room makes this
    session its teacher (``become_teacher(code, key)``, then a rerun), one that does not is forgotten.

    Once the browser answered for room ``code`` (``KEY_ASKED``), and has nothing to forget or clean, a following page's
    runs mount nothing: every student's redraw after a teacher's change skips it. Until the answer is read the
    component is mounted in every run: a run that left it out would unmount it, its JavaScript perhaps not yet run,
    and the run its answer starts must mount it to read the answer."""
    teacher = held is not None and held[0] == code
    gone = st.session_state.get(KEY_FORGET, set())  # codes the browser should drop
    claimed = CLAIM_PARAM in st.query_params
    if claimed and KEY_IN_PLACE not in st.session_state:
        return  # the page's address is known at the run's end, which reruns with it (``address_in_place``)
    if teacher:
        forget(KEY_ASKED)  # the room may close under this page: it then asks again (and forgets)
    elif not claimed and not gone and (code is None or st.session_state.get(KEY_ASKED) == code):
        return  # the browser answered for this room: nothing to keep, forget, clean or ask
    data = {
        "ask": code if code and not teacher else None,
        "remember": list(held) if teacher else None,
        "forget": sorted(gone),
        "drop": CLAIM_PARAM if claimed else None,
        "address": st.session_state[KEY_IN_PLACE] if claimed else None,
        "kept_rooms": KEPT_ROOMS,
        "answer": not teacher,
        "asked_by": keep_first(KEY_ASKED_BY, secrets.token_urlsafe(6)),
    }
    done = _component(key=COMPONENT_KEY, data=data, width="content", height="content", on_done_change=_noop).done
    if not done:
        return
    if CLAIM_PARAM in st.query_params:
        del st.query_params[CLAIM_PARAM]  # the address already lacks it (replaceState): no history entry is added
    forget(KEY_IN_PLACE)
    said = done if isinstance(done, dict) else {}  # the browser's own JSON: anything a hostile page sends
    forgot = said.get("forgot")
    if isinstance(forgot, list):  # the codes this answer's run of the JavaScript removed
        keep(KEY_FORGET, gone - {c for c in forgot if isinstance(c, str)})
    if teacher or not code or said.get("code") != code:
        return  # an answer about another room (the page moved on): the next run asks again
    key = said.get("key")
    try:
        teaches = isinstance(key, str) and store.is_teacher(code, key)
    except RoomError:  # the room's server is away: not answered yet (the page's next run that reaches it asks again)
        return
    keep(KEY_ASKED, code)
    if isinstance(key, str):
        if teaches:
            become_teacher(code, key)
        else:
            keep(KEY_FORGET, st.session_state.get(KEY_FORGET, set()) | {code})
        st.rerun(scope="app")  # once per answer: a trigger's value lasts one run
