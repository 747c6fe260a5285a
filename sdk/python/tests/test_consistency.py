"""The consistency token, wait_visible, errors for bad tokens, timeouts."""

from __future__ import annotations

import socket

import pytest

from engram import APIConnectionError, APITimeoutError, BadRequestError, Engram, EngramError, InsecureURLError


def test_writes_carry_a_token_and_wait_visible_returns(client, agent_id):
    assert client.last_consistency_token is None
    client.auth.status()
    assert client.last_consistency_token is None  # reads write nothing
    m = client.memories.create(agent_id=agent_id, type="note", content={"content": "x"})
    token = client.last_consistency_token
    assert token
    client.wait_visible()
    client.wait_visible(token, timeout=5)
    pinned = client.with_options(consistency_token=token)
    assert pinned.memories.get(m.id).id == m.id
    assert pinned.last_consistency_token == token  # copies share the last token


def test_bad_tokens_are_refused(client):
    with pytest.raises(BadRequestError) as malformed:
        client.with_options(consistency_token="garbage").auth.status()
    assert malformed.value.code == "invalid_consistency_token"
    with pytest.raises(BadRequestError) as ahead:
        client.wait_visible("v1.999999999")
    assert ahead.value.code == "consistency_token_ahead_of_log"
    with pytest.raises(ValueError):
        client.wait_visible()


def test_timeouts_and_connection_errors(api_key):
    # A listening socket that never answers: the connection is accepted by
    # the kernel, the response never comes.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        with pytest.raises(APITimeoutError):
            Engram(api_key=api_key, base_url=f"http://127.0.0.1:{port}/v1", timeout=0.3).auth.status()
    with pytest.raises(APIConnectionError):
        Engram(api_key=api_key, base_url="http://127.0.0.1:9/v1", timeout=5).auth.status()
    with pytest.raises(ValueError):
        Engram(api_key=api_key, base_url="ftp://example.com")


@pytest.mark.parametrize(
    ("base_url", "allowed"),
    [
        ("https://127.0.0.1:9/v1", True),
        ("http://127.0.0.1:9/v1", True),
        ("http://127.8.9.10:9/v1", True),
        ("http://[::1]:9/v1", True),
        ("http://localhost:9/v1", True),
        ("http://engram.example.com/v1", False),
        ("http://localhost.evil.example/v1", False),
        ("http://127.0.0.1.nip.io/v1", False),
        ("http://10.0.0.1/v1", False),
    ],
)
def test_secrets_travel_only_over_https_or_loopback(base_url, allowed):
    """docs/decisions.md#secrets-in-transit: refused before anything is sent."""
    client = Engram(api_key="eng_x", base_url=base_url, timeout=0.5, max_retries=0)
    for call in (client.auth.status, lambda: client.auth.verify("engv_x"), lambda: client.auth.login("eng_x")):
        if allowed:
            with pytest.raises(EngramError) as err:  # nothing listens on port 9
                call()
            assert not isinstance(err.value, InsecureURLError)
        else:
            with pytest.raises(InsecureURLError):
                call()


def test_register_sends_no_secret_so_plain_http_is_allowed():
    client = Engram(api_key="", base_url="http://engram.invalid/v1", timeout=0.5, max_retries=0)
    with pytest.raises(APIConnectionError):
        client.auth.register("a@example.com")
