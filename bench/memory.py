"""Does the server's memory stay level? RSS over 500 reruns with varied settings, and the caches' bounds.

    python -m bench.memory                  # 500 reruns: 10 students one after another, 50 reruns each
    python -m bench.memory --reruns 1000

Community Cloud gives an app about 1 GB. What can grow without bound in this app:
the ``st.cache_data`` caches (bounded only if every one has ``max_entries``, which
is checked here by reading dashboard/ and printed), per-session state (sessions
come and go: students leave, so the run uses a new session every 50 reruns), and
whatever Streamlit keeps per message. Each rerun changes one control (as a browser
does) over every control and every view, from one token to 64, d_model 8 to 512,
1 to 16 heads, so the caches fill to their bounds well before the end; after that
the curve must be flat.

The RSS of the server process (and any children) is read after each rerun; every
50th is printed. Level means: the mean of the last quarter of the run exceeds the mean
of the second quarter (caches already full) by less than ``LEVEL_MB``.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import random
import statistics
from pathlib import Path

from bench.expected import check_page
from bench.measure import PeakRss
from bench.protocol import Tab
from bench.streamlit_server import ROOT, streamlit_server
from dashboard.settings import D_MODELS, MAX_SEED, head_options

LEVEL_MB = 15.0
"""Allowed growth from the second to the last quarter of the run, compared as means: single reruns at the
largest settings swing RSS by tens of MB (their figure JSON is megabytes) and fall back; a leak grows steadily."""
TARGET_RSS_MB = 600.0
EVERY = 50
_WORDS = "the a bank river loan money boat fish cat dog sat mat book reads attention head key value"
WORDS = _WORDS.split()
VIEWS = ("heads", "tokens", "shapes", "permutation")


def cache_bounds(root: Path = ROOT / "dashboard") -> list[tuple[str, str, int | None]]:
    """(file, function, max_entries or None) for every ``st.cache_data`` / ``st.cache_resource`` in ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for dec in getattr(node, "decorator_list", []):
                name = ast.unparse(dec.func if isinstance(dec, ast.Call) else dec)
                if name.endswith(("cache_data", "cache_resource")):
                    kw = {k.arg: k.value for k in dec.keywords} if isinstance(dec, ast.Call) else {}
                    bound = ast.literal_eval(kw["max_entries"]) if "max_entries" in kw else None
                    found.append((str(path.relative_to(ROOT)), node.name, bound))
    return found


def varied(rng: random.Random, values: dict) -> dict:
    """One control per rerun, as in a browser: a sentence of 1 to 64 tokens, width, heads, mask, positions,
    seed or view. The caches see hundreds of different keys."""
    what = rng.choice(["sentence", "sentence", "d_model", "n_heads", "causal", "positional", "seed", "view"])
    if what == "sentence":
        return {"sentence": " ".join(rng.choice(WORDS) for _ in range(rng.choice([1, 2, 8, 16, 32, 64])))}
    if what == "d_model":
        return {"d_model": rng.choice(D_MODELS)}
    if what == "n_heads":
        return {"n_heads": rng.choice(head_options(int(values["d_model"]), str(values["positional"])))}
    if what == "causal":
        return {"causal": not values["causal"]}
    if what == "positional":
        return {"positional": rng.choice(["none", "sinusoidal", "learned"])}
    if what == "seed":
        return {"seed": rng.randrange(MAX_SEED)}
    return {"view": rng.choice(VIEWS)}


async def reruns(url: str, n: int, per_session: int, rss: PeakRss, seed: int) -> list[float]:
    """RSS in MB after each of ``n`` reruns, ``per_session`` reruns per session."""
    rng = random.Random(seed)
    curve: list[float] = []
    while len(curve) < n:
        async with Tab(url, timeout=120) as tab:
            await tab.open({})
            for _ in range(min(per_session, n - len(curve))):
                page = await tab.change(**varied(rng, tab.values))
                if tab.values["view"] == "heads":
                    check_page(page, tab.values)
                elif page.of("exception"):
                    raise AssertionError(f"exception on the {tab.values['view']} view")
                curve.append(rss.now() / 2**20)
    return curve


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reruns", type=int, default=500)
    ap.add_argument("--per-session", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not 100 <= args.reruns <= 5000:
        ap.error("--reruns must be 100..5000")

    bounds = cache_bounds()
    print("st.cache_data / st.cache_resource in dashboard/:")
    for path, fn, bound in bounds:
        print(f"  {path}:{fn}  max_entries={bound}")
    unbounded = [fn for _, fn, bound in bounds if bound is None]

    with streamlit_server() as (url, proc), PeakRss(proc.pid) as rss:
        idle = rss.now() / 2**20
        curve = asyncio.run(reruns(url, args.reruns, args.per_session, rss, args.seed))
    print(f"server RSS in MB after N reruns (idle before: {idle:.0f} MB); median and max of the last {EVERY}:")
    for i in range(EVERY - 1, len(curve), EVERY):
        block = curve[i + 1 - EVERY : i + 1]
        print(f"  {i + 1:5d}  {curve[i]:6.0f}   median {statistics.median(block):6.0f}   max {max(block):6.0f}")
    q = len(curve) // 4
    growth = statistics.fmean(curve[3 * q :]) - statistics.fmean(curve[q : 2 * q])
    peak = rss.peak / 2**20
    print(
        f"mean of the last quarter - mean of the second quarter: {growth:+.1f} MB (level if < {LEVEL_MB:.0f}); "
        f"peak {peak:.0f} MB"
    )
    level = growth < LEVEL_MB
    ok = level and not unbounded and peak <= TARGET_RSS_MB
    print(
        "memory:",
        "level and bounded" if ok else "NOT OK",
        f"({'no unbounded cache' if not unbounded else 'unbounded: ' + ', '.join(unbounded)})",
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
