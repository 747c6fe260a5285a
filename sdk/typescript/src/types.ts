// The API's request and response bodies, spelled as on the wire
// (snake_case, RFC 3339 strings for times), as the OpenAI and Anthropic
// SDKs do: what docs/api.md and the OpenAPI document say is what a
// program reads here.

/** Memory type names: singular, plural and short forms are accepted alike. */
export type MemoryType =
  | "episode" | "belief" | "note" | "value" | "goal" | "playbook" | "raw_entry" | "relationship" | "drive"
  | "episodes" | "beliefs" | "notes" | "agent_values" | "goals" | "playbooks" | "raw_entries" | "relationships" | "drives"
  | (string & {});

// ---- accounts

export interface Registration { user_id: string; message: string }
export interface Verification { user_id: string; verified: boolean; api_key: string }
export interface Session { user_id: string; token: string; expires_at: string }
export interface AuthStatus {
  authenticated: boolean;
  user_id: string;
  email: string;
  created_at: string;
  agents: string[];
}
export interface APIKey {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  is_active: boolean;
}
export interface CreatedAPIKey { id: string; name: string; key: string; prefix: string; created_at: string }
export interface RevokedAPIKey { id: string; revoked: boolean; revoked_at: string }
export interface CycledAPIKey {
  old_key_id: string;
  old_key_revoked: boolean;
  new_key_id: string;
  new_key: string;
  new_key_prefix: string;
}

/** The events a webhook may subscribe to. */
export type WebhookEvent =
  | "memory.created"
  | "memory.updated"
  | "memory.forgotten"
  | "suggestion.created"
  | "job.completed"
  | "key.revoked";
export interface Webhook { id: string; url: string; events: WebhookEvent[]; created_at: string }
/** A new webhook: `secret` signs its deliveries and is shown only here. */
export interface CreatedWebhook extends Webhook { secret: string }
export interface WebhookCreateParams { url: string; events: WebhookEvent[] }
export interface DeletedWebhook { id: string; deleted: boolean }
export interface WebhookDelivery {
  /** Also the Engram-Delivery header: the same on every attempt. */
  id: string;
  webhook_id: string;
  event: WebhookEvent;
  event_id: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  created_at: string;
  next_attempt_at: string | null;
  /** The receiver's last HTTP status; 0 when none came. */
  last_status_code: number;
  last_error: string;
  delivered_at: string | null;
}
export interface WebhookDeliveryPage { deliveries: WebhookDelivery[]; next_cursor: string | null }
export interface WebhookDeliveryParams { limit?: number; cursor?: string }

// ---- content of the common memory types

export interface RawEntryContent { content: string; source?: "cli" | "mcp" | "sdk" | "import"; processed?: boolean }
export interface NoteContent { content: string; note_type?: string; speaker?: string; reason?: string }
export interface BeliefContent { statement: string; belief_type?: string; confidence?: number; scope?: string }
export interface EpisodeContent {
  objective: string;
  outcome: string;
  outcome_type?: string;
  lessons?: string[];
  emotional_valence?: number;
  emotional_arousal?: number;
  confidence?: number;
}
/** Any memory's content: the type's fields (see docs/api.md). */
export type MemoryContent = RawEntryContent | NoteContent | BeliefContent | EpisodeContent | Record<string, unknown>;

// ---- memories

export interface EmbeddingState { model: string; dimensions: number; status: "embedded" | "pending" | "not_indexed" | (string & {}) }

export interface MemoryCreateParams {
  agent_id: string;
  type: MemoryType;
  content: MemoryContent;
  tags?: string[];
  created_at?: string;
  /** ["type:id", ...] */
  derived_from?: string[];
}
export type BatchMemory = Omit<MemoryCreateParams, "agent_id">;
export interface MemoryBatchParams { agent_id: string; memories: BatchMemory[] }

export interface CreatedMemory { type: string; id: string; created_at: string; embedding: EmbeddingState }

export interface Memory {
  id: string;
  agent_id: string;
  type: string;
  content: Record<string, unknown>;
  tags: string[];
  derived_from: string[];
  created_at: string;
  updated_at: string;
  forgotten: boolean;
  forgotten_at: string | null;
  embedding: EmbeddingState;
  strength: number;
  tier: string;
  is_protected: boolean;
  verification_count: number;
  last_verified_at: string | null;
  /** The ETag of the memory is `"<version>"`; see `etag()`. */
  version: number;
}

/** next_cursor is null on the last page. */
export interface MemoryPage { memories: Memory[]; next_cursor: string | null }
export interface MemoryListParams {
  agent_id?: string;
  /** plural or singular; comma-separated for several */
  type?: string;
  limit?: number;
  cursor?: string;
  include_forgotten?: boolean;
}
export interface MemoryUpdateParams {
  content?: MemoryContent;
  tags?: string[];
  /** The If-Match header: a memory's ETag (`etag(memory)`) the update requires. */
  if_match?: string;
}
export interface Forgotten { id: string; forgotten: boolean; forgotten_at: string | null }
export interface Purged { id: string; purged: true }
export interface AgentDeleted { agent_id: string; deleted: true }
export interface ForgetParams { if_match?: string }

export interface Agent {
  agent_id: string;
  embedding_model: string;
  dimensions: number;
  created_at: string;
  memory_count: number;
  stored_memories: number;
  text_bytes: number;
}
export interface AgentPage { agents: Agent[]; next_cursor: string | null }
export interface AgentListParams { limit?: number; cursor?: string }

// ---- search

export interface SearchParams {
  agent_id: string;
  query: string;
  limit?: number;
  types?: MemoryType[];
  min_score?: number;
  mode?: "hybrid" | "vector" | "keyword";
  created_after?: string;
  created_before?: string;
  tags?: string[];
  explain?: boolean;
  include_weak?: boolean;
  include_forgotten?: boolean;
}
export interface SearchExplain {
  vector_score: number | null;
  keyword_score: number | null;
  fused_score: number;
  vector_rank: number | null;
  keyword_rank: number | null;
}
export interface SearchResult {
  type: string;
  id: string;
  /** in [0, 1], higher is better */
  score: number;
  content: Record<string, unknown>;
  created_at: string;
  strength: number;
  forgotten: boolean;
  explain?: SearchExplain;
}
export interface SearchResponse {
  results: SearchResult[];
  total: number;
  query_time_ms: number;
  query_time_us?: number;
  degraded?: string;
}

// ---- embeddings

export interface Embedding { embedding: number[]; dimensions: number; model: string; tokens_used: number }
export interface EmbeddingBatch { embeddings: number[][]; dimensions: number; model: string; total_tokens_used: number }
export interface EmbeddingGenerateParams { text: string; model?: string }
export interface EmbeddingBatchParams { texts: string[]; model?: string }
export interface ReembedParams { agent_id: string; memory_type: MemoryType; memory_id: string }
export interface Reembedded {
  memory_type: string;
  memory_id: string;
  previous_model: string;
  new_model: string;
  dimensions: number;
  reembedded_at: string;
}
export interface BulkReembedParams { agent_id: string; types?: MemoryType[]; model?: string }
export interface JobCreated {
  job_id: string;
  status: string;
  agent_id: string;
  model: string;
  estimated_memories: number;
  estimated_time_seconds: number;
}
export interface JobError { at: string; message: string; memory_id?: string }
export interface Job {
  job_id: string;
  status: "queued" | "running" | "completed" | "failed" | "cancelled" | (string & {});
  agent_id: string;
  model: string;
  dimensions: number;
  types: string[];
  estimated_memories: number;
  memories_processed: number;
  memories_total: number;
  errors: JobError[];
  failure_reason: string;
  queued_at: string;
  started_at: string | null;
  completed_at: string | null;
  ended_at: string | null;
}
export interface SimilarParams {
  agent_id: string;
  embedding: number[];
  limit?: number;
  min_score?: number;
  types?: MemoryType[];
}
export interface SimilarResult { type: string; id: string; score: number; content: Record<string, unknown> }
export interface SimilarResponse { results: SimilarResult[] }
export interface EmbeddingModel {
  name: string;
  provider: string;
  dimensions: number;
  flexible_dimensions: boolean;
  quality: string;
  speed: string;
  cost: string;
  description: string;
  available: boolean;
  default: boolean;
}
export interface ModelCatalog { models: EmbeddingModel[]; default_model: string }

/** POST /v1/embeddings in OpenAI's shape. */
export interface OpenAIEmbeddingParams {
  input: string | string[];
  model: string;
  dimensions?: number;
  encoding_format?: "float" | "base64";
}
export interface OpenAIEmbeddingResponse {
  object: "list";
  data: { object: "embedding"; index: number; embedding: number[] | string }[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** GET /v1/models in OpenAI's shape. */
export interface OpenAIModel { id: string; object: "model"; created: number; owned_by: string }
export interface OpenAIModelList { object: "list"; data: OpenAIModel[] }

// ---- sync

export interface SyncEvent { id: string; type: string; time: string; payload: unknown }
export interface SyncPage { events: SyncEvent[]; next: number; head: number }
export interface SyncPullParams { agent_id: string; after?: number; limit?: number }
export interface SyncPushParams { agent_id: string; events: SyncEvent[] }
export interface SyncPushResult { appended: number; duplicates: number; skipped: number; head: number }

/** The first line of an export. */
export interface ExportHeader { format: "events" | "memories"; version: number; agent_id: string; origin: string; exported_at: string }
/** One line of an export: exactly one field is set. */
export interface ExportLine { header?: ExportHeader; event?: SyncEvent; memory?: Memory }
export interface ExportParams { format?: "events" | "memories" }
export interface ImportParams {
  /** The most bytes one request carries (default 4 MiB). */
  chunkBytes?: number;
}
export interface ImportResult { format: string; appended: number; duplicates: number; skipped: number; remapped: number }

// ---- cognition: settings, provenance, strength, audit, stats

export interface LintRules {
  enabled: boolean;
  min_length: number;
  max_length: number;
  check_fragments: boolean;
  check_prefix_artifacts: boolean;
  check_templated_noise: boolean;
}
export interface PromotionGates {
  belief_min_evidence: number;
  belief_min_confidence: number;
  value_min_evidence: number;
  value_requires_protection: boolean;
}
export interface StackSettings {
  agent_id: string;
  stack_state: "initializing" | "active" | "maintenance" | (string & {});
  enforce_provenance: boolean;
  lazy_decay: boolean;
  lint_rules: LintRules;
  promotion_gates: PromotionGates;
  updated_at: string | null;
}
export interface StackSettingsPatch {
  stack_state?: string;
  enforce_provenance?: boolean;
  lazy_decay?: boolean;
  lint_rules?: Partial<LintRules>;
  promotion_gates?: Partial<PromotionGates>;
}
export interface ProvenanceNode {
  type: string;
  id: string;
  depth: number;
  /** present (true) when the node repeats one of its ancestors */
  cycle?: boolean;
  /** present (true) when the depth limit cut the tree below the node */
  truncated?: boolean;
  nodes: ProvenanceNode[];
}
export interface Provenance {
  id: string;
  type: string;
  direction: "up" | "down" | "both";
  depth: number;
  up: ProvenanceNode | null;
  down: ProvenanceNode | null;
}
export interface ProvenanceParams { direction?: "up" | "down" | "both"; depth?: number }
export interface MemoryActionParams { if_match?: string }
export interface StrengthChangeParams {
  /** weaken only: (0, 1], default 0.1 */
  by?: number;
  reason?: string;
  if_match?: string;
}
export interface AuditEntry {
  id: string;
  at: string;
  operation: string;
  /** absent on the account's own entries (register, keys, …) */
  agent_id?: string;
  memory_type: string;
  memory_id: string;
  actor: string;
  /** the interface the change came in through; absent on entries older than sources */
  source?: EventSource;
  details: unknown;
}
/**
 * The interface a change came in through: api (REST, the SDKs, the dashboard), mcp (an MCP
 * tool), cli (the command line on a local stack), sync (events a sync copied into the log),
 * import (events an agent import copied into the log) or system (background workers).
 */
export type EventSource = "api" | "mcp" | "cli" | "sync" | "import" | "system";
export interface AuditPage { entries: AuditEntry[]; next_before: string | null }
export interface AuditParams { limit?: number; before?: string }
export interface Stats {
  agent_id: string;
  total: number;
  by_type: Record<string, number>;
  forgotten: number;
  forgotten_by_type: Record<string, number>;
  weak: number;
  raw: { processed: number; unprocessed: number };
  suggestions: Record<string, number>;
}

// ---- processing and suggestions

export interface Consumed { id: string; into: string[] }
export interface Pass {
  pass_id: string;
  transition: string;
  model: string;
  forced: boolean;
  auto_promote: boolean;
  at: string;
  skipped: boolean;
  /** present when the pass was skipped */
  skip_reason?: string;
  skip_detail?: string;
  inference_blocked: boolean;
  source_count: number;
  consumed: Consumed[];
  suggestions: string[];
  created: string[];
  deduplicated: number;
  gate_blocked: number;
  gate_details: string[];
  errors: string[];
  /** "type:id" of items an earlier attempt of the pass stored and a purge removed since: not written again, their sources consumed. Present only when not empty. */
  purged?: string[];
}
export interface ProcessParams { force?: boolean; transition?: string }
export interface ProcessResult { passes: Pass[] }
export interface ExhaustParams { max_cycles?: number; auto_promote?: boolean }
export interface ExhaustCycle {
  cycle: number;
  intensity: "light" | "medium" | "heavy" | (string & {});
  sources: number;
  promotions: number;
  suggestions: number;
  errors: number;
  inference_blocked: boolean;
  passes: Pass[];
}
export interface ExhaustResult {
  cycles_completed: number;
  total_promotions: number;
  total_suggestions: number;
  converged: boolean;
  /** "converged", "inference_unavailable", "max_cycles", "concurrent_processing" (another request or node processed the agent after the first cycle) or "cycle_failed" (a cycle after the first failed: `error` says why). Either way the cycles listed are stored. */
  convergence_reason: string;
  auto_promote: boolean;
  cycles: ExhaustCycle[];
  /** With convergence_reason "cycle_failed": the failing cycle's error, in the failure envelope's shape. */
  error?: CycleFailure;
}
/** Why an exhaust cycle after the first failed. */
export interface CycleFailure { code: string; message: string; request_id: string; details?: Record<string, unknown> }
export interface Layer {
  enabled: boolean;
  model: string;
  quantity_threshold: number;
  valence_threshold: number;
  time_threshold_hours: number;
  batch_size: number;
  max_passes_per_day: number;
}
export interface Trigger {
  transition: string;
  unprocessed: number;
  arousal_sum: number;
  oldest_hours: number;
  fires: boolean;
  reason: string;
}
export interface ProcessingView {
  config: { layers: Record<string, Layer>; auto_promote: boolean; suggestion_expiry_hours: number };
  processor: { model: string; inference: boolean };
  triggers: Trigger[];
  runs: Pass[];
  raw: {
    processed: number;
    unprocessed: number;
    entries: { id: string; created_at: string; processed: boolean; processed_into: string[] }[];
  };
}
export interface ProcessingPatch {
  auto_promote?: boolean;
  suggestion_expiry_hours?: number;
  layers?: Record<string, Partial<Layer>>;
}
export interface RawEntry extends Memory { processed: boolean; processed_into: string[] }
export interface RawEntriesParams { processed?: boolean; limit?: number }
export interface RawEntriesResult { raw_entries: RawEntry[] }
export interface Suggestion {
  id: string;
  agent_id: string;
  transition: string;
  memory_type: string;
  content: Record<string, unknown>;
  confidence: number;
  sources: string[];
  status: "pending" | "promoted" | "rejected" | "dismissed" | "expired" | (string & {});
  created_at: string;
  expires_at: string;
  resolved_at: string | null;
  resolution_reason: string;
  promoted_to: string;
}
export interface SuggestionListParams { status?: string; limit?: number }
export interface SuggestionList { suggestions: Suggestion[] }
export interface SuggestionAcceptParams { content?: MemoryContent; tags?: string[] }
export interface SuggestionResolveParams { reason?: string }
export interface Accepted { suggestion: Suggestion; memory: CreatedMemory }
export interface AnxietyDimension { score: number; confidence: number; raw_value: number; detail: string; weight: number }
export interface AnxietyReport {
  overall_score: number;
  overall_level: string;
  overall_confidence: number;
  previous_level: { level: string; at: string } | null;
  hysteresis_level: string;
  dimensions: Record<string, AnxietyDimension>;
  /** dimension is absent on the overall recommendation */
  recommendations: { priority: "low" | "medium" | "high" | "critical"; dimension?: string; description: string }[];
  computed_at: string;
}

// ---- health

export interface Health { status: string }
export interface Readiness {
  status: string;
  backends: Record<string, { status: string; error?: string }>;
  projections?: unknown;
}
