"""Every route the server mounts has an SDK method, and every SDK request
names a mounted route: a static comparison of api/*.go (chi) with the SDK's
Request(...) calls, so a new route without a method fails here."""

from __future__ import annotations

import re
from pathlib import Path

SDK = Path(__file__).resolve().parents[1] / "src" / "engram"
API = Path(__file__).resolve().parents[3] / "api"

# Mounted, deliberately without a method: the HTML page a verification mail
# links to (for people; it verifies on a click), and the MCP endpoint when
# mounted (spoken by MCP clients, not by this SDK).
NOT_IN_SDK = {("GET", "/v1/auth/verify"), ("POST", "/v1/mcp"), ("GET", "/v1/mcp"), ("DELETE", "/v1/mcp")}
# Issue 25 items 1 and 3, built on other branches: the SDK's methods are
# ready for them; once mounted they are ordinary routes here.

ROUTE = re.compile(r'(?<![\w.])r(?:\.With\([^)]*\))?\.(Get|Post|Put|Patch|Delete)\("([^"]*)"')
SUBROUTER = re.compile(r'^(\t*)r\.Route\("([^"]*)"')
REQUEST = re.compile(r'Request\(\s*"([A-Z]+)",\s*f?"([^"]+)"')


def _normalise(path: str) -> str:
    path = re.sub(r"\{[^}]*\}", "{}", path)
    return path.rstrip("/") or "/"


def mounted() -> set[tuple[str, str]]:
    routes = set()
    for file in sorted(API.glob("*.go")):
        if file.name.endswith("_test.go"):
            continue
        # Everything but /healthz and /readyz sits under the /v1 subrouter.
        stack: list[tuple[str, str]] = [] if file.name == "server.go" else [("", "/v1")]
        for line in file.read_text().splitlines():
            m = SUBROUTER.match(line)
            if m:
                stack.append((m.group(1), m.group(2)))
                continue
            if stack and stack[-1][0] and line == stack[-1][0] + "})":
                stack.pop()
                continue
            for method, path in ROUTE.findall(line):
                prefix = "".join(p for _, p in stack)
                routes.add((method.upper(), _normalise(prefix + path)))
    return routes


def in_sdk() -> set[tuple[str, str]]:
    routes = set()
    for name in ("_async_resources.py", "_client.py"):
        for method, path in REQUEST.findall((SDK / name).read_text()):
            path = re.sub(r"\{[^}]*\}", "{}", path)
            root = path in ("/healthz", "/readyz")
            routes.add((method, _normalise(path if root else "/v1" + path)))
    return routes


def test_the_parsers_find_the_routes():
    assert ("POST", "/v1/memories") in mounted() and ("GET", "/healthz") in mounted()
    assert ("POST", "/v1/embeddings") in mounted()  # under r.Route("/embeddings")
    assert len(mounted()) >= 50


def test_every_mounted_route_has_a_method():
    missing = mounted() - in_sdk() - NOT_IN_SDK
    assert not missing, f"routes without an SDK method: {sorted(missing)}"


def test_every_method_names_a_mounted_route():
    unknown = in_sdk() - mounted()
    assert not unknown, f"SDK requests of unmounted routes: {sorted(unknown)}"
