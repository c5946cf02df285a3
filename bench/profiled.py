"""``streamlit`` with a profiler in every script thread: ``python -m bench.profiled run streamlit_app.py ...``.

Each ScriptRunner thread (one per session's run chain) gets its own ``cProfile.Profile`` timed by
``time.thread_time``: CPU the script itself spent, not time it waited for the GIL other sessions held. On
``SIGUSR1`` every profile is merged and written to ``$ATTENTION_LAB_PROFILE`` (a ``pstats`` file); ``SIGUSR2``
forgets the runs so far (warm-up, imports). With ``$ATTENTION_LAB_PROFILE_ONLY`` set to a function's name, only the
runs that called it are merged (``bench.follower.FOLLOWER_RUN``: a following student's runs, not the teacher's). Used by
``bench.follower``; not part of the app.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import signal
import sys
import threading
import time

_profiles: list[cProfile.Profile] = []
_lock = threading.Lock()


def _start(*_: object) -> None:
    """``threading.setprofile`` hook: the first event of a new thread; a script thread starts its own profile."""
    sys.setprofile(None)
    if threading.current_thread().name.startswith("ScriptRunner"):
        profile = cProfile.Profile(time.thread_time)
        with _lock:
            _profiles.append(profile)
        profile.enable()


def _forget(*_: object) -> None:
    with _lock:
        _profiles.clear()


def _called(profile: cProfile.Profile, name: str) -> bool:
    return any(function == name for _, _, function in profile.stats)


def _dump(*_: object) -> None:
    merged = None
    only = os.environ.get("ATTENTION_LAB_PROFILE_ONLY")
    with _lock:
        for profile in _profiles:
            profile.create_stats()
            if profile.stats and (not only or _called(profile, only)):
                merged = pstats.Stats(profile) if merged is None else merged.add(profile)
    if merged is not None:
        merged.dump_stats(os.environ["ATTENTION_LAB_PROFILE"])


if __name__ == "__main__":
    threading.setprofile(_start)
    signal.signal(signal.SIGUSR1, _dump)
    signal.signal(signal.SIGUSR2, _forget)
    from streamlit.web.cli import main

    sys.argv = ["streamlit", *sys.argv[1:]]
    main()
