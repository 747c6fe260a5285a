"""The package itself: its version is the server's, the generated sync code is current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import engram

SDK = Path(__file__).resolve().parents[1]


def test_version_is_the_servers():
    release = (SDK.parents[1] / "VERSION").read_text().strip()
    assert engram.__version__ == release, "src/engram/_version.py is not VERSION: run make sdk-version"


def test_sync_resources_are_generated_from_the_async_ones():
    result = subprocess.run([sys.executable, "scripts/unasync.py", "--check"], cwd=SDK, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_py_typed_is_shipped():
    assert (Path(engram.__file__).parent / "py.typed").exists()


def test_everything_exported_is_importable():
    for name in engram.__all__:
        assert hasattr(engram, name), name
    assert {"Engram", "AsyncEngram", "Memory", "SearchResponse", "NotFoundError"} <= set(engram.__all__)
