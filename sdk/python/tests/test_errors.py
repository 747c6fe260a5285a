"""Each failure status the API documents has an exception class of its own,
and 507 storage_full, provoked on the real binary by filling the file
system under its data dir, arrives as StorageFullError."""

from __future__ import annotations

import errno
import json
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engram import APIStatusError, Engram, InternalServerError, StorageFullError
from engram._errors import error_class

from .server import REPO, Server


def documented_failures() -> dict[int, set[str]]:
    """Every failure status api/openapi.json lists, with its codes: those of its
    operations' responses and those of its shared failure responses
    (Failure<status>-<codes>, such as the 405 of a method a path does not list)."""
    doc = json.loads((REPO / "api" / "openapi.json").read_text(encoding="utf-8"))
    out: dict[int, set[str]] = {}

    def add(status: int, response: dict[str, Any]) -> None:
        schema = response.get("content", {}).get("application/json", {}).get("schema", {})
        parts = schema.get("allOf", [{}, {}])
        codes = parts[1].get("properties", {}).get("error", {}).get("properties", {}).get("code", {}).get("enum", [])
        out.setdefault(status, set()).update(codes)

    for name, response in doc["components"]["responses"].items():
        shared = re.match(r"^Failure([45]\d\d)-", name)
        if shared:
            add(int(shared.group(1)), response)
    for item in doc["paths"].values():
        for op in item.values():
            if not isinstance(op, dict):
                continue  # the path item's summary or parameters
            for status, response in op.get("responses", {}).items():
                if not (status.isdigit() and int(status) >= 400):
                    continue  # "default": OpenAI's own error shape
                ref = response.get("$ref", "")
                add(int(status), doc["components"]["responses"][ref.rsplit("/", 1)[1]] if ref else response)
    return out


def test_every_documented_failure_status_has_a_class_which_each_of_its_codes_gets() -> None:
    failures = documented_failures()
    assert "storage_full" in failures.get(507, set()), "the document lists 507 storage_full"
    assert "method_not_allowed" in failures.get(405, set()), "the document lists 405 method_not_allowed"
    for status, codes in sorted(failures.items()):
        cls = error_class(status, "")
        assert cls is not APIStatusError, f"{status} has no class: add one to engram/_errors.py"
        if status != 500:
            assert cls is not InternalServerError, f"{status} has no class: add one to engram/_errors.py"
        for code in codes:
            assert issubclass(error_class(status, code), cls), f"{status} {code} is a {error_class(status, code).__name__}, not a {cls.__name__}"


def fill(path: Path) -> None:
    """Append to path until its file system has no byte left."""
    with open(path, "ab", buffering=0) as f:
        for size in (1 << 20, 4 << 10, 1):
            chunk = bytes(size)
            while True:
                try:
                    f.write(chunk)
                except OSError as err:
                    if err.errno != errno.ENOSPC:
                        raise
                    break


@pytest.fixture
def disk() -> Iterator[Path]:
    """A tmpfs of the test's own to fill (mounting needs root, as the Go
    full-disk tests do), with room for the server's database while it runs."""
    with tempfile.TemporaryDirectory(prefix="engram-pysdk-disk-") as d:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", d], check=True)
        try:
            yield Path(d)
        finally:
            subprocess.run(["umount", d], check=True)


def test_a_write_on_a_full_disk_raises_storage_full_error_and_reads_are_served(engram_binary: str, disk: Path) -> None:
    server = Server(engram_binary, data_dir=disk / "data")
    try:
        with Engram(api_key=server.register(), base_url=server.api_url) as client:
            stored = client.memories.create(agent_id="full", type="notes", content={"content": "written while there was room"})
            fill(disk / "filler")
            refused: StorageFullError | None = None
            # The server sees the disk full at its next write or free-space probe.
            for i in range(100):
                try:
                    client.memories.create(agent_id="full", type="notes", content={"content": f"refused {i}"})
                except StorageFullError as err:
                    refused = err
                    break
                time.sleep(0.1)
            assert refused is not None, "no write was refused with StorageFullError"
            assert isinstance(refused, InternalServerError)
            assert (refused.status, refused.code) == (507, "storage_full")
            assert refused.request_id
            assert refused.retry_after and refused.retry_after > 0
            assert client.memories.get(stored.id).id == stored.id
    finally:
        server.stop()
