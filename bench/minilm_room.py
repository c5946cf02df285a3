"""The server's memory with the pretrained model in a lecture: MiniLM loaded, a room of students following a teacher
on MiniLM, and one training job. Does it fit Community Cloud's smallest app (690 MB)?

    python -m bench.minilm_room                          # 30 students, 60 s, the weights from the installed package
    python -m bench.minilm_room --download               # as on a fresh Cloud app: the first use downloads them
    python -m bench.minilm_room --students 30 --seconds 90

One server process (``bench.streamlit_server``); every page is a ``bench.protocol.Tab``. The teacher opens MiniLM,
starts a room, and changes the sentence (8 sentences, each a new MiniLM run of 6 layers), the layer or the view
(heads, model: 72 maps, summary, steps) every 2-4 s; the students open the room's link and read every run the server
pushes. Meanwhile one more tab trains the induction task on a seed with no pre-trained file (a real training job,
``compute.training_jobs``). ``--download`` runs ``tests/dashboard/fresh_server_app.py`` (the package hidden) with
``HF_ENDPOINT`` on a local stand-in hub (``tests.hub_server``) serving the installed files: the page downloads them
first, into a fresh cache.

Printed: the server's RSS (process and children, ``bench.measure.PeakRss``) at rest, after MiniLM loaded (the
teacher's first page), its peak over the room and the training job, and the last sample; the redraws and failures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import tempfile
import time

from bench.measure import PeakRss
from bench.protocol import NoRun, Tab
from bench.streamlit_server import streamlit_server

CLOUD_FLOOR_MB = 690.0
"""Community Cloud's smallest memory limit for an app (its published range: 690 MB to 2.7 GB)."""
SENTENCES = (
    "The bank of the river.",
    "the teacher praised the students because they worked hard",
    "the cat sat on the mat because it was tired",
    "Attention is all you need, said the paper.",
    "A student reads the book to the class before the lecture starts.",
    "the quick brown fox jumps over the lazy dog near the river bank",
    "Money in the bank earns interest, but the river bank floods.",
    "Every head in every layer looks at something: which, and why?",
)
VIEWS = ("heads", "model", "summary", "steps")
FRESH_APP = "tests/dashboard/fresh_server_app.py"


def mb(n_bytes: float) -> float:
    return n_bytes / 2**20


async def teacher(url: str, code: asyncio.Future, deadline: float, rng: random.Random, log: dict) -> None:
    async with Tab(url, timeout=180, deflate=False) as tab:
        start = time.perf_counter()
        await tab.open({"weights": "minilm", "sentence": SENTENCES[0]})
        log["first_page_s"] = time.perf_counter() - start
        log["rss_loaded"] = log["rss"].now()
        await tab.change(room_start=True)
        code.set_result(tab.values["room"])
        while time.monotonic() < deadline:
            await asyncio.sleep(rng.uniform(2, 4))
            what = rng.choice(["sentence", "sentence", "layer", "view"])
            change = {
                "sentence": {"sentence": rng.choice(SENTENCES)},
                "layer": {"layer": rng.randint(1, 6)},
                "view": {"view": rng.choice(VIEWS)},
            }[what]
            page = await tab.change(**change)
            log["changes"] += 1
            if page.of("exception"):
                log["failures"].append(f"teacher: an exception after {change}")


async def student(url: str, code: asyncio.Future, deadline: float, i: int, log: dict) -> None:
    try:
        async with Tab(url, timeout=180, deflate=False) as tab:
            page = await tab.open({"room": await code})
            while (left := deadline - time.monotonic()) > 0:
                try:
                    page = await tab.next_run(timeout=left)
                except NoRun:
                    continue
                if page.redrew:
                    log["redraws"] += 1
                if page.of("exception"):
                    log["failures"].append(f"student {i}: an exception")
    except Exception as err:  # counted, not raised: the memory figure stands with how many pages kept up
        log["failures"].append(f"student {i}: {err!r}")


async def trainer(url: str, code: asyncio.Future, deadline: float, log: dict) -> None:
    """One tab trains, and stays open polling its live fragment as a browser does (a job whose tabs all closed is
    cancelled): ``log["steps"]`` is the last step its bar showed."""
    await code  # once the room is open: the job runs while the class follows
    async with Tab(url, timeout=180, deflate=False) as tab:
        await tab.open({"view": "train", "weights": "trained", "task": "induction", "seed": "7"})
        page = await tab.change(train_button=True)
        while time.monotonic() < deadline and tab.auto_reruns:
            fragment, interval = next(iter(tab.auto_reruns.items()))  # the live curves' fragment
            await asyncio.sleep(interval)
            page = await tab.poll(fragment)
        steps = [int(t.split("step ")[1].split(" ")[0]) for _, t in tab.progress if t.startswith("Training: step")]
        log["steps"] = max(steps, default=0)
        if page.of("exception"):
            log["failures"].append("trainer: an exception")


async def lecture(url: str, students: int, seconds: float, rss: PeakRss) -> dict:
    log = {"rss": rss, "changes": 0, "redraws": 0, "failures": [], "steps": 0}
    code: asyncio.Future = asyncio.get_running_loop().create_future()
    deadline = time.monotonic() + seconds
    rng = random.Random(0)
    await asyncio.gather(
        teacher(url, code, deadline, rng, log),
        trainer(url, code, deadline, log),
        *(student(url, code, deadline, i, log) for i in range(students)),
    )
    return log


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=60.0, help="how long the teacher keeps changing things")
    ap.add_argument("--download", action="store_true", help="nothing installed: the first page downloads the files")
    args = ap.parse_args()
    with contextlib.ExitStack() as stack:
        app, env = "dashboard/app.py", {}
        if args.download:
            from core.pretrained.locate import MINILM_FILES, locate_minilm
            from tests.hub_server import HubServer

            hub = stack.enter_context(HubServer(MINILM_FILES, locate_minilm(download=False)))
            app = FRESH_APP
            env = {"HF_ENDPOINT": hub.url, "ATTENTION_LAB_CACHE": stack.enter_context(tempfile.TemporaryDirectory())}
        url, proc = stack.enter_context(streamlit_server(app=app, env=env))
        rss = stack.enter_context(PeakRss(proc.pid))
        time.sleep(2)
        at_rest = rss.now()
        log = asyncio.run(lecture(url, args.students, args.seconds, rss))
        last = rss.now()
        peak = rss.peak
    source = "downloaded by the first page from a local stand-in hub" if args.download else "the installed package"
    print(f"minilm_room: 1 teacher on MiniLM ({source}), {args.students} students in the room for "
          f"{args.seconds:.0f} s, one training job (induction, seed 7)")  # fmt: skip
    print(f"  teacher's first page (MiniLM loaded{', downloaded' if args.download else ''}): "
          f"{log['first_page_s']:.1f} s; changes {log['changes']}, students' redraws {log['redraws']}, "
          f"the training job's last step shown: {log['steps']}, failures {len(log['failures'])}")  # fmt: skip
    for f in log["failures"][:5]:
        print(f"    {f}")
    print(f"  server RSS: at rest {mb(at_rest):.0f} MB, MiniLM loaded {mb(log['rss_loaded']):.0f} MB, "
          f"peak {mb(peak):.0f} MB, at the end {mb(last):.0f} MB "
          f"(median of the samples {mb(statistics.median(rss.samples)):.0f} MB)")  # fmt: skip
    word = "fits" if mb(peak) <= CLOUD_FLOOR_MB else "does NOT fit"
    print(f"  {word} Community Cloud's smallest app ({CLOUD_FLOOR_MB:.0f} MB): {CLOUD_FLOOR_MB - mb(peak):+.0f} MB")
    return 0 if mb(peak) <= CLOUD_FLOOR_MB and not log["failures"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
