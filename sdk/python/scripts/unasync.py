"""Generate src/engram/_sync_resources.py from _async_resources.py.

Run from sdk/python: python scripts/unasync.py [--check]. --check exits 1
when the committed file differs from what this would write."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "engram"
SOURCE = ROOT / "_async_resources.py"
TARGET = ROOT / "_sync_resources.py"

RULES = [
    (re.compile(r'^"""The API\'s resource namespaces, async\..*?"""', re.S),
     '"""The API\'s resource namespaces, sync. GENERATED from _async_resources.py by\nscripts/unasync.py: do not edit."""'),
    (re.compile(r"\basync def "), "def "),
    (re.compile(r"\basync for "), "for "),
    (re.compile(r"\basync with "), "with "),
    (re.compile(r"\baiter_lines\b"), "iter_lines"),
    (re.compile(r"\baread\b"), "read"),
    (re.compile(r"\bawait "), ""),
    (re.compile(r"\bAsyncIterator\b"), "Iterator"),
    (re.compile(r"\bAsyncEngram\b"), "Engram"),
    (re.compile(r"\bAsync([A-Z]\w*)"), r"\1"),
]


def generate() -> str:
    text = SOURCE.read_text()
    for pattern, repl in RULES:
        text = pattern.sub(repl, text)
    return text


def main() -> int:
    text = generate()
    if "--check" in sys.argv:
        if TARGET.read_text() != text:
            print(f"{TARGET} is out of date: run python scripts/unasync.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
