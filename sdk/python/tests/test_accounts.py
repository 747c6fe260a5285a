"""Accounts, keys and sessions through the SDK against the real server."""

from __future__ import annotations

import uuid

import pytest

from engram import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    Engram,
    GoneError,
    NotFoundError,
)


def test_register_verify_login_status(server):
    anon = Engram(api_key="", base_url=server.api_url)
    address = f"Py-{uuid.uuid4().hex[:8]}@Example.com"
    reg = anon.auth.register(address)
    assert reg.user_id
    token = server.mailed_token(address.lower())
    ver = anon.auth.verify(token)
    assert ver.verified and ver.user_id == reg.user_id and ver.api_key.startswith("eng_")
    with pytest.raises(GoneError) as used:
        anon.auth.verify(token)
    assert used.value.code == "token_used" and used.value.status == 410 and used.value.request_id

    client = Engram(api_key=ver.api_key, base_url=server.api_url)
    status = client.auth.status()
    assert status.authenticated and status.user_id == reg.user_id and status.email == address.lower()

    session = client.sessions.create()
    assert session.token.startswith("engs_") and session.expires_at is not None
    assert client.auth.login().user_id == reg.user_id
    as_session = client.with_options(api_key=session.token)
    assert as_session.auth.status().user_id == reg.user_id


def test_bad_requests_name_the_field(server):
    anon = Engram(api_key="", base_url=server.api_url)
    with pytest.raises(BadRequestError) as err:
        anon.auth.register("not an address")
    assert err.value.code == "invalid_request"
    assert err.value.details.get("field") == "email"


def test_keys_list_create_revoke_cycle(client, server):
    keys = client.keys.list()
    assert [k.name for k in keys] == ["default"] and keys[0].is_active

    created = client.keys.create("ci")
    assert created.key.startswith("eng_") and created.name == "ci"
    ci = Engram(api_key=created.key, base_url=server.api_url)
    assert ci.auth.status().authenticated

    cycled = client.keys.cycle(created.id)
    assert cycled.old_key_id == created.id and cycled.old_key_revoked and cycled.new_key.startswith("eng_")
    with pytest.raises(AuthenticationError) as unauthorized:
        ci.auth.status()
    assert unauthorized.value.status == 401 and unauthorized.value.code == "unauthorized"
    renewed = Engram(api_key=cycled.new_key, base_url=server.api_url)
    assert renewed.auth.status().authenticated
    names = {k.id: (k.name, k.is_active) for k in client.keys.list()}
    assert names[created.id] == ("ci", False) and names[cycled.new_key_id] == ("ci", True)

    revoked = client.keys.revoke(cycled.new_key_id)
    assert revoked.revoked and revoked.revoked_at is not None
    with pytest.raises(ConflictError) as again:
        client.keys.revoke(cycled.new_key_id)
    assert again.value.code == "key_already_revoked"
    with pytest.raises(NotFoundError):
        client.keys.revoke("key_does_not_exist")


def test_other_users_keys_are_not_found(client, server):
    other = Engram(api_key=server.register(), base_url=server.api_url)
    mine = client.keys.list()[0]
    with pytest.raises(NotFoundError):
        other.keys.revoke(mine.id)
    with pytest.raises(NotFoundError):
        other.keys.cycle(mine.id)


def test_account_audit_pages(client):
    for i in range(3):
        client.keys.create(f"k{i}")
    page = client.audit.list(limit=2)
    assert len(page.entries) == 2 and page.next_before
    every = list(client.audit.iter(page_size=2))
    assert len(every) >= 4
    assert len({e.id for e in every}) == len(every)
    assert every[0].id == page.entries[0].id


def test_environment_supplies_key_and_url(server, api_key, monkeypatch):
    monkeypatch.setenv("ENGRAM_API_KEY", api_key)
    monkeypatch.setenv("ENGRAM_BASE_URL", server.api_url)
    with Engram() as client:
        assert client.base_url == server.api_url
        assert client.auth.status().authenticated


def test_missing_key_fails_before_sending(server, monkeypatch):
    monkeypatch.delenv("ENGRAM_API_KEY", raising=False)
    with pytest.raises(ValueError, match="ENGRAM_API_KEY"):
        Engram(base_url=server.api_url).auth.status()


def test_health_and_readiness(client):
    assert client.health() == {"status": "ok"}
    assert client.readiness()["status"] == "ready"
