"""The API's resource namespaces, async. The sync ones in
_sync_resources.py are generated from this file by scripts/unasync.py (a
test fails when they differ): edit this file, then run the script."""

from __future__ import annotations

import builtins

import json
from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

from ._base import Request, body, if_match_header, query, segment
from ._models import (
    Accepted,
    Agent,
    AgentPage,
    AnxietyReport,
    APIKey,
    AuditEntry,
    AuditPage,
    AuthStatus,
    CreatedAPIKey,
    CreatedMemory,
    CreatedWebhook,
    CycledAPIKey,
    DeletedWebhook,
    Embedding,
    EmbeddingBatch,
    ExhaustResult,
    Forgotten,
    ImportResult,
    Job,
    JobCreated,
    Memory,
    MemoryPage,
    ModelCatalog,
    OpenAIEmbeddingResponse,
    OpenAIModel,
    Pass,
    ProcessingView,
    Provenance,
    RawEntry,
    Reembedded,
    Registration,
    RevokedAPIKey,
    SearchResponse,
    Session,
    SimilarResult,
    StackSettings,
    Stats,
    Suggestion,
    SyncEvent,
    SyncPage,
    SyncPushResult,
    Verification,
    Webhook,
    WebhookDelivery,
    WebhookDeliveryPage,
    from_dict,
)

if TYPE_CHECKING:
    from ._client import AsyncEngram


def _time(value: datetime | str | None) -> str | None:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _event(event: SyncEvent | dict[str, Any]) -> dict[str, Any]:
    if isinstance(event, SyncEvent):
        return {"id": event.id, "type": event.type, "time": event.time, "payload": event.payload}
    return event


# The size of one import request: under the server's default body limit
# (10 MiB) with room to spare.
IMPORT_CHUNK_BYTES = 4 << 20


def _import_chunks(lines: Iterable[dict[str, Any] | str | bytes] | IO[Any], chunk_bytes: int) -> Iterable[bytes]:
    """The lines as request bodies of at most chunk_bytes (a longer line
    goes alone), each starting with the export's header."""
    header = b""
    chunk: builtins.list[bytes] = []
    size = 0
    for line in lines:
        if isinstance(line, dict):
            raw = json.dumps(line, separators=(",", ":")).encode()
        elif isinstance(line, str):
            raw = line.strip().encode()
        else:
            raw = bytes(line).strip()
        if not raw:
            continue
        if not header and not chunk and raw.startswith(b'{"header"'):
            header = raw + b"\n"
            continue
        if chunk and size + len(raw) + 1 > chunk_bytes:
            yield header + b"".join(chunk)
            chunk, size = [], len(header)
        chunk.append(raw + b"\n")
        size += len(raw) + 1
    if chunk:
        yield header + b"".join(chunk)


class AsyncResource:
    def __init__(self, client: AsyncEngram) -> None:
        self._client = client

    async def _call(self, req: Request) -> Any:
        return await self._client._request(req)


class AsyncAuth(AsyncResource):
    """Accounts: /auth/register, /auth/verify, /auth/login, /auth/status."""

    async def register(self, email: str) -> Registration:
        """Ask for an account; the server mails a verification token."""
        data = await self._call(Request("POST", "/auth/register", body={"email": email}, authenticated=False))
        return from_dict(Registration, data)

    async def verify(self, token: str) -> Verification:
        """Redeem the mailed token; ``api_key`` is the first key, shown only here."""
        data = await self._call(Request("POST", "/auth/verify", body={"token": token}, authenticated=False, secret=True))
        return from_dict(Verification, data)

    async def login(self, api_key: str | None = None) -> Session:
        """Exchange an API key (default: the client's) for a session token."""
        key = api_key or self._client.api_key
        data = await self._call(Request("POST", "/auth/login", body={"api_key": key}, authenticated=False, secret=True))
        return from_dict(Session, data)

    async def status(self) -> AuthStatus:
        """The credential's user and agents."""
        return from_dict(AuthStatus, await self._call(Request("GET", "/auth/status", idempotent=True)))


class AsyncSessions(AsyncResource):
    """Session tokens: Bearer credentials that end with the key they came from."""

    async def create(self, api_key: str | None = None) -> Session:
        """POST /auth/login: a session token for api_key (default: the client's)."""
        return await AsyncAuth(self._client).login(api_key)


class AsyncKeys(AsyncResource):
    """API keys: /auth/keys."""

    async def list(self) -> builtins.list[APIKey]:
        """Every key of the user, revoked ones with ``is_active`` false, oldest first."""
        data = await self._call(Request("GET", "/auth/keys", idempotent=True))
        return [from_dict(APIKey, k) for k in data["keys"]]

    async def create(self, name: str) -> CreatedAPIKey:
        """A new named key; ``key`` is the secret, shown only here."""
        return from_dict(CreatedAPIKey, await self._call(Request("POST", "/auth/keys", body={"name": name})))

    async def revoke(self, key_id: str) -> RevokedAPIKey:
        """Deactivate a key (and its sessions) at once."""
        data = await self._call(Request("DELETE", f"/auth/keys/{segment(key_id)}", idempotent=True))
        return from_dict(RevokedAPIKey, data)

    async def cycle(self, key_id: str) -> CycledAPIKey:
        """Replace a key by a new one of the same name in one step."""
        data = await self._call(Request("POST", f"/auth/keys/{segment(key_id)}/cycle"))
        return from_dict(CycledAPIKey, data)


class AsyncWebhooks(AsyncResource):
    """Webhooks: /webhooks. Deliveries are signed; check them with
    :func:`engram.verify_webhook`."""

    async def create(self, url: str, events: builtins.list[str]) -> CreatedWebhook:
        """Register a webhook for ``events``; ``secret`` signs its deliveries and is shown only here."""
        return from_dict(CreatedWebhook, await self._call(Request("POST", "/webhooks", body={"url": url, "events": events})))

    async def list(self) -> builtins.list[Webhook]:
        """The user's webhooks, oldest first, without secrets."""
        data = await self._call(Request("GET", "/webhooks", idempotent=True))
        return [from_dict(Webhook, w) for w in data["webhooks"]]

    async def delete(self, webhook_id: str) -> DeletedWebhook:
        """Delete a webhook; its pending deliveries are dropped."""
        data = await self._call(Request("DELETE", f"/webhooks/{segment(webhook_id)}", idempotent=True))
        return from_dict(DeletedWebhook, data)

    async def deliveries(self, webhook_id: str, *, limit: int | None = None, cursor: str | None = None) -> WebhookDeliveryPage:
        """One page of the webhook's deliveries, newest first; ``next_cursor`` is None on the last."""
        req = Request("GET", f"/webhooks/{segment(webhook_id)}/deliveries", params=query(limit=limit, cursor=cursor), idempotent=True)
        return from_dict(WebhookDeliveryPage, await self._call(req))

    async def iter_deliveries(self, webhook_id: str, *, page_size: int | None = None) -> AsyncIterator[WebhookDelivery]:
        """Every delivery of the webhook, newest first, page by page."""
        cursor: str | None = None
        while True:
            page = await self.deliveries(webhook_id, limit=page_size, cursor=cursor)
            for d in page.deliveries:
                yield d
            if not page.next_cursor:
                return
            cursor = page.next_cursor


class AsyncMemories(AsyncResource):
    """Memories: /memories and the per-memory actions."""

    async def create(
        self,
        *,
        agent_id: str,
        type: str,
        content: dict[str, Any],
        tags: builtins.list[str] | None = None,
        created_at: datetime | str | None = None,
        derived_from: builtins.list[str] | None = None,
    ) -> CreatedMemory:
        """Store one memory (type plural or singular); its agent is created on first write."""
        req = Request(
            "POST",
            "/memories",
            body=body(
                agent_id=agent_id,
                type=type,
                content=content,
                tags=tags,
                created_at=_time(created_at),
                derived_from=derived_from,
            ),
        )
        return from_dict(CreatedMemory, await self._call(req))

    async def batch(self, *, agent_id: str, memories: builtins.list[dict[str, Any]]) -> builtins.list[CreatedMemory]:
        """Store up to 1000 memories of one agent, all or nothing, in input order.
        Each item is ``{"type", "content", "tags"?, "created_at"?, "derived_from"?}``."""
        data = await self._call(Request("POST", "/memories/batch", body={"agent_id": agent_id, "memories": memories}))
        return [from_dict(CreatedMemory, m) for m in data["memories"]]

    async def get(self, memory_id: str) -> Memory:
        """One memory, forgotten ones included."""
        return from_dict(Memory, await self._call(Request("GET", f"/memories/{segment(memory_id)}", idempotent=True)))

    async def get_if_changed(self, memory_id: str, etag: str) -> Memory | None:
        """The memory if it is no longer at ``etag`` (``memory.etag``), else None
        (GET with If-None-Match: 304 Not Modified, no body)."""
        req = Request("GET", f"/memories/{segment(memory_id)}", headers={"If-None-Match": etag}, idempotent=True)
        data = await self._call(req)
        return None if data is None else from_dict(Memory, data)

    async def list(
        self,
        *,
        agent_id: str | None = None,
        type: str | builtins.list[str] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        include_forgotten: bool | None = None,
        include_weak: bool | None = None,
    ) -> MemoryPage:
        """One page of memories, newest first; ``next_cursor`` is None on the last."""
        params = query(
            agent_id=agent_id,
            type=type,
            limit=limit,
            cursor=cursor,
            include_forgotten=include_forgotten,
            include_weak=include_weak,
        )
        return from_dict(MemoryPage, await self._call(Request("GET", "/memories", params=params, idempotent=True)))

    async def iter(
        self,
        *,
        agent_id: str | None = None,
        type: str | builtins.list[str] | None = None,
        page_size: int | None = None,
        include_forgotten: bool | None = None,
        include_weak: bool | None = None,
    ) -> AsyncIterator[Memory]:
        """Every memory, newest first, fetching pages as it goes."""
        cursor: str | None = None
        while True:
            page = await self.list(
                agent_id=agent_id,
                type=type,
                limit=page_size,
                cursor=cursor,
                include_forgotten=include_forgotten,
                include_weak=include_weak,
            )
            for m in page.memories:
                yield m
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def update(
        self,
        memory_id: str,
        *,
        content: dict[str, Any] | None = None,
        tags: builtins.list[str] | None = None,
        if_match: str | None = None,
    ) -> Memory:
        """Merge content field by field (None values restore defaults) and replace tags.
        ``if_match`` (``memory.etag``) makes it conditional: 412 on a mismatch."""
        req = Request(
            "PATCH",
            f"/memories/{segment(memory_id)}",
            body=body(content=content, tags=tags),
            headers=if_match_header(if_match),
        )
        return from_dict(Memory, await self._call(req))

    patch = update

    async def forget(self, memory_id: str, *, if_match: str | None = None) -> Forgotten:
        """Hide a memory from search and listings; it stays readable and recoverable."""
        req = Request("DELETE", f"/memories/{segment(memory_id)}", headers=if_match_header(if_match), idempotent=True)
        return from_dict(Forgotten, await self._call(req))

    async def purge(self, memory_id: str, *, if_match: str | None = None) -> Forgotten:
        """Remove a memory from every read model (the log keeps the fact)."""
        req = Request(
            "DELETE",
            f"/memories/{segment(memory_id)}",
            params={"purge": "true"},
            headers=if_match_header(if_match),
            idempotent=True,
        )
        return from_dict(Forgotten, await self._call(req))

    async def recover(self, memory_id: str, *, if_match: str | None = None) -> Memory:
        """Bring a forgotten memory back (weak, searchable again)."""
        return await self._action(
            Request(
                "POST",
                f"/memories/{segment(memory_id)}/recover",
                headers=if_match_header(if_match),
            )
        )

    async def protect(self, memory_id: str, *, if_match: str | None = None) -> Memory:
        """Freeze a memory's strength: no decay, no forgetting."""
        return await self._action(
            Request(
                "POST",
                f"/memories/{segment(memory_id)}/protect",
                headers=if_match_header(if_match),
            )
        )

    async def unprotect(self, memory_id: str, *, if_match: str | None = None) -> Memory:
        """Let a protected memory decay again."""
        return await self._action(
            Request(
                "POST",
                f"/memories/{segment(memory_id)}/unprotect",
                headers=if_match_header(if_match),
            )
        )

    async def weaken(
        self,
        memory_id: str,
        *,
        by: float | None = None,
        reason: str | None = None,
        if_match: str | None = None,
    ) -> Memory:
        """Lower a memory's strength by ``by`` in (0, 1] (server default 0.1)."""
        payload = body(by=by, reason=reason) or None
        return await self._action(
            Request(
                "POST",
                f"/memories/{segment(memory_id)}/weaken",
                body=payload,
                headers=if_match_header(if_match),
            )
        )

    async def verify(self, memory_id: str, *, reason: str | None = None, if_match: str | None = None) -> Memory:
        """Record that a memory still holds: its strength rises."""
        payload = body(reason=reason) or None
        return await self._action(
            Request(
                "POST",
                f"/memories/{segment(memory_id)}/verify",
                body=payload,
                headers=if_match_header(if_match),
            )
        )

    async def provenance(self, memory_id: str, *, direction: str | None = None, depth: int | None = None) -> Provenance:
        """The memory's provenance tree: ``up`` (sources), ``down`` (derived), or both."""
        req = Request(
            "GET",
            f"/memories/{segment(memory_id)}/provenance",
            params=query(direction=direction, depth=depth),
            idempotent=True,
        )
        return from_dict(Provenance, await self._call(req))

    async def _action(self, req: Request) -> Memory:
        return from_dict(Memory, await self._call(req))


class AsyncAgents(AsyncResource):
    """Agents (memory stacks): listing, deletion, settings, stats, audit, anxiety."""

    async def list(self, *, limit: int | None = None, cursor: str | None = None) -> AgentPage:
        """One page of the user's agents in agent_id order."""
        data = await self._call(Request("GET", "/agents", params=query(limit=limit, cursor=cursor), idempotent=True))
        return from_dict(AgentPage, data)

    async def iter(self, *, page_size: int | None = None) -> AsyncIterator[Agent]:
        """Every agent, fetching pages as it goes."""
        cursor: str | None = None
        while True:
            page = await self.list(limit=page_size, cursor=cursor)
            for a in page.agents:
                yield a
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def delete(self, agent_id: str) -> bool:
        """Remove an agent and everything in it from every read model."""
        data = await self._call(Request("DELETE", f"/agents/{segment(agent_id)}", idempotent=True))
        return bool(data.get("deleted"))

    async def settings(self, agent_id: str) -> StackSettings:
        """The agent's stack settings."""
        data = await self._call(Request("GET", f"/agents/{segment(agent_id)}/settings", idempotent=True))
        return from_dict(StackSettings, data)

    async def update_settings(self, agent_id: str, **patch: Any) -> StackSettings:
        """Merge settings, e.g. ``stack_state="maintenance", lint_rules={"min_length": 5}``."""
        data = await self._call(Request("PATCH", f"/agents/{segment(agent_id)}/settings", body=patch))
        return from_dict(StackSettings, data)

    async def stats(self, agent_id: str) -> Stats:
        """Counts by type, forgotten, weak, raw entries and suggestions."""
        return from_dict(Stats, await self._call(Request("GET", f"/agents/{segment(agent_id)}/stats", idempotent=True)))

    async def audit(self, agent_id: str, *, limit: int | None = None, before: str | None = None) -> AuditPage:
        """One page of the agent's audit trail, newest first."""
        req = Request(
            "GET",
            f"/agents/{segment(agent_id)}/audit",
            params=query(limit=limit, before=before),
            idempotent=True,
        )
        return from_dict(AuditPage, await self._call(req))

    async def anxiety(self, agent_id: str) -> AnxietyReport:
        """The agent's memory anxiety report."""
        data = await self._call(Request("GET", f"/agents/{segment(agent_id)}/anxiety", idempotent=True))
        return from_dict(AnxietyReport, data)

    async def export(self, agent_id: str, *, format: str | None = None) -> AsyncIterator[dict[str, Any]]:
        """The agent's export, one line (a dict) at a time as the server
        streams it: ``{"header": ...}`` first, then ``{"event": ...}`` lines
        (the lossless default) or ``{"memory": ...}`` (``format="memories"``)."""
        req = Request("GET", f"/agents/{segment(agent_id)}/export", params=query(format=format), idempotent=True)
        kwargs = self._client._build(req)
        kwargs["headers"]["Accept"] = "application/x-ndjson"
        async with self._client._http.stream(**kwargs, timeout=self._client.timeout) as resp:
            if resp.status_code != 200:
                await resp.aread()
                self._client._decode(req, resp)
            async for line in resp.aiter_lines():
                if line.strip():
                    yield json.loads(line)

    async def import_(
        self,
        agent_id: str,
        lines: Iterable[dict[str, Any] | str | bytes] | IO[Any],
        *,
        chunk_bytes: int = IMPORT_CHUNK_BYTES,
    ) -> ImportResult:
        """Import an export (lines as dicts or JSON text, or a file opened on
        one) into the agent, in requests of up to ``chunk_bytes`` each: every
        request is all or nothing and repeats the header, and importing the
        same lines again changes nothing. Returns the summed counts."""
        total = ImportResult()
        for chunk in _import_chunks(lines, chunk_bytes):
            req = Request(
                "POST",
                f"/agents/{segment(agent_id)}/import",
                content=chunk,
                headers={"Content-Type": "application/x-ndjson"},
                idempotent=True,
            )
            part = from_dict(ImportResult, await self._call(req))
            total.format = part.format
            total.appended += part.appended
            total.duplicates += part.duplicates
            total.skipped += part.skipped
            total.remapped += part.remapped
        return total


class AsyncAudit(AsyncResource):
    """The account's own audit trail: /audit (keys, sessions, agent deletions)."""

    async def list(self, *, limit: int | None = None, before: str | None = None) -> AuditPage:
        """One page, newest first; pass ``next_before`` as ``before`` for the next."""
        data = await self._call(Request("GET", "/audit", params=query(limit=limit, before=before), idempotent=True))
        return from_dict(AuditPage, data)

    async def iter(self, *, page_size: int | None = None) -> AsyncIterator[AuditEntry]:
        """Every entry, newest first, fetching pages as it goes."""
        before: str | None = None
        while True:
            page = await self.list(limit=page_size, before=before)
            for e in page.entries:
                yield e
            if not page.next_before or not page.entries:
                return
            before = page.next_before


class AsyncJobs(AsyncResource):
    """Bulk re-embedding jobs: /embeddings/jobs."""

    async def get(self, job_id: str) -> Job:
        data = await self._call(Request("GET", f"/embeddings/jobs/{segment(job_id)}", idempotent=True))
        return from_dict(Job, data)

    async def cancel(self, job_id: str) -> Job:
        """Cancel between batches; the agent keeps its old model."""
        return from_dict(Job, await self._call(Request("POST", f"/embeddings/jobs/{segment(job_id)}/cancel")))


class AsyncEmbeddings(AsyncResource):
    """Embeddings: /embeddings/*, and the OpenAI-compatible POST /embeddings."""

    def __init__(self, client: AsyncEngram) -> None:
        super().__init__(client)
        self.jobs = AsyncJobs(client)

    async def generate(self, text: str, *, model: str = "default") -> Embedding:
        """The vector of one text."""
        req = Request("POST", "/embeddings/generate", body={"text": text, "model": model}, idempotent=True)
        return from_dict(Embedding, await self._call(req))

    async def batch(self, texts: builtins.list[str], *, model: str = "default") -> EmbeddingBatch:
        """The vectors of up to 2048 texts, in the same order."""
        req = Request("POST", "/embeddings/batch", body={"texts": texts, "model": model}, idempotent=True)
        return from_dict(EmbeddingBatch, await self._call(req))

    async def reembed(self, *, agent_id: str, memory_type: str, memory_id: str) -> Reembedded:
        """Embed one memory again with its agent's active model."""
        req = Request(
            "POST",
            "/embeddings/reembed",
            body={"agent_id": agent_id, "memory_type": memory_type, "memory_id": memory_id},
        )
        return from_dict(Reembedded, await self._call(req))

    async def bulk_reembed(
        self, *, agent_id: str, types: builtins.list[str] | None = None, model: str | None = None
    ) -> JobCreated:
        """Start a job that re-embeds an agent's memories (and may switch its model)."""
        req = Request("POST", "/embeddings/bulk-reembed", body=body(agent_id=agent_id, types=types, model=model))
        return from_dict(JobCreated, await self._call(req))

    async def similar(
        self,
        *,
        agent_id: str,
        embedding: builtins.list[float],
        limit: int | None = None,
        min_score: float | None = None,
        types: builtins.list[str] | None = None,
    ) -> builtins.list[SimilarResult]:
        """The agent's memories nearest to a vector of its model's dimensions."""
        req = Request(
            "POST",
            "/embeddings/similar",
            body=body(agent_id=agent_id, embedding=embedding, limit=limit, min_score=min_score, types=types),
            idempotent=True,
        )
        data = await self._call(req)
        return [from_dict(SimilarResult, r) for r in data["results"]]

    async def models(self) -> ModelCatalog:
        """The embedding models the server knows and which it serves."""
        return from_dict(ModelCatalog, await self._call(Request("GET", "/embeddings/models", idempotent=True)))

    async def create(
        self,
        *,
        input: str | builtins.list[str],
        model: str = "default",
        encoding_format: str | None = None,
        dimensions: int | None = None,
    ) -> OpenAIEmbeddingResponse:
        """The OpenAI-compatible POST /embeddings (OpenAI's shapes, no envelope)."""
        req = Request(
            "POST",
            "/embeddings",
            body=body(input=input, model=model, encoding_format=encoding_format, dimensions=dimensions),
            idempotent=True,
            envelope=False,
        )
        return from_dict(OpenAIEmbeddingResponse, await self._call(req))


class AsyncModels(AsyncResource):
    """GET /models: the embedding models in OpenAI's list shape, for tools
    that list models before embedding."""

    async def list(self) -> builtins.list[OpenAIModel]:
        data = await self._call(Request("GET", "/models", idempotent=True, envelope=False))
        return [from_dict(OpenAIModel, m) for m in data["data"]]

    async def retrieve(self, model_id: str) -> OpenAIModel:
        """One model by id (GET /models/{id}); an unknown one raises
        NotFoundError with code model_not_found."""
        data = await self._call(Request("GET", f"/models/{segment(model_id)}", idempotent=True, envelope=False))
        return from_dict(OpenAIModel, data)


class AsyncSync(AsyncResource):
    """Replication of an agent's events: /sync/events."""

    async def pull(self, agent_id: str, *, after: int = 0, limit: int | None = None) -> SyncPage:
        """A page of the agent's log after position ``after``."""
        req = Request(
            "GET",
            "/sync/events",
            params=query(agent_id=agent_id, after=after, limit=limit),
            idempotent=True,
        )
        return from_dict(SyncPage, await self._call(req))

    async def iter(self, agent_id: str, *, after: int = 0, page_size: int | None = None) -> AsyncIterator[SyncEvent]:
        """Every event of the agent after ``after``, fetching pages as it goes."""
        while True:
            page = await self.pull(agent_id, after=after, limit=page_size)
            for e in page.events:
                yield e
            if not page.events or page.next <= after:
                return
            after = page.next

    async def push(self, agent_id: str, events: builtins.list[SyncEvent] | builtins.list[dict[str, Any]]) -> SyncPushResult:
        """Append up to 1000 events (duplicates by id are counted, not appended)."""
        req = Request("POST", "/sync/events", body={"agent_id": agent_id, "events": [_event(e) for e in events]})
        return from_dict(SyncPushResult, await self._call(req))


class AsyncProcessing(AsyncResource):
    """The processing pipeline: raw entries into episodes, beliefs, values."""

    async def run(self, agent_id: str, *, force: bool | None = None, transition: str | None = None) -> builtins.list[Pass]:
        """POST /agents/{id}/process: one pass of every (or one) transition."""
        req = Request(
            "POST",
            f"/agents/{segment(agent_id)}/process",
            body=body(force=force, transition=transition),
        )
        data = await self._call(req)
        return [from_dict(Pass, p) for p in data["passes"]]

    async def exhaust(
        self, agent_id: str, *, max_cycles: int | None = None, auto_promote: bool | None = None
    ) -> ExhaustResult:
        """Process until nothing changes or max_cycles."""
        req = Request(
            "POST",
            f"/agents/{segment(agent_id)}/process/exhaust",
            body=body(max_cycles=max_cycles, auto_promote=auto_promote),
        )
        return from_dict(ExhaustResult, await self._call(req))

    async def get(self, agent_id: str) -> ProcessingView:
        """The processing configuration, triggers, runs and raw-entry state."""
        data = await self._call(Request("GET", f"/agents/{segment(agent_id)}/processing", idempotent=True))
        return from_dict(ProcessingView, data)

    async def update(self, agent_id: str, **patch: Any) -> ProcessingView:
        """Merge configuration, e.g. ``auto_promote=True, layers={"raw_to_episode": {...}}``."""
        data = await self._call(Request("PATCH", f"/agents/{segment(agent_id)}/processing", body=patch))
        return from_dict(ProcessingView, data)

    async def raw_entries(
        self, agent_id: str, *, processed: bool | None = None, limit: int | None = None
    ) -> builtins.list[RawEntry]:
        """The agent's raw entries with their processing state."""
        req = Request(
            "GET",
            f"/agents/{segment(agent_id)}/raw",
            params=query(processed=processed, limit=limit),
            idempotent=True,
        )
        data = await self._call(req)
        return [from_dict(RawEntry, e) for e in data["raw_entries"]]


class AsyncSuggestions(AsyncResource):
    """Suggestions the pipeline made for review."""

    async def list(self, agent_id: str, *, status: str | None = None, limit: int | None = None) -> builtins.list[Suggestion]:
        req = Request(
            "GET",
            f"/agents/{segment(agent_id)}/suggestions",
            params=query(status=status, limit=limit),
            idempotent=True,
        )
        data = await self._call(req)
        return [from_dict(Suggestion, s) for s in data["suggestions"]]

    async def get(self, suggestion_id: str) -> Suggestion:
        data = await self._call(Request("GET", f"/suggestions/{segment(suggestion_id)}", idempotent=True))
        return from_dict(Suggestion, data)

    async def accept(
        self,
        suggestion_id: str,
        *,
        content: dict[str, Any] | None = None,
        tags: builtins.list[str] | None = None,
    ) -> Accepted:
        """Promote a suggestion to a memory, optionally with edited content or tags."""
        req = Request(
            "POST",
            f"/suggestions/{segment(suggestion_id)}/accept",
            body=body(content=content, tags=tags) or None,
        )
        return from_dict(Accepted, await self._call(req))

    async def reject(self, suggestion_id: str, *, reason: str | None = None) -> Suggestion:
        """Decline a suggestion (it stays on record as rejected)."""
        req = Request("POST", f"/suggestions/{segment(suggestion_id)}/reject", body=body(reason=reason) or None)
        return from_dict(Suggestion, await self._call(req))

    async def dismiss(self, suggestion_id: str, *, reason: str | None = None) -> Suggestion:
        """Set a suggestion aside without judging it."""
        req = Request("POST", f"/suggestions/{segment(suggestion_id)}/dismiss", body=body(reason=reason) or None)
        return from_dict(Suggestion, await self._call(req))


async def search(
    client: AsyncEngram,
    *,
    agent_id: str,
    query: str,
    limit: int | None = None,
    types: builtins.list[str] | None = None,
    min_score: float | None = None,
    mode: str | None = None,
    created_after: datetime | str | None = None,
    created_before: datetime | str | None = None,
    tags: builtins.list[str] | None = None,
    explain: bool | None = None,
    include_weak: bool | None = None,
    include_forgotten: bool | None = None,
) -> SearchResponse:
    req = Request(
        "POST",
        "/search",
        body=body(
            agent_id=agent_id,
            query=query,
            limit=limit,
            types=types,
            min_score=min_score,
            mode=mode,
            created_after=_time(created_after),
            created_before=_time(created_before),
            tags=tags,
            explain=explain,
            include_weak=include_weak,
            include_forgotten=include_forgotten,
        ),
        idempotent=True,
    )
    return from_dict(SearchResponse, await client._request(req))
