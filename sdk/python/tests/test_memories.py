"""Memories and agents: every route, errors, pagination and tenant isolation."""

from __future__ import annotations

import pytest

from engram import (
    BadRequestError,
    Engram,
    Memory,
    NotFoundError,
    PreconditionFailedError,
)


def test_create_get_update_forget_recover_purge(client, agent_id):
    created = client.memories.create(
        agent_id=agent_id,
        type="notes",
        content={"content": "Caroline adopted a puppy"},
        tags=["Caroline"],
    )
    assert created.type == "note" and created.embedding is not None and created.embedding.status == "embedded"

    m = client.memories.get(created.id)
    assert isinstance(m, Memory)
    assert (m.agent_id, m.type, m.content["content"], m.tags, m.version) == (
        agent_id, "note", "Caroline adopted a puppy", ["Caroline"], 1
    )
    assert m.etag == '"1"' and m.created_at is not None and m.to_dict()["id"] == m.id

    assert client.memories.get_if_changed(m.id, m.etag) is None  # 304
    assert client.memories.get_if_changed(m.id, "*") is None

    patched = client.memories.update(m.id, tags=["Caroline", "pets"], if_match=m.etag)
    changed = client.memories.get_if_changed(m.id, m.etag)
    assert changed is not None and changed.version == 2
    assert patched.tags == ["Caroline", "pets"] and patched.version == 2
    with pytest.raises(PreconditionFailedError) as stale:
        client.memories.patch(m.id, content={"content": "changed"}, if_match=m.etag)
    assert stale.value.status == 412 and stale.value.details["etag"] == '"2"'

    forgotten = client.memories.forget(m.id)
    assert forgotten.forgotten and forgotten.forgotten_at is not None
    assert client.memories.get(m.id).forgotten
    assert client.memories.list(agent_id=agent_id).memories == []
    assert [x.id for x in client.memories.list(agent_id=agent_id, include_forgotten=True).memories] == [m.id]

    recovered = client.memories.recover(m.id)
    assert not recovered.forgotten

    purged = client.memories.purge(m.id)
    assert purged.purged
    with pytest.raises(NotFoundError) as gone:
        client.memories.get(m.id)
    assert gone.value.code == "not_found"


def test_batch_is_all_or_nothing(client, agent_id):
    items = [{"type": "note", "content": {"content": f"note {i}"}} for i in range(3)]
    created = client.memories.batch(agent_id=agent_id, memories=items)
    assert [c.type for c in created] == ["note"] * 3

    bad = items + [{"type": "note", "content": {}}]
    with pytest.raises(BadRequestError) as err:
        client.memories.batch(agent_id=agent_id, memories=bad)
    assert err.value.details["index"] == 3 and err.value.details["field"].startswith("memories[3].")
    assert len(list(client.memories.iter(agent_id=agent_id))) == 3


def test_list_pages_and_iterates(client, agent_id):
    items = [{"type": "note", "content": {"content": f"n{i}"}} for i in range(7)]
    client.memories.batch(agent_id=agent_id, memories=items)
    client.memories.create(agent_id=agent_id, type="beliefs", content={"statement": "tests help"})

    first = client.memories.list(agent_id=agent_id, limit=3)
    assert len(first.memories) == 3 and first.next_cursor
    every = list(client.memories.iter(agent_id=agent_id, page_size=3))
    assert len(every) == 8 and len({m.id for m in every}) == 8
    assert [m.id for m in every[:3]] == [m.id for m in first.memories]
    beliefs = client.memories.list(agent_id=agent_id, type="belief").memories
    assert [m.type for m in beliefs] == ["belief"]
    both = list(client.memories.iter(agent_id=agent_id, type=["notes", "beliefs"], page_size=100))
    assert len(both) == 8


def test_agents_list_iterate_delete(client):
    for name in ("ag-a", "ag-b", "ag-c"):
        client.memories.create(agent_id=name, type="note", content={"content": name})
    page = client.agents.list(limit=2)
    assert [a.agent_id for a in page.agents] == ["ag-a", "ag-b"] and page.next_cursor
    agents = list(client.agents.iter(page_size=2))
    assert [a.agent_id for a in agents] == ["ag-a", "ag-b", "ag-c"]
    assert agents[0].memory_count == 1 and agents[0].embedding_model and agents[0].text_bytes > 0
    assert client.agents.delete("ag-b") is True
    assert [a.agent_id for a in client.agents.iter()] == ["ag-a", "ag-c"]
    with pytest.raises(NotFoundError):
        client.agents.delete("ag-b")


def test_user_b_cannot_see_user_a(client, server, agent_id):
    m = client.memories.create(agent_id=agent_id, type="note", content={"content": "A's secret"})
    b = Engram(api_key=server.register(), base_url=server.api_url)
    assert list(b.agents.iter()) == []
    assert b.memories.list(agent_id=agent_id).memories == []
    for call in (
        lambda: b.memories.get(m.id),
        lambda: b.memories.update(m.id, tags=["x"]),
        lambda: b.memories.forget(m.id),
        lambda: b.memories.purge(m.id),
        lambda: b.agents.delete(agent_id),
        lambda: b.agents.stats(agent_id),
        lambda: b.sync.pull(agent_id),
        lambda: b.search(agent_id=agent_id, query="secret"),
    ):
        with pytest.raises(NotFoundError):
            call()
    assert client.memories.get(m.id).content["content"] == "A's secret"


def test_invalid_content_names_the_field(client, agent_id):
    with pytest.raises(BadRequestError) as err:
        client.memories.create(agent_id=agent_id, type="beliefs", content={"statement": "x", "confidence": 7})
    assert err.value.details["field"] == "content.confidence"
    with pytest.raises(BadRequestError):
        client.memories.create(agent_id=agent_id, type="poems", content={"content": "x"})
