"""One parser for every URL key: what a link may carry, read again on every rerun.

Every control is bound to the query parameter of its key (``bind="query-params"``), and Streamlit 1.67
seeds a widget from the address when it first appears (and on Back/Forward). Some values make a widget
raise instead of falling back (``?n_heads=``: ``int(None)``; ``?seed=inf``: OverflowError; ``?tour_step=²``).
So before any widget exists, ``read_address`` reads the address, and for each value that is new there (not
the one the page itself wrote) asks ``read`` whether it is usable. A bad value is replaced, in the address
and in ``st.session_state``, by the key's default for the other settings, and the run starts again with
the corrected address, so no widget ever sees it; a note says so once. The view and the tour
(``settings.OWNED_KEYS``) have unbound controls: ``read_address`` sets their session values from the address.
On Back or Forward, Streamlit reruns with the entry's address winning over the session, and so does
``read_address``: every key is read as on a first run (a key the entry leaves out is its default).

``SPECS`` declares each key once: its kind, its valid values (read from the widgets' own option constants,
so options are never written twice) and its default, both possibly depending on the keys before it.
``read`` is pure (no Streamlit): tests call it for every key's fallback.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import streamlit as st
from streamlit.errors import StreamlitAPIException

from core import MAX_TOKENS, POSITIONAL_KINDS, head_count_problem
from core.ablation import MODES as ABLATION_MODES
from core.sources import SOURCES, WEIGHTS, ModelSource
from core.training import MAX_STEPS, SAFE_LRS, TASK_NAMES
from dashboard.classroom.teacher_key import CLAIM_PARAM
from dashboard.classroom.tours import TOUR_KEYS, Step, load_tours
from dashboard.page.probes import KNOCKOUT_CHOICES, NONE, TEMPERATURES
from dashboard.state.address import OWN_KEYS, going_back, replaced, sent_before
from dashboard.state.settings import (
    D_MODELS,
    DEFAULT_CONFIG,
    DEFAULTS,
    LINK_KEYS,
    MAX_HEADS,
    MAX_SEED,
    OWNED_KEYS,
    TRAIN_STEPS,
    Settings,
    fixed_shape,
    head_options,
    kv_head_options,
    nearest_heads,
    recommended_state,
    settings_from,
)
from dashboard.views import DEFAULT_VIEW, VIEWS
from dashboard.views.class_heads import DEFAULT_TEXT as CLASS_TEXT
from dashboard.views.contrast import DEFAULT_SECOND
from dashboard.views.cross import DEFAULT_SOURCE
from dashboard.views.permutation import MODES
from dashboard.views.positions import DEFAULT_SHIFT, MAX_SHIFT
from dashboard.views.shapes import MAX_BATCH
from dashboard.views.steps import MAX_STEP

BAD = object()
"""What ``Spec.parse`` returns for text that is not a valid value of its key."""
Context = Mapping[str, object]
"""The values of the keys read so far (earlier in ``SPECS``): what a later key's options depend on."""
MAX_QUESTIONS = 9_999
"""quiz_question: the run decides how many questions there are; a link may ask for any up to this."""


def _kind(ctx: Context) -> type[ModelSource]:
    """The model source the weights read so far choose (``core.sources``): ask it what it fixes."""
    return SOURCES[str(ctx.get("weights", DEFAULT_CONFIG.weights))]


OFF = {"kv_heads": None, "window": 0, "prefix": 0, "alibi": False, "scaled": True}
"""A variant (or scaling off) the weights cannot run, as it runs: off (K/V heads as many as the heads)."""
EXPERIMENT = {"kv_heads": "kv_heads", "window": "window", "prefix": "prefix", "alibi": "alibi", "scaled": "unscaled"}
"""Each key's experiment in ``ModelSource.supports``."""


def fixed_by_weights(ctx: Context) -> dict[str, object]:
    """The settings the chosen weights fix, so a link cannot set them: a pretrained model's d_model, heads and
    positions, and off for each variant the weights cannot run (its control shows what runs, disabled)."""
    kind = _kind(ctx)
    fixed = {} if kind.ARCHITECTURE is None else fixed_shape(kind.ARCHITECTURE)
    for key, experiment in EXPERIMENT.items():
        if not kind.supports(experiment):
            fixed[key] = ctx.get("n_heads") if key == "kv_heads" else OFF[key]
    return fixed


def _trains(ctx: Context) -> bool:
    """The page opens the train view or weights it trains: each task's recommendation is the default."""
    return ctx.get("view") == "train" or _kind(ctx).TRAINS


def _default(key: str, fallback: object) -> Callable[[Context], object]:
    """A sidebar default, or the task's recommended value when the page trains (a link to the train view, or a
    step of a tour there, takes the task's recommendation for what it leaves out)."""

    def default(ctx: Context) -> object:
        if _trains(ctx):
            return recommended_state(str(ctx.get("task", DEFAULTS.task))).get(key, fallback)
        return fallback

    return default


def _config_weights(ctx: Context) -> str:
    """The weights a random or hand-built run uses for these settings (what the head counts depend on)."""
    return _kind(ctx).config_weights(str(ctx["weights"]))


def _heads(ctx: Context) -> list[int]:
    """The head counts the sidebar offers for these settings."""
    return head_options(int(ctx["d_model"]), str(ctx["positional"]), _config_weights(ctx))


def _default_heads(ctx: Context) -> int:
    """The sidebar's (or the task's) head count, moved to the nearest these settings allow, as the sidebar does."""
    wanted, options = int(_default("n_heads", DEFAULT_CONFIG.n_heads)(ctx)), _heads(ctx)
    return nearest_heads(wanted, options) if options else wanted


def _layers(ctx: Context) -> range:
    """Layer choices: the trained model's own, a pretrained model's; other weights show no layer (any reads)."""
    kind = _kind(ctx)
    if kind.TRAINS:
        return range(1, int(ctx.get("train_layers", 1)) + 1)
    fixed = [k.ARCHITECTURE.n_layers for k in SOURCES.values() if k.ARCHITECTURE is not None]
    return range(1, (kind.ARCHITECTURE.n_layers if kind.ARCHITECTURE else max(fixed, default=1)) + 1)


def _shown_heads(ctx: Context) -> range:
    """Choices of a view's head picker: 1 to the number of heads the page draws (``read`` sets a fixed count)."""
    return range(1, int(ctx["n_heads"]) + 1)


def _tour_steps(ctx: Context) -> range:
    tour = load_tours().get(str(ctx.get("tour")))
    return range(1, (len(tour.steps) if tour else max(len(t.steps) for t in load_tours().values())) + 1)


@dataclass(frozen=True)
class Spec:
    """One URL key: what its text must be, and what the page shows when it is not."""

    key: str
    kind: str
    """"choice" (one of ``options``), "whole" (an integer in ``options``, a range), "switch" (true/false) or
    "text" (anything: the page itself says what it cannot use, as for a typed sentence)."""
    options: Callable[[Context], Sequence] | Sequence = ()
    default: Callable[[Context], object] | object = None
    """None: the widget's own default (no tour; the last replay step)."""

    def valid(self, ctx: Context) -> Sequence:
        return self.options(ctx) if callable(self.options) else self.options

    def fallback(self, ctx: Context) -> object:
        return self.default(ctx) if callable(self.default) else self.default

    def parse(self, raw: str, ctx: Context) -> object:
        """The value ``raw`` stands for, or ``BAD`` when it is not a valid one here."""
        text = raw.strip()
        if self.kind == "text":
            return raw
        if raw == "" and self.default is None and self.kind == "choice":  # a cleared picker (no tour) writes ""
            return None
        if self.kind == "switch":
            return {"true": True, "false": False}.get(text.lower(), BAD)
        if self.kind == "whole":
            n = whole_number(text)
            return n if n is not None and n in self.valid(ctx) else BAD
        for option in self.valid(ctx):  # choice: the option's own text, or the same number written otherwise
            if text == str(option) or (isinstance(option, int | float) and number(text) == option):
                return option
        return BAD

    def must(self, ctx: Context) -> str:
        """What the key's text must be, for a note."""
        valid = self.valid(ctx)
        if self.kind == "switch":
            return "true or false"
        if self.kind == "whole":
            return f"a whole number from {valid[0]} to {valid[-1]}"
        return f"one of {', '.join(map(str, valid))}"


def whole_number(text: str) -> int | None:
    """``text`` as a modest integer (ASCII digits, optional sign, up to 9 digits), or None (``²``, ``1e3``)."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit() or len(digits) > 9:
        return None
    return int(text)


def number(text: str) -> float | None:
    """``text`` as a finite number in plain ASCII notation, or None."""
    if not text.isascii():
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


SPECS: tuple[Spec, ...] = (
    # The ones others depend on first: the view and weights, then the model's shape.
    Spec("view", "choice", tuple(VIEWS), DEFAULT_VIEW),
    Spec("weights", "choice", WEIGHTS, DEFAULT_CONFIG.weights),
    Spec("task", "choice", TASK_NAMES, DEFAULTS.task),
    Spec("positional", "choice", POSITIONAL_KINDS, _default("positional", DEFAULT_CONFIG.positional)),
    Spec("d_model", "choice", D_MODELS, _default("d_model", DEFAULT_CONFIG.d_model)),
    Spec("n_heads", "choice", _heads, _default_heads),
    Spec("kv_heads", "choice", lambda ctx: kv_head_options(int(ctx["n_heads"])), lambda ctx: ctx["n_heads"]),
    Spec("causal", "switch", default=_default("causal", DEFAULT_CONFIG.causal)),
    Spec("scaled", "switch", default=DEFAULT_CONFIG.scaled),
    Spec("seed", "whole", range(MAX_SEED + 1), _default("seed", DEFAULT_CONFIG.seed)),
    Spec("train_layers", "choice", (1, 2), _default("train_layers", DEFAULTS.train_layers)),
    Spec("train_steps", "choice", TRAIN_STEPS, _default("train_steps", DEFAULTS.train_steps)),
    Spec("lr", "choice", SAFE_LRS, _default("lr", DEFAULTS.lr)),
    Spec("layer", "choice", _layers, DEFAULTS.layer),
    Spec("sentence", "text", default=DEFAULTS.sentence),
    Spec("presenter", "switch", default=DEFAULTS.presenter),
    Spec("window", "whole", range(MAX_TOKENS + 1), DEFAULT_CONFIG.window),
    Spec("prefix", "whole", range(MAX_TOKENS + 1), DEFAULT_CONFIG.prefix),
    Spec("alibi", "switch", default=DEFAULT_CONFIG.alibi),
    # A view's own controls.
    Spec("average", "switch", default=False),
    Spec("values", "switch", default=False),
    Spec("one_layer", "switch", default=False),
    Spec("one_head", "switch", default=False),
    Spec("perm_mode", "choice", MODES, MODES[0]),
    Spec("perm_seed", "whole", range(MAX_SEED + 1), 0),
    Spec("perm_text", "text", default=""),
    Spec("perm_head", "whole", _shown_heads, 1),
    Spec("step_head", "whole", _shown_heads, 1),
    Spec("first_step", "whole", range(1, MAX_STEP + 1), 1),  # 1..the steps drawn: the steps view clamps
    Spec("head", "whole", _shown_heads, 1),
    Spec("shift_head", "whole", _shown_heads, 1),
    Spec("batch", "whole", range(1, MAX_BATCH + 1), 1),
    Spec("shift", "whole", range(1, MAX_SHIFT + 1), DEFAULT_SHIFT),
    Spec("source", "text", default=DEFAULT_SOURCE),
    Spec("replay_step", "whole", range(MAX_STEPS + 1)),  # which steps were snapshotted: the train view knows
    Spec("room", "text", default=""),
    Spec("quiz", "switch", default=False),
    Spec("quiz_question", "whole", range(1, MAX_QUESTIONS + 1), 1),  # how many: the run decides (clamped there)
    Spec("cache_step", "whole", range(1, MAX_TOKENS + 1)),  # 1..T: the kv_cache view knows T (default: the last)
    Spec("cache_head", "whole", lambda ctx: range(1, int(ctx["kv_heads"]) + 1), 1),  # 1..kv_heads
    Spec("block_size", "whole", range(1, MAX_TOKENS + 1)),  # 1..T: the flash view knows T (default: T // 4)
    Spec("block", "whole", range(1, MAX_TOKENS + 1)),  # 1..number of blocks: the flash view knows it
    Spec("flash_head", "whole", _shown_heads, 1),
    Spec("ablate", "choice", KNOCKOUT_CHOICES, NONE),  # the model's own heads: the panel knows (else "none")
    Spec("ablate_mode", "choice", ABLATION_MODES, "mean"),
    Spec("temperature", "choice", TEMPERATURES, 1.0),
    Spec("probe_query", "whole", range(MAX_TOKENS), 0),  # 0..T-1: the steps view clamps to its T
    Spec("probe_key", "whole", range(MAX_TOKENS), 0),
    Spec("class_text", "text", default=CLASS_TEXT),
    Spec("class_head", "whole", _shown_heads, 1),
    Spec("second", "text", default=DEFAULT_SECOND),
    Spec("contrast_head", "whole", _shown_heads, 1),
    Spec("tour", "choice", lambda ctx: tuple(load_tours())),
    Spec("tour_step", "whole", _tour_steps, 1),
)
SPEC = {s.key: s for s in SPECS}


@dataclass(frozen=True)
class Reading:
    """What a link (or a changed address) asks for, every value usable."""

    values: dict[str, object]
    """Each link key the page reads, with a valid value: the link's own, or the fallback."""
    problems: dict[str, str]
    """Key -> what its text must be: the link's value was not usable and ``values`` holds the fallback."""
    ignored: tuple[str, ...] = ()
    """Keys the chosen weights fix (MiniLM's shape): the link's value differs and is not used."""
    unknown: int = 0
    """Parameters no control reads."""
    context: Mapping[str, object] | None = None
    """Every key's value after this reading (the link's, or ``known``, or the default)."""
    defaults: Mapping[str, object] | None = None
    """Every key's default where it was read: what the key means when the address leaves it out (a control's
    default, so the browser drops the key from the address at that value, as the page does)."""

    def address(self) -> dict[str, str]:
        """The address of this reading: every value that differs from the default the address itself implies, as
        its control writes it. ``read`` of it gives the same context again."""
        ctx, defaults = self.context or {}, self.defaults or {}
        return {k: address_text(v) for k, v in ctx.items() if v is not None and not _same(v, defaults.get(k))}


def _same(a: object, b: object) -> bool:
    """Equal as the address writes them (``True`` and ``"true"``, 4 and ``"4"``; None and "" are both empty)."""
    return address_text(a) == address_text(b)


def nearest(value: float, options: Sequence) -> object:
    """The option closest to ``value`` (the smaller on a tie): where a number the options no longer hold moves."""
    return min(options, key=lambda o: (abs(o - value), o))


def _repaired(spec: Spec, raw: str, ctx: Context) -> object:
    """A value the page itself made (a control, a callback, the room) that is not valid here: the nearest valid number
    (a head count after d_model changed, K/V heads after the head count did), else the key's default."""
    valid = spec.valid(ctx)
    n = number(raw.strip())
    numeric = [o for o in valid if isinstance(o, int | float) and not isinstance(o, bool)]
    if n is not None and numeric and len(numeric) == len(valid):
        return nearest(n, numeric)
    return spec.fallback(ctx)


def read(link: Mapping[str, str], known: Mapping[str, object] | None = None, *, repair: bool = False) -> Reading:
    """Parse ``link`` (key -> the address's text). ``known``: the current values of the keys it leaves out.

    ``repair``: the values are the page's own, not a link's: one its options no longer hold moves to the nearest valid
    one (``_repaired``), silently. Pure and total: any text for any key gives a valid value; never raises.
    """
    known = known or {}
    ctx: dict[str, object] = {}
    values: dict[str, object] = {}
    problems: dict[str, str] = {}
    defaults: dict[str, object] = {}
    ignored = []
    for spec in SPECS:
        key = spec.key
        fixed = fixed_by_weights(ctx)
        if key in fixed:
            ctx[key] = defaults[key] = fixed[key]
            if key in link:  # the link's value is not used: the weights' own is
                values[key] = fixed[key]
                if link[key].strip().lower() != address_text(fixed[key]):
                    ignored.append(key)
            continue
        defaults[key] = spec.fallback(ctx)
        if key in link:
            value = spec.parse(link[key], ctx)
            if value is BAD and repair:
                value = _repaired(spec, link[key], ctx)
            elif value is BAD:
                problems[key] = _heads_problem(link[key], ctx) if key == "n_heads" else spec.must(ctx)
                value = defaults[key]
            ctx[key] = values[key] = value
        else:
            ctx[key] = known[key] if key in known else defaults[key]
    return Reading(values, problems, tuple(ignored), sum(k not in SPEC for k in link), ctx, defaults)


def _heads_problem(raw: str, ctx: Context) -> str:
    """Why the link's head count cannot be drawn (it names the number, never the raw text)."""
    n = whole_number(raw.strip())
    if n is None:
        return "is not a whole number"
    if problem := head_count_problem(int(ctx["d_model"]), n, str(ctx["positional"]), _config_weights(ctx)):
        return f"cannot be used ({problem[:-1]})"
    return f"asks for {n} heads; at most {MAX_HEADS} are drawn"


def address_text(value: object) -> str:
    """A value as its widget writes it to the address (``True`` -> ``"true"``, ``0.003`` -> ``"0.003"``, an
    empty choice -> ``""``)."""
    if value is None:
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)


def shown(key: str, value: object) -> str:
    """How a note names the value on the page."""
    if value is None:
        return {
            "tour": "no tour",
            "replay_step": "the last snapshot",
            "cache_step": "the last step",
            "block_size": "a quarter of the tokens",
            "block": "the first block",
        }.get(key, "its default")
    if key == "n_heads":
        return f"{value} head{'s' * (value != 1)}"
    return f"{key} = {address_text(value)}"


def notes(reading: Reading, now: Mapping[str, object] | None = None) -> list[str]:
    """One sentence per key whose link value fell back, naming the key and the value shown (``now``, when the
    page has moved on, e.g. a tour step or the train view's recommendation); never the link's own text."""
    now = now or {}
    out = []
    for key, must in reading.problems.items():
        value = now.get(key, reading.values[key])
        if key == "n_heads":
            out.append(f"The link's head count (n_heads) {must}: showing {shown(key, value)}.")
        else:
            out.append(f"The link's {key} must be {must}: showing {shown(key, value)}.")
    return out


# -- on the page ------------------------------------------------------------------------------------------------------
_SEEN = "_url_seen"
"""Session: the address as the last run left it (``remember_address``; after this module's corrections when
a run ends early)."""
_LINK = "_url_link"
"""Session: the link read before this module restarted the run (its corrections in place)."""
_FIXED = "_url_fixed"
"""Session: key -> value this module corrected, written again in the restarted run (before the widgets)."""
_NOTES = "_url_notes"
"""Session: the notes for the next page drawn (shown once)."""
_RESTARTS = "_url_restarts"
"""Session: runs restarted in a row; a correction that does not hold never restarts a run twice."""


def _set_url(key: str, text: str | None) -> None:
    """Write (None: remove) ``key`` in the address; a parameter a widget owns is left to that widget."""
    try:
        if text is not None:
            st.query_params[key] = text
        elif key in st.query_params:
            del st.query_params[key]
    except StreamlitAPIException:  # bound to a widget: the session value below moves it, and it writes the URL
        pass


def _set_session(key: str, value: object) -> None:
    """A key's session value (a widget's, or an unbound URL key's: ``settings.OWNED_KEYS``); None: its control starts
    empty, or from its default."""
    if value is None:
        st.session_state.pop(key, None)
    else:
        st.session_state[key] = value


def _holds(key: str, text: str) -> bool:
    """The address shows what the session already holds for ``key``: the page wrote it, not a link."""
    return key in st.session_state and address_text(st.session_state[key]) == text


def read_address() -> dict[str, str]:
    """Read the address on every rerun; call it before any widget. Returns the link: what is new in it.

    New means it differs from what the last run left, from what the page's own widgets hold and from what the page
    sent lately (``address.sent_before``), so a value the user just set or the page wrote is never read back as a
    link. Each new value is parsed (``read``); unusable ones are replaced (address and session) and the run
    restarts once with the corrected address, so no widget sees them.
    Parameters no widget reads (not in ``settings.LINK_KEYS``) leave the address once read, but for the teacher
    link's claim token: removing it here would push a history entry that keeps it (``classroom/teacher_key.py``).
    The returned link holds the new values (usable ones, in their address text) and the unknown parameters; on a rerun
    where the address did not change, it is empty.
    """
    for key, value in st.session_state.pop(_FIXED, {}).items():  # the restarted run: the corrections again
        st.session_state[key] = value
    address = {k: st.query_params[k] for k in st.query_params}
    back = going_back()  # Back or Forward: every value is the address's, as on a first run
    seen = {} if back else st.session_state.get(_SEEN, {})
    new = {
        k: v for k, v in address.items() if back or (v != seen.get(k) and not _holds(k, v) and not sent_before(k, v))
    }
    if new or back:
        known = {} if back else {k: st.session_state[k] for k in LINK_KEYS if k in st.session_state and k not in new}
        reading = read(new, known)
    else:  # most reruns (every follower's redraw) bring nothing new: nothing to parse
        reading = Reading({}, {})  # what this function uses of ``read({}, known)``: no values, problems or ignored
    for key in OWNED_KEYS:  # no widget seeds these from the address: the page does
        if back or (key in new and key not in reading.problems):
            _set_session(key, reading.context[key])
    link = dict(st.session_state.pop(_LINK, {}))
    fixed = {}
    for key, raw in new.items():
        if key == CLAIM_PARAM:  # the teacher link's token: teacher_key rewrites the address in place, no push
            link[key] = raw
        elif key not in LINK_KEYS or key in reading.ignored:
            _set_url(key, None)  # read (a note counts or names it), then dropped: the URL keeps what it controls
            link[key] = raw
        elif key in reading.problems:
            fixed[key] = reading.values[key]
            _set_url(key, None)  # the widget starts from the session value and writes it back if not default
        elif address_text(reading.values[key]) != raw:  # usable, but not as its widget reads it: rewrite
            fixed[key] = reading.values[key]
            _set_url(key, address_text(reading.values[key]))
            link[key] = address_text(reading.values[key])
        else:
            link[key] = raw
    for key, value in fixed.items():
        _set_session(key, value)
    if reading.problems:
        said = [(k, must, reading.values[k]) for k, must in reading.problems.items()]
        st.session_state[_NOTES] = [*st.session_state.get(_NOTES, []), *said]
    st.session_state[_SEEN] = {k: st.query_params[k] for k in st.query_params}
    if fixed and st.session_state.get(_RESTARTS, 0) < 1:
        st.session_state[_RESTARTS] = st.session_state.get(_RESTARTS, 0) + 1
        st.session_state[_LINK] = link
        st.session_state[_FIXED] = {k: v for k, v in fixed.items() if v is not None}
        st.rerun()  # widgets seed from the address the run started with: start again from the corrected one
    st.session_state[_RESTARTS] = 0
    return link


def remember_address() -> None:
    """Call it last in the run: the address as the page leaves it (its widgets write theirs during the run).

    What a callback or a widget changes before the next run is then the page's own, not a new link.
    """
    st.session_state[_SEEN] = {k: st.query_params[k] for k in st.query_params}


def pending_notes() -> list[str]:
    """The notes of the last address read, each once: the page moved on from its values afterwards."""
    said = st.session_state.pop(_NOTES, [])
    reading = Reading({k: value for k, _, value in said}, {k: must for k, must, _ in said})
    return notes(reading, {k: st.session_state[k] for k in reading.problems if k in st.session_state})


# -- the page's values: one reading of one address per run ------------------------------------------------------------
_VALUES = "_url_values"
"""Session: every key's value as the last full run left it (what its controls showed)."""
_ADDRESS = "_url_address"
"""Session: the address the last full run ended with (``Reading.address`` of its values); a following page's is the
room's."""


def with_own(address: Mapping[str, str]) -> dict[str, str]:
    """``address`` (a room's, a tour step's) on this screen: with its own presenter mode and room."""
    own = {k: address_text(st.session_state[k]) for k in OWN_KEYS if st.session_state.get(k) is not None}
    return {**{k: v for k, v in address.items() if k not in OWN_KEYS}, **own}


def settle(link: Mapping[str, str], room: Mapping[str, str] | None = None) -> Reading:
    """This run's value of every key, each valid for the others, written into the controls' state: call it once,
    after ``read_address`` and before any control. Settings come from its ``context`` (``settings.settings_from``).

    The values are read from one address, through ``read``:
    - a following page's: the room's address (``room``), with this screen's own keys (``OWN_KEYS``);
    - a tour step's (``address.replace``), likewise;
    - a link opened (the session's first run, Back or Forward): the link, every key it leaves out at its default (on a
      first run, but for what the run set before the controls: the room's settings a teacher link opens with);
    - otherwise the last run's address, with what changed since: a control the user moved, a callback (an example,
      a task's recommendation), a new value in the address. A value the address leaves out is the default the rest
      of it implies, as in a link: K/V heads follow the head count until chosen, the train view's recommendation
      fills what the user did not set, and a link to the page opens the same values.
    A value no longer valid moves to the nearest valid one (``read``'s ``repair``), and so does one a client sent that
    no control offers (None for a required choice, NaN, a list): every control's value passes the address's parser.
    """
    state = st.session_state
    before = state.get(_VALUES)
    if going_back():
        given = {k: v for k, v in link.items() if k in SPEC}
    elif before is None:  # the session's first run: the link, and what this run set before the controls (a room's)
        given = {k: _text(state[k]) for k in SPEC if state.get(k) is not None} | {
            k: v for k, v in link.items() if k in SPEC
        }
    else:
        given = {**state.get(_ADDRESS, {}), **{k: v for k, v in link.items() if k in SPEC}}
        given |= {k: _text(state[k]) for k in before if k in state and not _same(state[k], before[k])}
    step = replaced()
    if room is not None or step is not None:
        own = {k: given[k] for k in OWN_KEYS if k in given}
        given = {**{k: v for k, v in (room if room is not None else step).items() if k not in OWN_KEYS}, **own}
    reading = read(given, repair=True)
    for key, value in reading.context.items():
        if value is None:
            state.pop(key, None)
        elif key not in state or type(state[key]) is not type(value) or state[key] != value:
            state[key] = value
    # what the next run starts from if this one ends early (an st.rerun): its values, every one it was given kept;
    # ``finish`` replaces them with what the controls showed
    state[_VALUES], state[_ADDRESS] = reading.context, reading.address()
    return reading


def _text(value: object) -> str:
    """A control's value as address text; a value no control has (a list, a dict: a forged widget state) reads as
    text no key parses, so it is replaced."""
    return address_text(value) if isinstance(value, str | int | float | bool) or value is None else "\x00"


def finish(reading: Reading, drawn: frozenset[str], *, following: bool = False) -> dict[str, str]:
    """Last in a full run: the address the page ends with, from the values its controls show (``drawn``: the keys
    of the controls this run drew; the view and the tour always count), remembered for the next run's ``settle``.

    A following page's values are the room's (``reading``), every one shown; its own address stays the room's link
    (its presenter mode and room only): the page sends it no other. When following stops, the controls start from
    the teacher's values."""
    state = st.session_state
    drawn = frozenset(SPEC) if following else drawn | set(OWNED_KEYS)
    shown = {k: state[k] if k in drawn and k in state else v for k, v in (reading.context or {}).items()}
    final = read({k: _text(v) for k, v in shown.items() if k in drawn and v is not None}, repair=True)
    address = {k: v for k, v in final.address().items() if k in drawn}
    state[_VALUES] = {**(reading.context or {}), **{k: final.context[k] for k in drawn}}
    state[_ADDRESS] = address
    return {k: v for k, v in address.items() if k in OWN_KEYS} if following else address


def settings_at(address: Mapping[str, str]) -> Settings:
    """The settings of the page a link to ``address`` opens: its values (``read``), then ``settings_from``. The page,
    a following student's page (the room's address), a tour step and the tests all make settings this one way."""
    return settings_from(read(address).context or {})


def step_state(step: Step) -> dict:
    """Every key's value a tour step sets, as its link gives them (``read``: the train view's recommendation for what
    a training step leaves out, K/V heads as many as the step's heads unless it groups them); not the tour's own keys,
    nor this screen's (presenter mode, the room), nor those a view decides (None: the last replay step)."""
    address = {k: address_text(v) for k, v in step.settings.items()}
    skipped = (*OWN_KEYS, *TOUR_KEYS)
    return {k: v for k, v in (read(address).context or {}).items() if v is not None and k not in skipped}
