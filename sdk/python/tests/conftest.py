from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from engram import Engram

from .openapi_check import CHECKER
from .server import Server, binary


@pytest.fixture(scope="session", autouse=True)
def openapi_checked() -> Iterator[None]:
    """Every exchange with a test server is checked against the document
    the server serves (openapi_check.py)."""
    CHECKER.install()
    yield
    CHECKER.uninstall()


@pytest.fixture(autouse=True)
def conforms_to_the_document() -> Iterator[None]:
    """A test fails when an exchange during it (or a session fixture's
    before it) broke the document."""
    yield
    problems = CHECKER.take()
    if problems:
        pytest.fail("exchanges that break api/openapi.json:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def engram_binary() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="engram-pysdk-bin-") as d:
        yield binary(Path(d))


@pytest.fixture(scope="session")
def server(engram_binary: str) -> Iterator[Server]:
    s = Server(engram_binary)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def limited_server(engram_binary: str) -> Iterator[Server]:
    """A server allowing one request per second per credential (burst 1)."""
    s = Server(engram_binary, "--rate-limit", "1", "--rate-burst", "1")
    yield s
    s.stop()


@pytest.fixture
def api_key(server: Server) -> str:
    return server.register()


@pytest.fixture
def client(server: Server, api_key: str) -> Iterator[Engram]:
    with Engram(api_key=api_key, base_url=server.api_url) as c:
        yield c


@pytest.fixture
def agent_id() -> str:
    return f"agent-{uuid.uuid4().hex[:10]}"
