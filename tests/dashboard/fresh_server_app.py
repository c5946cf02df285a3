"""The dashboard on a server where MiniLM's package is not installed, as on a fresh Community Cloud app.

``streamlit run tests/dashboard/fresh_server_app.py`` (``test_minilm_download_live``): each run hides the installed
package from ``core.pretrained.locate`` and runs ``dashboard/app.py`` as it is, so the files can come only from
``$ATTENTION_LAB_CACHE`` or a download from ``$HF_ENDPOINT``. Test-only; not part of the app.
"""

import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from core.pretrained import locate  # noqa: E402  (the repository root on the path first)

locate.package_directory = lambda: None
runpy.run_path(str(ROOT / "dashboard" / "app.py"), run_name="__main__")
