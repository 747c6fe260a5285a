"""Search returns typed results with .results."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from engram import BadRequestError, SearchResponse


def test_search_finds_filters_and_explains(client, agent_id):
    client.memories.batch(
        agent_id=agent_id,
        memories=[
            {"type": "note", "content": {"content": "Caroline adopted a puppy named Rex"}, "tags": ["Caroline"]},
            {"type": "note", "content": {"content": "Melanie paints landscapes"}, "tags": ["Melanie"]},
            {"type": "belief", "content": {"statement": "puppies need walks"}},
        ],
    )
    r = client.search(agent_id=agent_id, query="What did Caroline adopt?", limit=2, explain=True)
    assert isinstance(r, SearchResponse)
    assert 1 <= r.total == len(r.results) <= 2
    top = r.results[0]
    assert "puppy" in top.content["content"] and 0 < top.score <= 1
    assert top.explain is not None and top.explain.fused_score > 0
    assert top.created_at is not None and not top.forgotten

    kw = client.search(agent_id=agent_id, query="puppy", mode="keyword", types=["beliefs"])
    assert [h.type for h in kw.results] == ["belief"]
    tagged = client.search(agent_id=agent_id, query="puppy", tags=["Melanie"])
    assert all("Melanie" in h.content["content"] for h in tagged.results)
    future = datetime.now(timezone.utc) + timedelta(hours=1)
    assert client.search(agent_id=agent_id, query="puppy", created_after=future).results == []


def test_search_errors(client, agent_id):
    with pytest.raises(BadRequestError) as err:
        client.search(agent_id=agent_id, query="x", limit=0)
    assert err.value.details["field"] == "limit"
    with pytest.raises(BadRequestError):
        client.search(agent_id=agent_id, query="x", mode="psychic")
