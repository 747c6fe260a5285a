"""Settings, processing, raw entries, suggestions, provenance, strength,
anxiety, audit and stats: the Go client's cognition test, through the SDK."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engram import BadRequestError, ConflictError, CycleFailure, Engram, NotFoundError, PreconditionFailedError


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


def test_exhaust_answers_the_cycles_stored_before_a_failing_cycle():
    """A run whose second cycle failed answers 200 with the cycle it stored,
    convergence_reason "cycle_failed" and the failure in the envelope's shape:
    a result, not an exception. A scripted loopback server gives the answer,
    which the real one gives only when storage fills up mid-run."""
    at = "2026-01-02T03:04:05Z"
    pass_ = {
        "pass_id": "p1", "transition": "raw_to_note", "model": "rules", "forced": True, "auto_promote": True,
        "at": at, "skipped": False, "inference_blocked": False, "source_count": 3,
        "consumed": [{"id": "r1", "into": ["note:n1"]}], "suggestions": [], "created": ["note:n1"],
        "deduplicated": 0, "gate_blocked": 0, "gate_details": [], "errors": [], "purged": ["belief:b1"],
    }
    answer = {
        "cycles_completed": 1, "total_promotions": 1, "total_suggestions": 0, "converged": False,
        "convergence_reason": "cycle_failed", "auto_promote": True,
        "cycles": [{"cycle": 1, "intensity": "light", "sources": 3, "promotions": 1, "suggestions": 0,
                    "errors": 0, "inference_blocked": False, "passes": [pass_]}],
        "error": {"code": "storage_full", "message": "the server's storage is full", "request_id": "req_1"},
    }
    body = json.dumps({"success": True, "data": answer}).encode()

    class Scripted(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        client = Engram(api_key="eng_test", base_url=f"http://127.0.0.1:{srv.server_address[1]}/v1", max_retries=0)
        r = client.processing.exhaust("claire", max_cycles=5)
    finally:
        srv.shutdown()
        srv.server_close()
    assert (r.cycles_completed, r.converged, r.convergence_reason) == (1, False, "cycle_failed")
    assert isinstance(r.error, CycleFailure)
    assert (r.error.code, r.error.request_id) == ("storage_full", "req_1")
    assert r.cycles[0].passes[0].purged == ["belief:b1"]
