"""Typed models of the API's resources, as frozen-free dataclasses.

Dataclasses rather than pydantic: the SDK's only runtime dependency stays
httpx, and the server validates every request itself (its 400 names the
field), so client-side validation would only duplicate it. Each model is
built by :func:`from_dict`, which converts nested models, lists and RFC 3339
timestamps and ignores fields it does not know, so a newer server never
breaks an older SDK; ``to_dict()`` returns the whole JSON object.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, Union

T = TypeVar("T")

_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_time(value: str) -> datetime:
    """Parse an RFC 3339 timestamp (nanoseconds truncated to microseconds)."""
    text = _FRACTION.sub(r"\1", value.replace("Z", "+00:00"))
    return datetime.fromisoformat(text)


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _convert(inner[0], value) if len(inner) == 1 else value
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_convert(item, v) for v in value]
    if origin is dict:
        _, item = typing.get_args(tp)
        return {k: _convert(item, v) for k, v in value.items()}
    if tp is datetime:
        return parse_time(value)
    if tp is float and isinstance(value, int):
        return float(value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return from_dict(tp, value)
    return value


_hints: dict[type, dict[str, Any]] = {}


def from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Build model cls from a JSON object."""
    hints = _hints.get(cls)
    if hints is None:
        hints = typing.get_type_hints(cls)
        _hints[cls] = hints
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in data:
            kwargs[f.name] = _convert(hints[f.name], data[f.name])
    obj = cls(**kwargs)
    object.__setattr__(obj, "_json", data)
    return obj


class Model:
    """Base of every model; :meth:`to_dict` returns the JSON object it was
    built from, with any field this SDK does not know."""

    _json: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] | None = getattr(self, "_json", None)
        return data if data is not None else dataclasses.asdict(self)  # type: ignore[call-overload]


# Accounts, keys, sessions


@dataclass
class Registration(Model):
    user_id: str = ""
    message: str = ""


@dataclass
class Verification(Model):
    user_id: str = ""
    verified: bool = False
    api_key: str = ""


@dataclass
class Session(Model):
    user_id: str = ""
    token: str = ""
    expires_at: datetime | None = None


@dataclass
class AuthStatus(Model):
    authenticated: bool = False
    user_id: str = ""
    email: str = ""
    created_at: datetime | None = None
    agents: list[str] = field(default_factory=list)


@dataclass
class APIKey(Model):
    id: str = ""
    name: str = ""
    prefix: str = ""
    created_at: datetime | None = None
    last_used_at: datetime | None = None
    is_active: bool = False


@dataclass
class CreatedAPIKey(Model):
    id: str = ""
    name: str = ""
    key: str = ""
    prefix: str = ""
    created_at: datetime | None = None


@dataclass
class RevokedAPIKey(Model):
    id: str = ""
    revoked: bool = False
    revoked_at: datetime | None = None


@dataclass
class CycledAPIKey(Model):
    old_key_id: str = ""
    old_key_revoked: bool = False
    new_key_id: str = ""
    new_key: str = ""
    new_key_prefix: str = ""


# Webhooks


@dataclass
class Webhook(Model):
    id: str = ""
    url: str = ""
    events: list[str] = field(default_factory=list)
    created_at: datetime | None = None


@dataclass
class CreatedWebhook(Model):
    id: str = ""
    url: str = ""
    events: list[str] = field(default_factory=list)
    secret: str = ""
    created_at: datetime | None = None


@dataclass
class DeletedWebhook(Model):
    id: str = ""
    deleted: bool = False


@dataclass
class WebhookDelivery(Model):
    id: str = ""
    webhook_id: str = ""
    event: str = ""
    event_id: str = ""
    status: str = ""
    attempts: int = 0
    created_at: datetime | None = None
    next_attempt_at: datetime | None = None
    last_status_code: int = 0
    last_error: str = ""
    delivered_at: datetime | None = None


@dataclass
class WebhookDeliveryPage(Model):
    deliveries: list[WebhookDelivery] = field(default_factory=list)
    next_cursor: str | None = None


# Memories and agents


@dataclass
class EmbeddingState(Model):
    model: str = ""
    dimensions: int = 0
    status: str = ""  # embedded, pending or not_indexed


@dataclass
class CreatedMemory(Model):
    type: str = ""
    id: str = ""
    created_at: datetime | None = None
    embedding: EmbeddingState | None = None


@dataclass
class Memory(Model):
    id: str = ""
    agent_id: str = ""
    type: str = ""
    content: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    derived_from: list[str] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    forgotten: bool = False
    forgotten_at: datetime | None = None
    embedding: EmbeddingState | None = None
    strength: float = 0.0
    tier: str = ""
    is_protected: bool = False
    verification_count: int = 0
    last_verified_at: datetime | None = None
    version: int = 0

    @property
    def etag(self) -> str:
        """The memory's entity tag, as ``if_match`` takes it."""
        return f'"{self.version}"'


@dataclass
class MemoryPage(Model):
    memories: list[Memory] = field(default_factory=list)
    next_cursor: str | None = None


@dataclass
class Forgotten(Model):
    id: str = ""
    forgotten: bool = False
    forgotten_at: datetime | None = None
    purged: bool = False


@dataclass
class Agent(Model):
    agent_id: str = ""
    embedding_model: str = ""
    dimensions: int = 0
    created_at: datetime | None = None
    memory_count: int = 0
    stored_memories: int = 0
    text_bytes: int = 0


@dataclass
class AgentPage(Model):
    agents: list[Agent] = field(default_factory=list)
    next_cursor: str | None = None


# Search


@dataclass
class SearchExplain(Model):
    vector_score: float | None = None
    keyword_score: float | None = None
    fused_score: float = 0.0
    vector_rank: int | None = None
    keyword_rank: int | None = None


@dataclass
class SearchResult(Model):
    type: str = ""
    id: str = ""
    score: float = 0.0
    content: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    strength: float = 0.0
    forgotten: bool = False
    explain: SearchExplain | None = None


@dataclass
class SearchResponse(Model):
    results: list[SearchResult] = field(default_factory=list)
    total: int = 0
    query_time_ms: float = 0.0
    query_time_us: int | None = None
    degraded: str | None = None


# Embeddings


@dataclass
class Embedding(Model):
    embedding: list[float] = field(default_factory=list)
    dimensions: int = 0
    model: str = ""
    tokens_used: int = 0


@dataclass
class EmbeddingBatch(Model):
    embeddings: list[list[float]] = field(default_factory=list)
    dimensions: int = 0
    model: str = ""
    total_tokens_used: int = 0


@dataclass
class Reembedded(Model):
    memory_type: str = ""
    memory_id: str = ""
    previous_model: str | None = None
    new_model: str = ""
    dimensions: int = 0
    reembedded_at: datetime | None = None


@dataclass
class JobCreated(Model):
    job_id: str = ""
    status: str = ""
    agent_id: str = ""
    model: str = ""
    estimated_memories: int = 0
    estimated_time_seconds: int = 0


@dataclass
class JobError(Model):
    at: datetime | None = None
    message: str = ""
    memory_id: str = ""


@dataclass
class Job(Model):
    job_id: str = ""
    status: str = ""  # queued, running, completed, failed, cancelled
    agent_id: str = ""
    model: str = ""
    dimensions: int = 0
    types: list[str] = field(default_factory=list)
    estimated_memories: int = 0
    memories_processed: int = 0
    memories_total: int = 0
    errors: list[JobError] = field(default_factory=list)
    failure_reason: str = ""
    queued_at: datetime | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None
    ended_at: datetime | None = None

    @property
    def done(self) -> bool:
        return self.status in ("completed", "failed", "cancelled")


@dataclass
class SimilarResult(Model):
    type: str = ""
    id: str = ""
    score: float = 0.0
    content: dict[str, Any] = field(default_factory=dict)


@dataclass
class EmbeddingModel(Model):
    name: str = ""
    provider: str = ""
    dimensions: int = 0
    flexible_dimensions: bool = False
    quality: str = ""
    speed: str = ""
    cost: str = ""
    description: str = ""
    available: bool = False
    default: bool = False


@dataclass
class ModelCatalog(Model):
    models: list[EmbeddingModel] = field(default_factory=list)
    default_model: str = ""


@dataclass
class OpenAIEmbedding(Model):
    object: str = ""
    index: int = 0
    embedding: Any = None  # list of floats, or a base64 string


@dataclass
class OpenAIEmbeddingResponse(Model):
    object: str = ""
    data: list[OpenAIEmbedding] = field(default_factory=list)
    model: str = ""
    usage: dict[str, int] = field(default_factory=dict)


@dataclass
class OpenAIModel(Model):
    """One entry of GET /v1/models, in OpenAI's shape."""

    id: str = ""
    object: str = "model"
    created: int = 0
    owned_by: str = ""


# Sync


@dataclass
class SyncEvent(Model):
    id: str = ""
    type: str = ""
    time: str = ""  # kept as sent: pushed back byte for byte
    payload: Any = None


@dataclass
class SyncPage(Model):
    events: list[SyncEvent] = field(default_factory=list)
    next: int = 0
    head: int = 0


@dataclass
class SyncPushResult(Model):
    appended: int = 0
    duplicates: int = 0
    skipped: int = 0
    head: int = 0


@dataclass
class ImportResult(Model):
    format: str = ""
    appended: int = 0
    duplicates: int = 0
    skipped: int = 0
    remapped: int = 0


# Cognition


@dataclass
class LintRules(Model):
    enabled: bool = False
    min_length: int = 0
    max_length: int = 0
    check_fragments: bool = False
    check_prefix_artifacts: bool = False
    check_templated_noise: bool = False


@dataclass
class PromotionGates(Model):
    belief_min_evidence: int = 0
    belief_min_confidence: float = 0.0
    value_min_evidence: int = 0
    value_requires_protection: bool = False


@dataclass
class StackSettings(Model):
    agent_id: str = ""
    stack_state: str = ""
    enforce_provenance: bool = False
    lazy_decay: bool = False
    lint_rules: LintRules | None = None
    promotion_gates: PromotionGates | None = None
    updated_at: datetime | None = None


@dataclass
class ProvenanceNode(Model):
    type: str = ""
    id: str = ""
    depth: int = 0
    cycle: bool = False
    truncated: bool = False
    nodes: list[ProvenanceNode] = field(default_factory=list)


@dataclass
class Provenance(Model):
    id: str = ""
    type: str = ""
    direction: str = ""
    depth: int = 0
    up: ProvenanceNode | None = None
    down: ProvenanceNode | None = None


@dataclass
class AuditEntry(Model):
    id: str = ""
    at: datetime | None = None
    operation: str = ""
    agent_id: str = ""
    memory_type: str = ""
    memory_id: str = ""
    actor: str = ""
    # the interface the change came in through: api, mcp, cli, sync (copied in
    # by a sync), import (copied in by an agent import) or system; "" on
    # entries older than sources
    source: str = ""
    details: Any = None


@dataclass
class AuditPage(Model):
    entries: list[AuditEntry] = field(default_factory=list)
    next_before: str | None = None


@dataclass
class Stats(Model):
    agent_id: str = ""
    total: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    forgotten: int = 0
    forgotten_by_type: dict[str, int] = field(default_factory=dict)
    weak: int = 0
    raw: dict[str, Any] = field(default_factory=dict)
    suggestions: dict[str, int] = field(default_factory=dict)


# Processing and suggestions


@dataclass
class Consumed(Model):
    id: str = ""
    into: list[str] = field(default_factory=list)


@dataclass
class Pass(Model):
    pass_id: str = ""
    transition: str = ""
    model: str = ""
    forced: bool = False
    auto_promote: bool = False
    at: datetime | None = None
    skipped: bool = False
    skip_reason: str = ""
    skip_detail: str = ""
    inference_blocked: bool = False
    source_count: int = 0
    consumed: list[Consumed] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    deduplicated: int = 0
    gate_blocked: int = 0
    gate_details: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # "type:id" of items an earlier attempt of the pass stored and a purge removed
    # since: not written again, their sources consumed (empty when none).
    purged: list[str] = field(default_factory=list)


@dataclass
class ExhaustCycle(Model):
    cycle: int = 0
    intensity: str = ""
    sources: int = 0
    promotions: int = 0
    suggestions: int = 0
    errors: int = 0
    inference_blocked: bool = False
    passes: list[Pass] = field(default_factory=list)


@dataclass
class CycleFailure(Model):
    """Why an exhaust cycle after the first failed, in the failure envelope's shape."""

    code: str = ""
    message: str = ""
    request_id: str = ""
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class ExhaustResult(Model):
    cycles_completed: int = 0
    total_promotions: int = 0
    total_suggestions: int = 0
    converged: bool = False
    # "converged", "inference_unavailable", "max_cycles", "concurrent_processing"
    # (another request or node processed the agent after the first cycle) or
    # "cycle_failed" (a cycle after the first failed: error says why). Either way
    # the cycles listed are stored.
    convergence_reason: str = ""
    auto_promote: bool = False
    cycles: list[ExhaustCycle] = field(default_factory=list)
    # With convergence_reason "cycle_failed": the failing cycle's error.
    error: CycleFailure | None = None


@dataclass
class Trigger(Model):
    transition: str = ""
    unprocessed: int = 0
    arousal_sum: float = 0.0
    oldest_hours: float = 0.0
    fires: bool = False
    reason: str = ""


@dataclass
class ProcessingView(Model):
    config: dict[str, Any] = field(default_factory=dict)
    processor: dict[str, Any] = field(default_factory=dict)
    triggers: list[Trigger] = field(default_factory=list)
    runs: list[Pass] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass
class RawEntry(Memory):
    processed: bool = False
    processed_into: list[str] = field(default_factory=list)


@dataclass
class Suggestion(Model):
    id: str = ""
    agent_id: str = ""
    transition: str = ""
    memory_type: str = ""
    content: Any = None
    confidence: float = 0.0
    sources: list[str] = field(default_factory=list)
    status: str = ""
    created_at: datetime | None = None
    expires_at: datetime | None = None
    resolved_at: datetime | None = None
    resolution_reason: str = ""
    promoted_to: str = ""


@dataclass
class Accepted(Model):
    suggestion: Suggestion | None = None
    memory: CreatedMemory | None = None


@dataclass
class AnxietyDimension(Model):
    score: int = 0
    confidence: float = 0.0
    raw_value: float = 0.0
    detail: str = ""
    weight: float = 0.0


@dataclass
class AnxietyReport(Model):
    overall_score: int = 0
    overall_level: str = ""
    overall_confidence: float = 0.0
    previous_level: dict[str, Any] | None = None
    hysteresis_level: str = ""
    dimensions: dict[str, AnxietyDimension] = field(default_factory=dict)
    recommendations: list[dict[str, Any]] = field(default_factory=list)
    computed_at: datetime | None = None


__all__ = [
    "Registration",
    "Verification",
    "Session",
    "AuthStatus",
    "APIKey",
    "CreatedAPIKey",
    "RevokedAPIKey",
    "CycledAPIKey",
    "EmbeddingState",
    "CreatedMemory",
    "Memory",
    "MemoryPage",
    "Forgotten",
    "Agent",
    "AgentPage",
    "SearchExplain",
    "SearchResult",
    "SearchResponse",
    "Embedding",
    "EmbeddingBatch",
    "Reembedded",
    "JobCreated",
    "JobError",
    "Job",
    "SimilarResult",
    "EmbeddingModel",
    "ModelCatalog",
    "OpenAIEmbedding",
    "OpenAIEmbeddingResponse",
    "OpenAIModel",
    "SyncEvent",
    "SyncPage",
    "SyncPushResult",
    "ImportResult",
    "LintRules",
    "PromotionGates",
    "StackSettings",
    "ProvenanceNode",
    "Provenance",
    "AuditEntry",
    "AuditPage",
    "Stats",
    "Consumed",
    "Pass",
    "ExhaustCycle",
    "ExhaustResult",
    "Trigger",
    "ProcessingView",
    "RawEntry",
    "Suggestion",
    "Accepted",
    "AnxietyDimension",
    "AnxietyReport",
    "parse_time",
]
