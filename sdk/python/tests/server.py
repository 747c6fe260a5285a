"""Run the real `engram serve` for the tests and register users through its
outbox, as the Go end-to-end tests do (internal/testserver)."""

from __future__ import annotations

import email
import email.policy
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections import deque
from pathlib import Path

import httpx

from .openapi_check import CHECKER

REPO = Path(__file__).resolve().parents[3]
INHERITED = ("PATH", "TMPDIR", "TZ", "LANG", "LC_ALL", "LC_CTYPE", "GORACE", "GOTRACEBACK")
SERVING = re.compile(r'msg="engram serving" addr=(\S+)')
LINK_TOKEN = re.compile(r"\?token=([A-Za-z0-9_-]+)\s*$")


def binary(workdir: Path) -> str:
    """$ENGRAM_TEST_BINARY (make test builds it), else a fresh `go build`."""
    given = os.environ.get("ENGRAM_TEST_BINARY")
    if given:
        return given
    out = workdir / "engram"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/engram"], cwd=REPO, check=True)
    return str(out)


class Server:
    """One `engram serve` on a random loopback port with a temporary data dir
    (or data_dir, e.g. on a file system the test fills)."""

    def __init__(self, exe: str, *args: str, data_dir: Path | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="engram-pysdk-"))
        self.data_dir = data_dir or self.root / "data"
        home = self.root / "home"
        home.mkdir()
        env = {k: os.environ[k] for k in INHERITED if k in os.environ}
        env.update(HOME=str(home), ENGRAM_HOME=str(home))
        cmd = [exe, "serve", "--addr", "127.0.0.1:0", "--data-dir", str(self.data_dir), "--ip-rate-burst", "1000", *args]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log: deque[str] = deque(maxlen=300)
        found = threading.Event()
        self.addr = ""

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.append(line)
                m = SERVING.search(line)
                if m and not found.is_set():
                    self.addr = m.group(1)
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(60):
            self.stop()
            raise RuntimeError("engram serve did not start:\n" + "".join(self.log))
        self.url = f"http://{self.addr}"
        self.api_url = self.url + "/v1"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/readyz").status_code == 200:
                    CHECKER.register(self.url)
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("engram serve never became ready:\n" + "".join(self.log))

    def register(self, address: str | None = None) -> str:
        """A verified user's first API key: register, read the mail, verify."""
        address = address or f"py-{uuid.uuid4().hex[:12]}@example.com"
        resp = httpx.post(self.api_url + "/auth/register", json={"email": address})
        resp.raise_for_status()
        token = self.mailed_token(address)
        resp = httpx.post(self.api_url + "/auth/verify", json={"token": token})
        resp.raise_for_status()
        return resp.json()["data"]["api_key"]

    def mailed_token(self, address: str, timeout: float = 10.0) -> str:
        """The token of the newest verification mail to address in the outbox."""
        outbox = self.data_dir / "outbox"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for path in sorted(outbox.glob("*.eml"), reverse=True) if outbox.exists() else []:
                msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
                if address.lower() not in str(msg["To"]).lower():
                    continue
                text = msg.get_content()
                for line in text.splitlines():
                    m = LINK_TOKEN.search(line.strip())
                    if m:
                        return m.group(1)
            time.sleep(0.02)
        raise RuntimeError(f"no verification mail to {address} in {outbox}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)
