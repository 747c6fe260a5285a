"""Settings, processing, raw entries, suggestions, provenance, strength,
anxiety, audit and stats: the Go client's cognition test, through the SDK."""

from __future__ import annotations

import pytest

from engram import BadRequestError, ConflictError, Engram, NotFoundError, PreconditionFailedError


@pytest.fixture
def claire(client):
    def raw(text):
        return client.memories.create(agent_id="claire", type="raw_entry", content={"content": text}).id

    raw_id = raw("Yesterday we deployed the billing service and it failed, then I learned to check migrations")
    raw("I think caching always helps latency")
    raw("Reminder: the docs are at https://example.com/docs")
    return raw_id, raw


def test_cognition_routes(client, server, claire):
    raw_id, raw = claire
    other = Engram(api_key=server.register(), base_url=server.api_url)

    s = client.agents.settings("claire")
    assert s.agent_id == "claire" and s.stack_state and s.updated_at is None
    s = client.agents.update_settings("claire", lint_rules={"min_length": 12})
    assert s.lint_rules is not None and s.lint_rules.min_length == 12 and s.updated_at is not None
    with pytest.raises(BadRequestError):
        client.agents.update_settings("claire", stack_state="asleep")

    v = client.processing.get("claire")
    assert len(v.triggers) == 7 and v.raw["unprocessed"] == 3
    assert v.config["layers"]["raw_to_episode"]["quantity_threshold"] == 10
    v = client.processing.update("claire", layers={"raw_to_episode": {"quantity_threshold": 3}})
    assert v.config["layers"]["raw_to_episode"]["quantity_threshold"] == 3

    passes = client.processing.run("claire", force=True)
    assert len(passes) == 7 and passes[0].transition == "raw_to_episode" and passes[0].source_count == 3
    with pytest.raises(BadRequestError):
        client.processing.run("claire", transition="raw_to_poem")

    done = client.processing.raw_entries("claire", processed=True, limit=1)
    assert len(done) == 1 and done[0].processed and done[0].processed_into and done[0].type == "raw_entry"

    pending = client.suggestions.list("claire", status="pending")
    assert len(pending) == 3
    by_type = {sg.memory_type: sg for sg in pending}
    ep = by_type["episode"]
    got = client.suggestions.get(ep.id)
    assert got.sources[0] == "raw_entry:" + raw_id
    acc = client.suggestions.accept(ep.id, tags=["ops"])
    assert acc.suggestion is not None and acc.suggestion.status == "promoted"
    assert acc.memory is not None and acc.memory.type == "episode"
    with pytest.raises(ConflictError) as twice:
        client.suggestions.accept(ep.id)
    assert twice.value.code == "suggestion_not_pending"
    rej = client.suggestions.reject(by_type["belief"].id, reason="too vague")
    dis = client.suggestions.dismiss(by_type["note"].id)
    assert (rej.status, rej.resolution_reason, dis.status) == ("rejected", "too vague", "dismissed")

    raw("Another day, another deploy: we shipped the search service and it failed, then I learned to pin versions")
    r = client.processing.exhaust("claire", auto_promote=False)
    assert r.converged and r.cycles_completed == 4 and r.cycles[0].intensity == "light"
    with pytest.raises(BadRequestError):
        client.processing.exhaust("claire", max_cycles=101)

    episode = client.memories.list(agent_id="claire", type="episode").memories[0]
    p = client.memories.provenance(episode.id, direction="up")
    assert p.up is not None and p.up.nodes[0].id == raw_id and p.down is None

    m = client.memories.weaken(episode.id, by=0.3, reason="stale")
    assert 0.69 <= m.strength <= 0.71
    m = client.memories.verify(episode.id, if_match=m.etag)
    assert m.verification_count == 1 and m.last_verified_at is not None
    m = client.memories.protect(episode.id)
    assert m.is_protected
    m = client.memories.unprotect(episode.id, if_match=m.etag)
    assert not m.is_protected
    with pytest.raises(PreconditionFailedError):
        client.memories.protect(episode.id, if_match='"1"')

    anxiety = client.agents.anxiety("claire")
    assert len(anxiety.dimensions) == 6 and anxiety.overall_level
    page = client.agents.audit("claire", limit=2)
    assert len(page.entries) == 2 and page.next_before and page.entries[0].actor
    nxt = client.agents.audit("claire", limit=2, before=page.next_before)
    assert nxt.entries and nxt.entries[0].id != page.entries[0].id
    stats = client.agents.stats("claire")
    assert stats.total > 0 and stats.by_type["raw_entry"] == 4 and "unprocessed" in stats.raw

    for call in (
        lambda: other.agents.settings("claire"),
        lambda: other.agents.update_settings("claire", lazy_decay=True),
        lambda: other.processing.get("claire"),
        lambda: other.processing.update("claire"),
        lambda: other.processing.run("claire"),
        lambda: other.processing.exhaust("claire"),
        lambda: other.processing.raw_entries("claire"),
        lambda: other.suggestions.list("claire"),
        lambda: other.suggestions.get(ep.id),
        lambda: other.suggestions.accept(by_type["belief"].id),
        lambda: other.suggestions.reject(by_type["belief"].id),
        lambda: other.suggestions.dismiss(by_type["belief"].id),
        lambda: other.memories.provenance(episode.id),
        lambda: other.memories.weaken(episode.id),
        lambda: other.memories.verify(episode.id),
        lambda: other.memories.protect(episode.id),
        lambda: other.memories.unprotect(episode.id),
        lambda: other.memories.recover(episode.id),
        lambda: other.agents.anxiety("claire"),
        lambda: other.agents.audit("claire"),
        lambda: other.agents.stats("claire"),
    ):
        with pytest.raises(NotFoundError):
            call()
