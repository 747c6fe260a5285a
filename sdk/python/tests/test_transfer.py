"""Export and import: stream an agent out as JSON Lines and back in."""

from __future__ import annotations

import io
import json

import pytest

from engram import AsyncEngram, NotFoundError


def _contents(client, agent_id):
    return sorted(json.dumps(m.content, sort_keys=True) for m in client.memories.iter(agent_id=agent_id))


def test_export_import_round_trip(client, agent_id):
    client.memories.batch(
        agent_id=agent_id,
        memories=[{"type": "note", "content": {"content": f"exported note {i}"}} for i in range(5)],
    )
    lines = list(client.agents.export(agent_id))
    assert "header" in lines[0] and lines[0]["header"]["format"] == "events"
    assert all("event" in line for line in lines[1:])

    # In small requests: each repeats the header, and the counts add up.
    copy = agent_id + "-copy"
    result = client.agents.import_(copy, lines, chunk_bytes=2048)
    assert result.appended == len(lines) - 1 and result.duplicates == 0
    assert _contents(client, copy) == _contents(client, agent_id)
    # The copy's events are audited as the import's, the original's as the API's.
    assert {e.source for e in client.agents.audit(copy, limit=100).entries} == {"import"}
    assert {e.source for e in client.agents.audit(agent_id, limit=100).entries} == {"api"}

    # From a file, again: nothing changes.
    text = "\n".join(json.dumps(line) for line in lines) + "\n"
    again = client.agents.import_(copy, io.StringIO(text))
    assert again.appended == 0 and again.duplicates == len(lines) - 1

    memories = list(client.agents.export(agent_id, format="memories"))
    assert memories[0]["header"]["format"] == "memories" and len(memories) == 6


def test_export_of_unknown_agent_raises(client):
    with pytest.raises(NotFoundError):
        list(client.agents.export("nobody-here"))


@pytest.mark.asyncio
async def test_async_export_import(server, api_key, agent_id):
    async with AsyncEngram(api_key=api_key, base_url=server.api_url) as c:
        await c.memories.create(agent_id=agent_id, type="note", content={"content": "async export"})
        lines = [line async for line in c.agents.export(agent_id)]
        result = await c.agents.import_(agent_id + "-copy", lines)
        assert result.appended == len(lines) - 1
