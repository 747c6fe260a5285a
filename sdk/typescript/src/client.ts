// The client object: configuration, resource namespaces, search, the
// consistency token and health.
import { Transport, anySignal, isNotYetConsistent, sleep, type RequestOptions } from "./core.js";
import { EngramError } from "./errors.js";
import { Agents, Audit, Auth, Embeddings, Keys, Memories, Models, Processing, Sessions, Suggestions, Sync, Webhooks } from "./resources.js";
import type { Health, Readiness, SearchParams, SearchResponse } from "./types.js";
import { VERSION } from "./version.js";

/** The server's default address (the /v1 is part of it). */
export const DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1";

export interface ClientOptions {
  /** API key or session token; default: the ENGRAM_API_KEY environment variable. */
  apiKey?: string | undefined;
  /** e.g. "https://engram.example.com/v1"; default: ENGRAM_BASE_URL, else DEFAULT_BASE_URL. */
  baseURL?: string | undefined;
  /** Milliseconds for each attempt of a call; default 60,000. */
  timeout?: number;
  /** Retries of 429/503 for calls that may be retried; default 2. */
  maxRetries?: number;
  /** The fetch to use; default globalThis.fetch. */
  fetch?: typeof fetch;
  /** Headers sent with every call. */
  defaultHeaders?: Record<string, string>;
}

function env(name: string): string | undefined {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return proc?.env?.[name] || undefined;
}

/**
 * A client of one Engram server with one credential.
 *
 * ```ts
 * const client = new Engram({ apiKey: "eng_…", baseURL: "http://127.0.0.1:8080/v1" });
 * await client.memories.create({ agent_id: "claire", type: "notes", content: { content: "hi" } });
 * const { results } = await client.search({ agent_id: "claire", query: "hi" });
 * ```
 */
export class Engram {
  readonly auth: Auth;
  readonly sessions: Sessions;
  readonly keys: Keys;
  readonly memories: Memories;
  readonly agents: Agents;
  readonly audit: Audit;
  readonly embeddings: Embeddings;
  readonly models: Models;
  readonly sync: Sync;
  readonly processing: Processing;
  readonly suggestions: Suggestions;
  readonly webhooks: Webhooks;

  private readonly options: ClientOptions;
  private readonly transport: Transport;
  private token: string | undefined;

  constructor(options: ClientOptions = {}) {
    this.options = { ...options };
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== "function") throw new EngramError("no fetch: pass options.fetch");
    this.transport = new Transport({
      baseURL: options.baseURL ?? env("ENGRAM_BASE_URL") ?? DEFAULT_BASE_URL,
      apiKey: options.apiKey ?? env("ENGRAM_API_KEY"),
      timeout: options.timeout ?? 60_000,
      maxRetries: options.maxRetries ?? 2,
      fetch: fetchImpl,
      defaultHeaders: { "User-Agent": `engram-typescript/${VERSION}`, ...options.defaultHeaders },
      onConsistencyToken: (token) => {
        this.token = token;
      },
    });
    this.auth = new Auth(this.transport);
    this.sessions = new Sessions(this.transport);
    this.keys = new Keys(this.transport);
    this.memories = new Memories(this.transport);
    this.agents = new Agents(this.transport);
    this.audit = new Audit(this.transport);
    this.embeddings = new Embeddings(this.transport);
    this.models = new Models(this.transport);
    this.sync = new Sync(this.transport);
    this.processing = new Processing(this.transport);
    this.suggestions = new Suggestions(this.transport);
    this.webhooks = new Webhooks(this.transport);
  }

  /** The API base URL the client calls. */
  get baseURL(): string {
    return this.transport.config.baseURL;
  }

  /**
   * The Engram-Consistency-Token of the latest response that carried one
   * (every response to a write does). Send it with a read to another node
   * (`{ consistencyToken }` in a call's options) to read that write there.
   */
  get lastConsistencyToken(): string | undefined {
    return this.token;
  }

  /** A copy of the client with some options changed, e.g. `{ apiKey: session.token }`. */
  withOptions(options: ClientOptions): Engram {
    return new Engram({
      ...this.options,
      apiKey: this.transport.config.apiKey,
      baseURL: this.transport.config.baseURL,
      ...options,
    });
  }

  /** Searches an agent's memories; the hits are in `.results`, best first. */
  search(params: SearchParams, options?: RequestOptions): Promise<SearchResponse> {
    return this.transport.call({ method: "POST", path: "/search", body: params, idempotent: true, options });
  }

  /**
   * Resolves once the server's read models include the write that token
   * names (`error.consistencyToken` of a WriteNotYetVisibleError, or
   * `lastConsistencyToken`), so that what follows reads it. It sends
   * GET /agents?limit=1 (the cheapest read any credential may make)
   * carrying the token, which the server holds until then or for its
   * --consistency-wait, and again after each 503 not_yet_consistent's
   * Retry-After, until `signal` aborts or `timeout` milliseconds pass.
   */
  async waitVisible(token: string, options: { signal?: AbortSignal; timeout?: number } = {}): Promise<void> {
    if (!token) throw new EngramError("no consistency token to wait for");
    const signals = [options.signal, options.timeout === undefined ? undefined : AbortSignal.timeout(options.timeout)];
    const present = signals.filter((s): s is AbortSignal => s !== undefined);
    const signal = present.length === 0 ? undefined : anySignal(present);
    for (;;) {
      try {
        await this.agents.list({ limit: 1 }, { consistencyToken: token, maxRetries: 0, ...(signal ? { signal } : {}) });
        return;
      } catch (err) {
        if (!isNotYetConsistent(err)) throw err;
        await sleep((err.retryAfter ?? 1) * 1000, signal);
      }
    }
  }

  /** GET /v1/openapi.json: the OpenAPI 3.1 document of the API (no credential needed). */
  openapi(options?: RequestOptions): Promise<Record<string, unknown>> {
    return this.transport.call({ method: "GET", path: "/openapi.json", auth: "none", idempotent: true, raw: true, options });
  }

  /** GET /healthz: the process is up. */
  health(options?: RequestOptions): Promise<Health> {
    return this.transport.call({ method: "GET", path: this.rootPath("/healthz"), auth: "none", idempotent: true, options });
  }

  /** GET /readyz: the projections caught up and every index backend answers. */
  readiness(options?: RequestOptions): Promise<Readiness> {
    return this.transport.call({ method: "GET", path: this.rootPath("/readyz"), auth: "none", idempotent: true, options });
  }

  /** rootPath names a path outside /v1 relative to the base URL. */
  private rootPath(path: string): string {
    const base = this.transport.config.baseURL.replace(/\/+$/, "");
    return base.endsWith("/v1") ? `/..${path}` : path;
  }
}
