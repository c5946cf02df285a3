"""Audit the installed dependencies for published vulnerabilities, also on a closed network.

    python -m bench.audit            # exit 0: clean, 1: a deployed package is vulnerable

Why not just ``pip-audit``: on this machine its default service (the PyPI JSON API)
answers 404 and OSV's API does not resolve, so pip-audit skips every package and
still prints "No known vulnerabilities found" with exit code 0, a silent false pass.
This script runs it twice:

1. live: pip-audit against its default service. If it could audit nothing, the
   result is reported as INCONCLUSIVE, never as clean.
2. offline: pip-audit against a local OSV-compatible endpoint on 127.0.0.1 serving
   ``SNAPSHOT`` below, the published advisories for the packages the app deploys
   (and pip), each with its source. pip-audit still enumerates every installed
   package and formats the findings; the endpoint does the version matching the
   real OSV service would do. Refresh the snapshot when a dependency is bumped.

Only packages the app deploys (requirements.txt and everything it pulls in) fail
the audit; the rest of the environment (pip, test tools) is reported.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 300  # each pip-audit run; it takes ~10 s here


@dataclass(frozen=True)
class Advisory:
    """One published advisory: ``introduced <= version < fixed`` is affected."""

    package: str
    id: str
    aliases: tuple[str, ...]
    introduced: str
    fixed: str
    summary: str
    source: str


_GH = "https://github.com/streamlit/streamlit/security/advisories/"
_PYPA = "https://github.com/pypa/advisory-database/blob/main/vulns/"
_PIP_AUDIT_REPORT = "IDs and fixed versions as reported by pip-audit (PyPI/OSV feed), 2026-09"

SNAPSHOT: tuple[Advisory, ...] = (
    # Streamlit: every advisory published for the package (GitHub advisories, PyPA database).
    Advisory("streamlit", "PYSEC-2023-50", ("CVE-2023-27494", "GHSA-9c6g-qpgj-rvxw"), "0.63.0", "0.81.0",
             "Reflected XSS through a crafted URL", f"{_PYPA}streamlit/PYSEC-2023-50.yaml"),
    Advisory("streamlit", "PYSEC-2022-248", ("CVE-2022-35918", "GHSA-v4hr-4jpx-56gc"), "0.63.0", "1.11.1",
             "Directory traversal through custom components", f"{_PYPA}streamlit/PYSEC-2022-248.yaml"),
    Advisory("streamlit", "GHSA-8qw9-gf7w-42x5", (), "0.63.0", "1.30.0",
             "Incomplete fix of CVE-2022-35918 (path traversal)", "https://github.com/advisories/GHSA-8qw9-gf7w-42x5"),
    Advisory("streamlit", "PYSEC-2024-153", ("CVE-2024-42474", "GHSA-rxff-vr5r-8cj5"), "0", "1.37.0",
             "Path traversal on Windows (static files)", f"{_GH}GHSA-rxff-vr5r-8cj5"),
    Advisory("streamlit", "CVE-2025-1684", (), "0", "1.43.2",
             "st.file_uploader file type enforced only client-side", "https://github.com/streamlit/streamlit/pull/10509"),
    Advisory("streamlit", "PYSEC-2026-212", ("CVE-2026-10804", "GHSA-vqwp-45wm-r9r5"), "0", "1.53.1",
             "st.cache_data hash collisions (large-object sampling, PIL palettes)",
             "https://github.com/advisories/GHSA-vqwp-45wm-r9r5"),
    Advisory("streamlit", "PYSEC-2026-2285", ("CVE-2026-33682", "GHSA-7p48-42j8-8846"), "0", "1.54.0",
             "SSRF / NTLM credential leak through component paths on Windows", f"{_GH}GHSA-7p48-42j8-8846"),
    # Streamlit's server stack and other deployed dependencies.
    Advisory("starlette", "PYSEC-2026-161", ("CVE-2026-48710",), "0", "1.0.1",
             "Host header handling ('BadHost')", "https://github.com/streamlit/streamlit/issues/15421"),
    Advisory("starlette", "PYSEC-2026-248", (), "0", "1.3.0", "see advisory", _PIP_AUDIT_REPORT),
    Advisory("starlette", "PYSEC-2026-249", (), "0", "1.3.1", "see advisory", _PIP_AUDIT_REPORT),
    Advisory("requests", "PYSEC-2026-1872", ("CVE-2024-47081",), "0", "2.32.4",
             ".netrc credentials leak to a third party", _PIP_AUDIT_REPORT),
    Advisory("requests", "PYSEC-2026-2275", (), "0", "2.33.0", "see advisory", _PIP_AUDIT_REPORT),
    Advisory("h11", "PYSEC-2026-348", ("CVE-2025-43859",), "0", "0.16.0",
             "Chunked-encoding request smuggling", _PIP_AUDIT_REPORT),
    Advisory("protobuf", "PYSEC-2026-1805", (), "6.0.0", "6.33.5", "see advisory", _PIP_AUDIT_REPORT),
    Advisory("pillow", "PYSEC-2026-3496", (), "0", "12.3.0", "see advisory", _PIP_AUDIT_REPORT),
    Advisory("python-multipart", "PYSEC-2026-3037", (), "0", "0.0.30", "see advisory", _PIP_AUDIT_REPORT),
    Advisory("python-multipart", "GHSA-59g5-xgcq-4qw3", ("CVE-2024-53981",), "0", "0.0.18",
             "DoS through a malformed multipart boundary", "https://github.com/advisories/GHSA-59g5-xgcq-4qw3"),
    Advisory("jinja2", "GHSA-cpwx-vrp4-4pq7", ("CVE-2025-27516",), "0", "3.1.6",
             "Sandbox breakout through the |attr filter", "https://github.com/advisories/GHSA-cpwx-vrp4-4pq7"),
    # The installer in this environment (not deployed: Community Cloud brings its own).
    Advisory("pip", "PYSEC-2026-1795", ("CVE-2025-8869", "GHSA-4xh5-x5gv-qwph"), "0", "25.3",
             "Tar extraction may follow symlinks out of the build directory", "https://github.com/advisories/GHSA-4xh5-x5gv-qwph"),
    Advisory("pip", "GHSA-6vgw-5pg2-w6jp", ("CVE-2026-1703",), "0", "26.0",
             "Malicious wheel extraction", "https://github.com/advisories/GHSA-6vgw-5pg2-w6jp"),
)  # fmt: skip


def _affects(adv: Advisory, version: str) -> bool:
    return Version(adv.introduced) <= Version(version) < Version(adv.fixed)


def _osv_record(adv: Advisory) -> dict:
    """The advisory in OSV schema 1.x, as api.osv.dev would return it."""
    return {
        "schema_version": "1.6.0",
        "id": adv.id,
        "aliases": list(adv.aliases),
        "summary": f"{adv.summary} ({adv.source})",
        "affected": [
            {
                "package": {"name": canonicalize_name(adv.package), "ecosystem": "PyPI"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": adv.introduced}, {"fixed": adv.fixed}]}],
            }
        ],
    }


class _OsvHandler(BaseHTTPRequestHandler):
    """POST /v1/query {"package": {"name", "ecosystem"}, "version"} -> {"vulns": [...]} from SNAPSHOT."""

    def do_POST(self) -> None:
        query = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        name, version = canonicalize_name(query["package"]["name"]), query["version"]
        vulns = [_osv_record(a) for a in SNAPSHOT if canonicalize_name(a.package) == name and _affects(a, version)]
        body = json.dumps({"vulns": vulns} if vulns else {}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:  # one line per package is noise
        pass


@contextlib.contextmanager
def local_osv() -> Iterator[str]:
    """Serve SNAPSHOT on a free loopback port; yield the query URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OsvHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/query"
    finally:
        server.shutdown()
        server.server_close()


def pip_audit(*args: str) -> dict:
    """Run pip-audit on the installed environment; its JSON report."""
    cmd = [sys.executable, "-m", "pip_audit", "-f", "json", "--progress-spinner", "off", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=ROOT)
    if not out.stdout.strip():
        raise RuntimeError(f"pip-audit produced no report (exit {out.returncode}):\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def control(url: str) -> int:
    """How many advisories pip-audit reports through ``url`` for streamlit 1.53.0 (two are published).

    A negative control: it proves the offline path can fail, so "clean" means something.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as req:
        req.write("streamlit==1.53.0\n")
        req.flush()
        report = pip_audit("-r", req.name, "--no-deps", "--vulnerability-service", "osv", "--osv-url", url)
    return len(findings(report))


def pinned(path: Path = ROOT / "requirements.txt") -> dict[str, str]:
    """``name -> version`` of the ``name==version`` lines of a requirements file."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def deployed(roots: list[str]) -> set[str]:
    """The requirements and everything they install (their non-extra requirements, recursively)."""
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        name = canonicalize_name(stack.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for spec in requires:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                stack.append(req.name)
    return seen


def findings(report: dict) -> list[tuple[str, str, str, str]]:
    """``(package, version, advisory id, fixed in)`` for every vulnerability in a pip-audit report."""
    return [
        (d["name"], d["version"], v["id"], ", ".join(v.get("fix_versions", [])) or "none")
        for d in report["dependencies"]
        for v in d.get("vulns", [])
    ]


def main() -> int:
    pins = pinned()
    runtime = deployed(list(pins))
    failed = False

    live = pip_audit()
    audited = [d for d in live["dependencies"] if "skip_reason" not in d]
    print(f"live pip-audit (PyPI service): audited {len(audited)} of {len(live['dependencies'])} packages")
    if not audited:
        print("  INCONCLUSIVE: the vulnerability service is unreachable from here; pip-audit's own")
        print("  'No known vulnerabilities found' is not a result. Using the offline snapshot.")
    for pkg, ver, vid, fix in findings(live):
        print(f"  VULNERABLE {pkg} {ver}: {vid} (fixed in {fix})")
        failed |= canonicalize_name(pkg) in runtime

    with local_osv() as url:
        offline = pip_audit("--vulnerability-service", "osv", "--osv-url", url)
        caught = control(url)
    n = len(offline["dependencies"])
    print(f"offline pip-audit (local OSV snapshot, {len(SNAPSHOT)} advisories): {n} packages")
    print(f"  negative control: streamlit==1.53.0 gives {caught} findings (2 expected)")
    failed |= caught != 2
    for pkg, ver, vid, fix in findings(offline):
        where = "DEPLOYED" if canonicalize_name(pkg) in runtime else "environment only, not deployed"
        print(f"  VULNERABLE {pkg} {ver}: {vid} (fixed in {fix}) [{where}]")
        failed |= canonicalize_name(pkg) in runtime

    streamlit = [a for a in SNAPSHOT if a.package == "streamlit"]
    needed = max(Version(a.fixed) for a in streamlit)
    have = Version(pins["streamlit"])
    print(f"streamlit pin {have}: {len(streamlit)} published advisories, all fixed by {needed}:")
    for a in streamlit:
        state = "fixed" if not _affects(a, str(have)) else "AFFECTED"
        print(f"  {state:8} {a.id} {' '.join(a.aliases)} (< {a.fixed}): {a.summary}")
    installed = Version(metadata.version("streamlit"))
    if have < needed or installed != have:
        print(f"  FAIL: pinned {have}, installed {installed}, needs >= {needed}")
        failed = True

    print("audit:", "FAILED" if failed else f"clean ({len(runtime)} deployed packages)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
