// The resource namespaces of the client, one class per group of routes.
import { PagePromise, pathID, type RequestOptions, type Transport } from "./core.js";
import type * as T from "./types.js";

abstract class Resource {
  constructor(protected readonly t: Transport) {}
}

/** Accounts: register, verify, status (POST /auth/register, /auth/verify; GET /auth/status). */
export class Auth extends Resource {
  /** Sends the verification mail; no credential needed. */
  register(params: { email: string }, options?: RequestOptions): Promise<T.Registration> {
    return this.t.call({ method: "POST", path: "/auth/register", body: params, auth: "none", options });
  }
  /** Spends the mailed token and returns the first API key. */
  verify(params: { token: string }, options?: RequestOptions): Promise<T.Verification> {
    return this.t.call({ method: "POST", path: "/auth/verify", body: params, auth: "body", options });
  }
  /** The credential's user, e-mail and agents. */
  status(options?: RequestOptions): Promise<T.AuthStatus> {
    return this.t.call({ method: "GET", path: "/auth/status", idempotent: true, options });
  }
}

/** Sessions: a session token from an API key (POST /auth/login). */
export class Sessions extends Resource {
  /** Use `client.withOptions({ apiKey: session.token })` to call with it. */
  create(params: { api_key: string }, options?: RequestOptions): Promise<T.Session> {
    return this.t.call({ method: "POST", path: "/auth/login", body: params, auth: "body", options });
  }
}

/** API keys (/auth/keys). */
export class Keys extends Resource {
  list(options?: RequestOptions): Promise<{ keys: T.APIKey[] }> {
    return this.t.call({ method: "GET", path: "/auth/keys", idempotent: true, options });
  }
  create(params: { name: string }, options?: RequestOptions): Promise<T.CreatedAPIKey> {
    return this.t.call({ method: "POST", path: "/auth/keys", body: params, options });
  }
  revoke(keyID: string, options?: RequestOptions): Promise<T.RevokedAPIKey> {
    return this.t.call({ method: "DELETE", path: `/auth/keys/${pathID(keyID)}`, options });
  }
  /** Revokes the key and returns a new one with its name. */
  cycle(keyID: string, options?: RequestOptions): Promise<T.CycledAPIKey> {
    return this.t.call({ method: "POST", path: `/auth/keys/${pathID(keyID)}/cycle`, options });
  }
}

/** Webhooks (/webhooks); check their deliveries with `verifyWebhook`. */
export class Webhooks extends Resource {
  create(params: T.WebhookCreateParams, options?: RequestOptions): Promise<T.CreatedWebhook> {
    return this.t.call({ method: "POST", path: "/webhooks", body: params, options });
  }
  /** The user's webhooks, oldest first, without secrets. */
  list(options?: RequestOptions): Promise<{ webhooks: T.Webhook[] }> {
    return this.t.call({ method: "GET", path: "/webhooks", idempotent: true, options });
  }
  /** Deletes the webhook; its pending deliveries are dropped. */
  delete(webhookID: string, options?: RequestOptions): Promise<T.DeletedWebhook> {
    return this.t.call({ method: "DELETE", path: `/webhooks/${pathID(webhookID)}`, options });
  }
  /** Newest first. `await` for one page; `for await` for every delivery. */
  deliveries(
    webhookID: string,
    params: T.WebhookDeliveryParams = {},
    options?: RequestOptions,
  ): PagePromise<T.WebhookDeliveryPage, T.WebhookDelivery> {
    const { cursor, ...query } = params;
    const path = `/webhooks/${pathID(webhookID)}/deliveries`;
    return new PagePromise(
      (c) => this.t.call({ method: "GET", path, query: { ...query, cursor: c }, idempotent: true, options }),
      (p) => p.deliveries,
      (p) => p.next_cursor ?? undefined,
      cursor,
    );
  }
}

/** The ETag of a memory, for `if_match`. */
export function etag(memory: Pick<T.Memory, "version">): string {
  return `"${memory.version}"`;
}

/** Memories (/memories) with their strength and provenance actions. */
export class Memories extends Resource {
  create(params: T.MemoryCreateParams, options?: RequestOptions): Promise<T.CreatedMemory> {
    return this.t.call({ method: "POST", path: "/memories", body: params, options });
  }
  /** Up to 1,000 memories of one agent, all or none. */
  batch(params: T.MemoryBatchParams, options?: RequestOptions): Promise<{ memories: T.CreatedMemory[] }> {
    return this.t.call({ method: "POST", path: "/memories/batch", body: params, options });
  }
  get(id: string, options?: RequestOptions): Promise<T.Memory> {
    return this.t.call({ method: "GET", path: `/memories/${pathID(id)}`, idempotent: true, options });
  }
  /** `await` for one page; `for await` for every memory. */
  list(params: T.MemoryListParams = {}, options?: RequestOptions): PagePromise<T.MemoryPage, T.Memory> {
    const { cursor, ...query } = params;
    return new PagePromise(
      (c) => this.t.call({ method: "GET", path: "/memories", query: { ...query, cursor: c }, idempotent: true, options }),
      (p) => p.memories,
      (p) => p.next_cursor ?? undefined,
      cursor,
    );
  }
  update(id: string, params: T.MemoryUpdateParams, options?: RequestOptions): Promise<T.Memory> {
    const { if_match, ...body } = params;
    return this.t.call({ method: "PATCH", path: `/memories/${pathID(id)}`, body, ifMatch: if_match, options });
  }
  /** Forgets the memory (recoverable with `recover`). */
  forget(id: string, params: T.ForgetParams = {}, options?: RequestOptions): Promise<T.Forgotten> {
    return this.t.call({ method: "DELETE", path: `/memories/${pathID(id)}`, ifMatch: params.if_match, options });
  }
  /** Deletes the memory's content for good (DELETE ?purge=true). */
  purge(id: string, params: T.ForgetParams = {}, options?: RequestOptions): Promise<T.Purged> {
    return this.t.call({
      method: "DELETE",
      path: `/memories/${pathID(id)}`,
      query: { purge: true },
      ifMatch: params.if_match,
      options,
    });
  }
  recover(id: string, params: T.MemoryActionParams = {}, options?: RequestOptions): Promise<T.Memory> {
    return this.action(id, "recover", undefined, params.if_match, options);
  }
  protect(id: string, params: T.MemoryActionParams = {}, options?: RequestOptions): Promise<T.Memory> {
    return this.action(id, "protect", undefined, params.if_match, options);
  }
  unprotect(id: string, params: T.MemoryActionParams = {}, options?: RequestOptions): Promise<T.Memory> {
    return this.action(id, "unprotect", undefined, params.if_match, options);
  }
  weaken(id: string, params: T.StrengthChangeParams = {}, options?: RequestOptions): Promise<T.Memory> {
    const { if_match, ...body } = params;
    return this.action(id, "weaken", body, if_match, options);
  }
  verify(id: string, params: Omit<T.StrengthChangeParams, "by"> = {}, options?: RequestOptions): Promise<T.Memory> {
    const { if_match, ...body } = params;
    return this.action(id, "verify", body, if_match, options);
  }
  provenance(id: string, params: T.ProvenanceParams = {}, options?: RequestOptions): Promise<T.Provenance> {
    return this.t.call({
      method: "GET",
      path: `/memories/${pathID(id)}/provenance`,
      query: { ...params },
      idempotent: true,
      options,
    });
  }
  private action(id: string, verb: string, body: object | undefined, ifMatch: string | undefined, options?: RequestOptions): Promise<T.Memory> {
    const sent = body && Object.keys(body).length > 0 ? body : undefined;
    return this.t.call({ method: "POST", path: `/memories/${pathID(id)}/${verb}`, body: sent, ifMatch, options });
  }
}

/** Agents (/agents) and each agent's settings, audit, stats and anxiety. */
export class Agents extends Resource {
  /** `await` for one page; `for await` for every agent. */
  list(params: T.AgentListParams = {}, options?: RequestOptions): PagePromise<T.AgentPage, T.Agent> {
    const { cursor, ...query } = params;
    return new PagePromise(
      (c) => this.t.call({ method: "GET", path: "/agents", query: { ...query, cursor: c }, idempotent: true, options }),
      (p) => p.agents,
      (p) => p.next_cursor ?? undefined,
      cursor,
    );
  }
  /** Deletes the agent and every memory of it. */
  delete(agentID: string, options?: RequestOptions): Promise<T.AgentDeleted> {
    return this.t.call({ method: "DELETE", path: `/agents/${pathID(agentID)}`, options });
  }
  settings(agentID: string, options?: RequestOptions): Promise<T.StackSettings> {
    return this.t.call({ method: "GET", path: `/agents/${pathID(agentID)}/settings`, idempotent: true, options });
  }
  updateSettings(agentID: string, patch: T.StackSettingsPatch, options?: RequestOptions): Promise<T.StackSettings> {
    return this.t.call({ method: "PATCH", path: `/agents/${pathID(agentID)}/settings`, body: patch, options });
  }
  /** The agent's audit trail, newest first: `await` for one page; `for await` for every entry. */
  audit(agentID: string, params: T.AuditParams = {}, options?: RequestOptions): PagePromise<T.AuditPage, T.AuditEntry> {
    return auditPages(this.t, `/agents/${pathID(agentID)}/audit`, params, options);
  }
  stats(agentID: string, options?: RequestOptions): Promise<T.Stats> {
    return this.t.call({ method: "GET", path: `/agents/${pathID(agentID)}/stats`, idempotent: true, options });
  }
  anxiety(agentID: string, options?: RequestOptions): Promise<T.AnxietyReport> {
    return this.t.call({ method: "GET", path: `/agents/${pathID(agentID)}/anxiety`, idempotent: true, options });
  }
  /**
   * The agent's export, one parsed line at a time as the server streams
   * it: `{header}` first, then `{event}` lines (the lossless default) or
   * `{memory}` lines (`format: "memories"`).
   */
  async *export(agentID: string, params: T.ExportParams = {}, options?: RequestOptions): AsyncGenerator<T.ExportLine> {
    const resp = await this.t.stream({ method: "GET", path: `/agents/${pathID(agentID)}/export`, query: { ...params }, options });
    if (!resp.body) return;
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of resp.body as unknown as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (line) yield JSON.parse(line) as T.ExportLine;
      }
    }
    const rest = (buffered + decoder.decode()).trim();
    if (rest) yield JSON.parse(rest) as T.ExportLine;
  }
  /**
   * Imports an export (lines as objects or JSON text, from any iterable or
   * async iterable, e.g. `agents.export` of another server or the lines of
   * a file) into the agent, in requests of up to `chunkBytes` each: every
   * request is all or nothing and repeats the header, and importing the
   * same lines again changes nothing. Resolves to the summed counts.
   */
  async import(
    agentID: string,
    lines: Iterable<T.ExportLine | string> | AsyncIterable<T.ExportLine | string>,
    params: T.ImportParams = {},
    options?: RequestOptions,
  ): Promise<T.ImportResult> {
    const limit = params.chunkBytes ?? IMPORT_CHUNK_BYTES;
    const total: T.ImportResult = { format: "", appended: 0, duplicates: 0, skipped: 0, remapped: 0 };
    let header = "";
    let chunk: string[] = [];
    let size = 0;
    const send = async () => {
      const data = header + chunk.join("");
      chunk = [];
      size = header.length;
      const part: T.ImportResult = await this.t.call({
        method: "POST",
        path: `/agents/${pathID(agentID)}/import`,
        content: { type: "application/x-ndjson", data },
        idempotent: true,
        options,
      });
      total.format = part.format;
      total.appended += part.appended;
      total.duplicates += part.duplicates;
      total.skipped += part.skipped;
      total.remapped += part.remapped;
    };
    for await (const line of lines) {
      const text = (typeof line === "string" ? line : JSON.stringify(line)).trim();
      if (!text) continue;
      if (!header && chunk.length === 0 && text.startsWith('{"header"')) {
        header = text + "\n";
        size = header.length;
        continue;
      }
      if (chunk.length > 0 && size + text.length + 1 > limit) await send();
      chunk.push(text + "\n");
      size += text.length + 1;
    }
    if (chunk.length > 0) await send();
    return total;
  }
}

/** The size of one import request: under the server's default body limit (10 MiB) with room to spare. */
const IMPORT_CHUNK_BYTES = 4 << 20;

function auditPages(t: Transport, path: string, params: T.AuditParams, options?: RequestOptions): PagePromise<T.AuditPage, T.AuditEntry> {
  const { before, ...query } = params;
  return new PagePromise(
    (b) => t.call({ method: "GET", path, query: { ...query, before: b }, idempotent: true, options }),
    (p) => p.entries,
    (p) => p.next_before ?? undefined,
    before,
  );
}

/** The account's audit trail across agents (GET /audit). */
export class Audit extends Resource {
  list(params: T.AuditParams = {}, options?: RequestOptions): PagePromise<T.AuditPage, T.AuditEntry> {
    return auditPages(this.t, "/audit", params, options);
  }
}

/** Processing passes, their configuration and the raw entries they consume. */
export class Processing extends Resource {
  get(agentID: string, options?: RequestOptions): Promise<T.ProcessingView> {
    return this.t.call({ method: "GET", path: `/agents/${pathID(agentID)}/processing`, idempotent: true, options });
  }
  update(agentID: string, patch: T.ProcessingPatch, options?: RequestOptions): Promise<T.ProcessingView> {
    return this.t.call({ method: "PATCH", path: `/agents/${pathID(agentID)}/processing`, body: patch, options });
  }
  /** Runs the transitions whose triggers fire (all with `force`, or the one named). */
  run(agentID: string, params: T.ProcessParams = {}, options?: RequestOptions): Promise<T.ProcessResult> {
    return this.t.call({ method: "POST", path: `/agents/${pathID(agentID)}/process`, body: params, options });
  }
  /** Processes until nothing more comes of it. */
  exhaust(agentID: string, params: T.ExhaustParams = {}, options?: RequestOptions): Promise<T.ExhaustResult> {
    return this.t.call({ method: "POST", path: `/agents/${pathID(agentID)}/process/exhaust`, body: params, options });
  }
  rawEntries(agentID: string, params: T.RawEntriesParams = {}, options?: RequestOptions): Promise<T.RawEntriesResult> {
    return this.t.call({
      method: "GET",
      path: `/agents/${pathID(agentID)}/raw`,
      query: { ...params },
      idempotent: true,
      options,
    });
  }
}

/** Suggestions processing made, to accept, reject or dismiss. */
export class Suggestions extends Resource {
  list(agentID: string, params: T.SuggestionListParams = {}, options?: RequestOptions): Promise<T.SuggestionList> {
    return this.t.call({
      method: "GET",
      path: `/agents/${pathID(agentID)}/suggestions`,
      query: { ...params },
      idempotent: true,
      options,
    });
  }
  get(id: string, options?: RequestOptions): Promise<T.Suggestion> {
    return this.t.call({ method: "GET", path: `/suggestions/${pathID(id)}`, idempotent: true, options });
  }
  /** Promotes the suggestion into a memory, optionally edited. */
  accept(id: string, params: T.SuggestionAcceptParams = {}, options?: RequestOptions): Promise<T.Accepted> {
    const body = params.content !== undefined || params.tags !== undefined ? params : undefined;
    return this.t.call({ method: "POST", path: `/suggestions/${pathID(id)}/accept`, body, options });
  }
  reject(id: string, params: T.SuggestionResolveParams = {}, options?: RequestOptions): Promise<T.Suggestion> {
    return this.resolve(id, "reject", params, options);
  }
  dismiss(id: string, params: T.SuggestionResolveParams = {}, options?: RequestOptions): Promise<T.Suggestion> {
    return this.resolve(id, "dismiss", params, options);
  }
  private resolve(id: string, verb: string, params: T.SuggestionResolveParams, options?: RequestOptions): Promise<T.Suggestion> {
    const body = params.reason ? params : undefined;
    return this.t.call({ method: "POST", path: `/suggestions/${pathID(id)}/${verb}`, body, options });
  }
}

/** Embeddings (/embeddings) and their re-embedding jobs. */
export class Embeddings extends Resource {
  readonly jobs: EmbeddingJobs;
  constructor(t: Transport) {
    super(t);
    this.jobs = new EmbeddingJobs(t);
  }
  generate(params: T.EmbeddingGenerateParams, options?: RequestOptions): Promise<T.Embedding> {
    return this.t.call({ method: "POST", path: "/embeddings/generate", body: withModel(params), idempotent: true, options });
  }
  /** Up to 2,048 texts, answered in the same order. */
  batch(params: T.EmbeddingBatchParams, options?: RequestOptions): Promise<T.EmbeddingBatch> {
    return this.t.call({ method: "POST", path: "/embeddings/batch", body: withModel(params), idempotent: true, options });
  }
  /** Re-embeds one memory with its agent's model. */
  reembed(params: T.ReembedParams, options?: RequestOptions): Promise<T.Reembedded> {
    return this.t.call({ method: "POST", path: "/embeddings/reembed", body: params, options });
  }
  /** Starts a job that re-embeds an agent's memories (see `jobs`). */
  bulkReembed(params: T.BulkReembedParams, options?: RequestOptions): Promise<T.JobCreated> {
    return this.t.call({ method: "POST", path: "/embeddings/bulk-reembed", body: params, options });
  }
  /** The agent's memories nearest to a vector. */
  similar(params: T.SimilarParams, options?: RequestOptions): Promise<T.SimilarResponse> {
    return this.t.call({ method: "POST", path: "/embeddings/similar", body: params, idempotent: true, options });
  }
  models(options?: RequestOptions): Promise<T.ModelCatalog> {
    return this.t.call({ method: "GET", path: "/embeddings/models", idempotent: true, options });
  }
  /** POST /v1/embeddings in OpenAI's request and response shape. */
  createOpenAI(params: T.OpenAIEmbeddingParams, options?: RequestOptions): Promise<T.OpenAIEmbeddingResponse> {
    return this.t.call({ method: "POST", path: "/embeddings", body: params, idempotent: true, raw: true, options });
  }
}

function withModel<P extends { model?: string }>(params: P): P {
  return { ...params, model: params.model || "default" };
}

/** Bulk re-embedding jobs (/embeddings/jobs). */
export class EmbeddingJobs extends Resource {
  get(jobID: string, options?: RequestOptions): Promise<T.Job> {
    return this.t.call({ method: "GET", path: `/embeddings/jobs/${pathID(jobID)}`, idempotent: true, options });
  }
  cancel(jobID: string, options?: RequestOptions): Promise<T.Job> {
    return this.t.call({ method: "POST", path: `/embeddings/jobs/${pathID(jobID)}/cancel`, options });
  }
}

/** Whether a job has ended (completed, failed or cancelled). */
export function jobDone(job: Pick<T.Job, "status">): boolean {
  return job.status === "completed" || job.status === "failed" || job.status === "cancelled";
}

/** An agent's event log between nodes (/sync/events). */
export class Sync extends Resource {
  /**
   * The agent's events after `after` (a count of the stream's events):
   * `await` for one page; `for await` for every event up to the head.
   */
  pull(params: T.SyncPullParams, options?: RequestOptions): PagePromise<T.SyncPage, T.SyncEvent> {
    const { after, ...query } = params;
    return new PagePromise(
      (a) => this.t.call({ method: "GET", path: "/sync/events", query: { ...query, after: a ?? 0 }, idempotent: true, options }),
      (p) => p.events,
      (p) => (p.events.length > 0 && p.next < p.head ? String(p.next) : undefined),
      after === undefined ? undefined : String(after),
    );
  }
  /** Appends events; ones already present count as duplicates. */
  push(params: T.SyncPushParams, options?: RequestOptions): Promise<T.SyncPushResult> {
    return this.t.call({ method: "POST", path: "/sync/events", body: params, options });
  }
}

/** The embedding models in OpenAI's shape (GET /v1/models), for tools that list models first. */
export class Models extends Resource {
  list(options?: RequestOptions): Promise<T.OpenAIModelList> {
    return this.t.call({ method: "GET", path: "/models", idempotent: true, raw: true, options });
  }

  /** One model by id (GET /v1/models/{id}); an unknown one is 404 `model_not_found`. */
  retrieve(id: string, options?: RequestOptions): Promise<T.OpenAIModel> {
    return this.t.call({ method: "GET", path: `/models/${pathID(id)}`, idempotent: true, raw: true, options });
  }
}
