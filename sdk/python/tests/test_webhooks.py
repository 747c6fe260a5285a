"""Webhooks through the SDK against the real server (run with
--webhook-allow-private, so a receiver on loopback may register), with a
receiver on loopback that checks each delivery with verify_webhook."""

from __future__ import annotations

import http.server
import json
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from engram import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    BadRequestError,
    Engram,
    NotFoundError,
    verify_webhook,
)

from .server import Server


@pytest.fixture(scope="module")
def webhook_server(engram_binary: str) -> Iterator[Server]:
    s = Server(engram_binary, "--webhook-allow-private", "--webhook-backoff", "50ms", "--webhook-max-attempts", "3")
    yield s
    s.stop()


class Receiver:
    """An HTTP receiver on loopback answering each request with the next
    status of its script (then 200), queueing what it got."""

    def __init__(self, *script: int) -> None:
        self.script = list(script)
        self.got: queue.Queue[tuple[dict[str, str], bytes]] = queue.Queue()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.got.put(({k: v for k, v in self.headers.items()}, body))
                self.send_response(receiver.script.pop(0) if receiver.script else 200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"

    def next(self) -> tuple[dict[str, str], bytes]:
        return self.got.get(timeout=20)

    def close(self) -> None:
        self.httpd.shutdown()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(500)
    yield r
    r.close()


def test_create_list_deliver_verify_delete(webhook_server: Server, receiver: Receiver) -> None:
    client = Engram(api_key=webhook_server.register(), base_url=webhook_server.api_url)
    hook = client.webhooks.create(receiver.url, ["memory.created"])
    assert hook.secret.startswith("whsec_") and hook.events == ["memory.created"]
    assert [w.id for w in client.webhooks.list()] == [hook.id]
    assert "secret" not in client.webhooks.list()[0].to_dict()

    agent = f"agent-{uuid.uuid4().hex[:8]}"
    created = client.memories.create(agent_id=agent, type="note", content={"content": "hello"})
    # The first attempt is answered 500; the retry carries the same delivery.
    first_headers, first_body = receiver.next()
    headers, body = receiver.next()
    assert headers[DELIVERY_HEADER] == first_headers[DELIVERY_HEADER] and body == first_body
    assert headers[EVENT_HEADER] == "memory.created"
    assert verify_webhook(hook.secret, body, headers[TIMESTAMP_HEADER], headers[SIGNATURE_HEADER])
    assert not verify_webhook("whsec_other", body, headers[TIMESTAMP_HEADER], headers[SIGNATURE_HEADER])
    assert not verify_webhook(hook.secret, body + b" ", headers[TIMESTAMP_HEADER], headers[SIGNATURE_HEADER])
    stale = time.time() + 3600
    assert not verify_webhook(hook.secret, body, headers[TIMESTAMP_HEADER], headers[SIGNATURE_HEADER], now=stale)
    delivered = json.loads(body)
    assert delivered["data"]["memory_id"] == created.id and delivered["data"]["agent_id"] == agent

    deadline = time.monotonic() + 20
    while True:
        page = client.webhooks.deliveries(hook.id, limit=10)
        if page.deliveries and page.deliveries[0].status == "delivered":
            break
        assert time.monotonic() < deadline, page.to_dict()
        time.sleep(0.05)
    d = page.deliveries[0]
    assert d.attempts == 2 and d.last_status_code == 200 and d.delivered_at is not None and page.next_cursor is None
    assert [x.id for x in client.webhooks.iter_deliveries(hook.id, page_size=1)] == [d.id]

    other = Engram(api_key=webhook_server.register(), base_url=webhook_server.api_url)
    with pytest.raises(NotFoundError):
        other.webhooks.deliveries(hook.id)
    assert other.webhooks.list() == []

    assert client.webhooks.delete(hook.id).deleted
    assert client.webhooks.list() == []


def test_bad_input_names_the_problem(webhook_server: Server) -> None:
    client = Engram(api_key=webhook_server.register(), base_url=webhook_server.api_url)
    with pytest.raises(BadRequestError) as err:
        client.webhooks.create("https://example.com/hook", ["memory.exploded"])
    assert err.value.code == "invalid_webhook_events" and err.value.details.get("field") == "events"
    with pytest.raises(BadRequestError) as err:
        client.webhooks.create("ftp://example.com/hook", ["memory.created"])
    assert err.value.code == "invalid_webhook_url"
