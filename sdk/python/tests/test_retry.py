"""Retry of 429 and 503: idempotent calls only, honouring Retry-After."""

from __future__ import annotations

import httpx
import pytest

from engram import Engram, RateLimitError
from engram._base import BaseClient, Request, parse_retry_after


class Counter:
    """Counts the requests an httpx client sends (an event hook, not a mock)."""

    def __init__(self) -> None:
        self.sent = 0

    def __call__(self, request: httpx.Request) -> None:
        self.sent += 1

    def client(self) -> httpx.Client:
        return httpx.Client(event_hooks={"request": [self]}, timeout=30)


def test_idempotent_reads_wait_out_429(limited_server):
    key = limited_server.register()
    counter = Counter()
    client = Engram(api_key=key, base_url=limited_server.api_url, max_retries=3, http_client=counter.client())
    # One request per second, burst 1: the second and third are 429 first.
    for _ in range(3):
        assert client.auth.status().authenticated
    assert counter.sent > 3


def test_without_retries_429_is_raised_with_retry_after(limited_server):
    key = limited_server.register()
    client = Engram(api_key=key, base_url=limited_server.api_url, max_retries=0)
    with pytest.raises(RateLimitError) as err:
        for _ in range(3):
            client.auth.status()
    assert err.value.status == 429 and err.value.code == "rate_limited"
    assert err.value.retry_after is not None and err.value.retry_after >= 1
    assert err.value.request_id


def test_writes_are_not_retried_on_429(limited_server):
    key = limited_server.register()
    counter = Counter()
    client = Engram(api_key=key, base_url=limited_server.api_url, max_retries=3, http_client=counter.client())
    client.memories.create(agent_id="w", type="note", content={"content": "first"})
    with pytest.raises(RateLimitError):
        client.memories.create(agent_id="w", type="note", content={"content": "second"})
    assert counter.sent == 2


def test_deletes_are_retried_on_429(limited_server):
    """A DELETE refused by the rate limit did nothing, and deleting is idempotent."""
    key = limited_server.register()
    counter = Counter()
    client = Engram(api_key=key, base_url=limited_server.api_url, max_retries=3, http_client=counter.client())
    m = client.memories.create(agent_id="d", type="note", content={"content": "x"})
    assert client.memories.forget(m.id).forgotten
    assert counter.sent > 2


def _response(status: int, code: str, retry_after: str | None = "1") -> httpx.Response:
    headers = {"Retry-After": retry_after} if retry_after else {}
    body = {"success": False, "error": {"code": code, "message": code, "request_id": "req_1"}}
    return httpx.Response(status, json=body, headers=headers)


POLICY = BaseClient(api_key="k", base_url="http://127.0.0.1:1/v1", timeout=1, max_retries=2, consistency_token=None)


@pytest.mark.parametrize(
    ("method", "idempotent", "status", "code", "retry_after", "want"),
    [
        ("GET", True, 429, "rate_limited", "1", 1.0),
        ("GET", True, 503, "server_busy", "2", 2.0),
        ("GET", True, 503, "not_yet_consistent", "1", 1.0),
        ("POST", False, 429, "rate_limited", "1", None),
        ("POST", False, 503, "server_busy", "1", None),
        ("POST", False, 503, "write_not_stored", "1", 1.0),  # nothing stored: safe to resend
        ("POST", False, 503, "write_not_yet_visible", "1", None),  # stored: resending copies it
        ("DELETE", True, 503, "write_not_yet_visible", "1", None),
        ("GET", True, 500, "internal", "1", None),
        ("GET", True, 404, "not_found", None, None),
        ("GET", True, 429, "rate_limited", "3600", None),  # longer than MAX_RETRY_WAIT: raised
    ],
)
def test_retry_policy(method, idempotent, status, code, retry_after, want):
    req = Request(method, "/x", idempotent=idempotent)
    assert POLICY._retry_delay(req, _response(status, code, retry_after), 0) == want


def test_backoff_without_retry_after_grows():
    req = Request("GET", "/x", idempotent=True)
    first = POLICY._retry_delay(req, _response(503, "server_busy", None), 0)
    second = POLICY._retry_delay(req, _response(503, "server_busy", None), 1)
    assert first is not None and second is not None and 0.3 < first < 0.7 and 0.7 < second < 1.3


def test_retry_after_forms():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
