"""The clients: :class:`Engram` (sync) and :class:`AsyncEngram` (async)."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

import httpx

from . import _async_resources as ar
from . import _sync_resources as sr
from ._base import (
    CONSISTENCY_TOKEN_HEADER,
    DEFAULT_MAX_RETRIES,
    BaseClient,
    Request,
)
from ._errors import APIConnectionError, APITimeoutError, NotYetConsistentError
from ._models import SearchResponse

# How long wait_visible waits in all by default: several of the server's
# --consistency-wait (5 s by default).
DEFAULT_VISIBILITY_TIMEOUT = 30.0


def _root(base_url: str) -> str:
    """The server's root (where /healthz is) from the API base URL."""
    return base_url.removesuffix("/v1")


class Engram(BaseClient):
    """A synchronous client of one Engram server with one credential.

    ``api_key`` defaults to ``$ENGRAM_API_KEY`` and ``base_url`` to
    ``$ENGRAM_BASE_URL``, else http://127.0.0.1:8080/v1. ``timeout`` is in
    seconds (or an ``httpx.Timeout``) per attempt; ``max_retries`` bounds the
    retries of idempotent calls on 429 and 503. ``consistency_token`` is sent
    with every request, so that they read that write. Thread-safe.
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        consistency_token: str | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            consistency_token=consistency_token,
        )
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(timeout=self.timeout)
        self.auth = sr.Auth(self)
        self.sessions = sr.Sessions(self)
        self.keys = sr.Keys(self)
        self.memories = sr.Memories(self)
        self.agents = sr.Agents(self)
        self.audit = sr.Audit(self)
        self.embeddings = sr.Embeddings(self)
        self.models = sr.Models(self)
        self.sync = sr.Sync(self)
        self.processing = sr.Processing(self)
        self.suggestions = sr.Suggestions(self)
        self.webhooks = sr.Webhooks(self)

    def with_options(self, **options: Any) -> Engram:
        """A client sharing this one's connections with some options changed
        (``api_key``, ``base_url``, ``timeout``, ``max_retries``, ``consistency_token``)."""
        clone = Engram(**self._options(**options), http_client=self._http)
        clone._last_token = self._last_token
        clone._owns_http = False
        return clone

    def search(
        self,
        *,
        agent_id: str,
        query: str,
        limit: int | None = None,
        types: list[str] | None = None,
        min_score: float | None = None,
        mode: str | None = None,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
        tags: list[str] | None = None,
        explain: bool | None = None,
        include_weak: bool | None = None,
        include_forgotten: bool | None = None,
    ) -> SearchResponse:
        """Search one agent's memories; the hits are in ``.results``.

        ``limit`` 1-100 (default 10), ``types`` plural or singular names,
        ``min_score`` 0-1, ``mode`` hybrid (default), vector or keyword,
        ``created_after`` inclusive and ``created_before`` exclusive,
        ``tags`` all required, ``explain`` adds each hit's score breakdown,
        ``include_weak`` / ``include_forgotten`` let those through."""
        return sr.search(
            self,
            agent_id=agent_id,
            query=query,
            limit=limit,
            types=types,
            min_score=min_score,
            mode=mode,
            created_after=created_after,
            created_before=created_before,
            tags=tags,
            explain=explain,
            include_weak=include_weak,
            include_forgotten=include_forgotten,
        )

    def wait_visible(self, token: str | None = None, *, timeout: float = DEFAULT_VISIBILITY_TIMEOUT) -> None:
        """Return once the server's read models include the write ``token``
        names (default: this client's last write), e.g. the
        ``consistency_token`` of a :class:`WriteNotYetVisibleError`."""
        token = token or self.last_consistency_token
        if not token:
            raise ValueError("no consistency token to wait for")
        deadline = time.monotonic() + timeout
        req = Request(
            "GET", "/agents", params={"limit": 1}, headers={CONSISTENCY_TOKEN_HEADER: token}, idempotent=True
        )
        while True:
            try:
                self._request(req, retries=0)
                return
            except NotYetConsistentError as err:
                wait = err.retry_after or 1.0
                if time.monotonic() + wait > deadline:
                    raise
                time.sleep(wait)

    def openapi(self) -> dict[str, Any]:
        """GET /openapi.json: the OpenAPI 3.1 document of the API (no auth)."""
        doc: dict[str, Any] = self._request(
            Request("GET", "/openapi.json", authenticated=False, idempotent=True, envelope=False)
        )
        return doc

    def health(self) -> dict[str, Any]:
        """GET /healthz: the process serves."""
        data: dict[str, Any] = self._request(Request("GET", "/healthz", authenticated=False, idempotent=True), root=True)
        return data

    def readiness(self) -> dict[str, Any]:
        """GET /readyz: backends and projections (503 while not ready)."""
        data: dict[str, Any] = self._request(Request("GET", "/readyz", authenticated=False, idempotent=True), root=True)
        return data

    def _request(self, req: Request, *, retries: int | None = None, root: bool = False) -> Any:
        kwargs = self._build(req)
        if root:
            kwargs["url"] = _root(self.base_url) + req.path
        max_retries = self.max_retries if retries is None else retries
        attempt = 0
        while True:
            try:
                resp = self._http.request(**kwargs, timeout=self.timeout)
            except httpx.TimeoutException as err:
                raise APITimeoutError(f"{req.method} {req.path}: {err}") from err
            except httpx.TransportError as err:
                raise APIConnectionError(f"{req.method} {req.path}: {err}") from err
            wait = self._retry_delay(req, resp, attempt) if attempt < max_retries else None
            if wait is None:
                return self._decode(req, resp)
            attempt += 1
            time.sleep(wait)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Engram:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncEngram(BaseClient):
    """The asyncio client; the same namespaces and methods as :class:`Engram`,
    awaited, and ``async for`` over the ``iter`` methods."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        consistency_token: str | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            consistency_token=consistency_token,
        )
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=self.timeout)
        self.auth = ar.AsyncAuth(self)
        self.sessions = ar.AsyncSessions(self)
        self.keys = ar.AsyncKeys(self)
        self.memories = ar.AsyncMemories(self)
        self.agents = ar.AsyncAgents(self)
        self.audit = ar.AsyncAudit(self)
        self.embeddings = ar.AsyncEmbeddings(self)
        self.models = ar.AsyncModels(self)
        self.sync = ar.AsyncSync(self)
        self.processing = ar.AsyncProcessing(self)
        self.suggestions = ar.AsyncSuggestions(self)
        self.webhooks = ar.AsyncWebhooks(self)

    def with_options(self, **options: Any) -> AsyncEngram:
        """A client sharing this one's connections with some options changed."""
        clone = AsyncEngram(**self._options(**options), http_client=self._http)
        clone._last_token = self._last_token
        clone._owns_http = False
        return clone

    async def search(
        self,
        *,
        agent_id: str,
        query: str,
        limit: int | None = None,
        types: list[str] | None = None,
        min_score: float | None = None,
        mode: str | None = None,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
        tags: list[str] | None = None,
        explain: bool | None = None,
        include_weak: bool | None = None,
        include_forgotten: bool | None = None,
    ) -> SearchResponse:
        """Search one agent's memories; the hits are in ``.results``.

        ``limit`` 1-100 (default 10), ``types`` plural or singular names,
        ``min_score`` 0-1, ``mode`` hybrid (default), vector or keyword,
        ``created_after`` inclusive and ``created_before`` exclusive,
        ``tags`` all required, ``explain`` adds each hit's score breakdown,
        ``include_weak`` / ``include_forgotten`` let those through."""
        return await ar.search(
            self,
            agent_id=agent_id,
            query=query,
            limit=limit,
            types=types,
            min_score=min_score,
            mode=mode,
            created_after=created_after,
            created_before=created_before,
            tags=tags,
            explain=explain,
            include_weak=include_weak,
            include_forgotten=include_forgotten,
        )

    async def wait_visible(self, token: str | None = None, *, timeout: float = DEFAULT_VISIBILITY_TIMEOUT) -> None:
        """Return once the server's read models include the write ``token`` names."""
        token = token or self.last_consistency_token
        if not token:
            raise ValueError("no consistency token to wait for")
        deadline = time.monotonic() + timeout
        req = Request(
            "GET", "/agents", params={"limit": 1}, headers={CONSISTENCY_TOKEN_HEADER: token}, idempotent=True
        )
        while True:
            try:
                await self._request(req, retries=0)
                return
            except NotYetConsistentError as err:
                wait = err.retry_after or 1.0
                if time.monotonic() + wait > deadline:
                    raise
                await asyncio.sleep(wait)

    async def openapi(self) -> dict[str, Any]:
        """GET /openapi.json: the OpenAPI 3.1 document of the API (no auth)."""
        doc: dict[str, Any] = await self._request(
            Request("GET", "/openapi.json", authenticated=False, idempotent=True, envelope=False)
        )
        return doc

    async def health(self) -> dict[str, Any]:
        """GET /healthz."""
        data: dict[str, Any] = await self._request(
            Request("GET", "/healthz", authenticated=False, idempotent=True), root=True
        )
        return data

    async def readiness(self) -> dict[str, Any]:
        """GET /readyz."""
        data: dict[str, Any] = await self._request(
            Request("GET", "/readyz", authenticated=False, idempotent=True), root=True
        )
        return data

    async def _request(self, req: Request, *, retries: int | None = None, root: bool = False) -> Any:
        kwargs = self._build(req)
        if root:
            kwargs["url"] = _root(self.base_url) + req.path
        max_retries = self.max_retries if retries is None else retries
        attempt = 0
        while True:
            try:
                resp = await self._http.request(**kwargs, timeout=self.timeout)
            except httpx.TimeoutException as err:
                raise APITimeoutError(f"{req.method} {req.path}: {err}") from err
            except httpx.TransportError as err:
                raise APIConnectionError(f"{req.method} {req.path}: {err}") from err
            wait = self._retry_delay(req, resp, attempt) if attempt < max_retries else None
            if wait is None:
                return self._decode(req, resp)
            attempt += 1
            await asyncio.sleep(wait)

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncEngram:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
