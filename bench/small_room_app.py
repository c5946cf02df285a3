"""The dashboard with rooms of ``$ATTENTION_LAB_SEATS`` seats (default 2): a full room without 300 students.

    streamlit_server(app=SMALL_ROOM_APP, env={SEATS: "2"})     # bench.streamlit_server

Streamlit runs this file as the page's script: it sets ``rooms.MAX_STUDENTS`` (read by ``RoomStore.join`` at each
call) and runs ``dashboard/app.py`` as it is, every run. Used by ``bench.full_room`` and the full-room tests
(``tests/e2e/test_full_room_in_browser.py``); not part of the app.
"""

import os
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dashboard.classroom import rooms  # noqa: E402  (the repository root on the path first)

rooms.MAX_STUDENTS = int(os.environ.get("ATTENTION_LAB_SEATS", "2"))
runpy.run_path(str(ROOT / "dashboard" / "app.py"), run_name="__main__")
