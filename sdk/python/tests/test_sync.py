"""Sync: pull pages of an agent's log and push events."""

from __future__ import annotations

from engram import SyncEvent


def test_pull_iterate_push(client, agent_id):
    client.memories.batch(
        agent_id=agent_id,
        memories=[{"type": "note", "content": {"content": f"n{i}"}} for i in range(5)],
    )
    page = client.sync.pull(agent_id, limit=2)
    assert len(page.events) == 2 and page.head >= page.next > 0
    events = list(client.sync.iter(agent_id, page_size=2))
    assert len(events) >= 5 and all(isinstance(e, SyncEvent) for e in events)
    assert [e.id for e in events[:2]] == [e.id for e in page.events]

    # The server's own events pushed back are recognised by id and not appended twice.
    pushed = client.sync.push(agent_id, events)
    assert pushed.appended == 0 and pushed.duplicates == len(events) and pushed.head == page.head
    again = client.sync.push(agent_id, [e.to_dict() for e in events[:2]])
    assert again.duplicates == 2
    assert len(list(client.memories.iter(agent_id=agent_id))) == 5
