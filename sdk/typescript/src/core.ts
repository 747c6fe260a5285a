// The request machinery every resource shares: the envelope, errors,
// retries, timeouts, the consistency token and pagination.
import {
  APIConnectionError,
  APIStatusError,
  APITimeoutError,
  CODE_NOT_YET_CONSISTENT,
  CODE_WRITE_NOT_STORED,
  CODE_WRITE_NOT_YET_VISIBLE,
  EngramError,
  InsecureURLError,
  errorFor,
} from "./errors.js";

/** The header that carries read-your-writes across nodes. */
export const CONSISTENCY_TOKEN_HEADER = "Engram-Consistency-Token";

/** Options every call takes as its last argument. */
export interface RequestOptions {
  /** Cancels the call (and its retries). */
  signal?: AbortSignal;
  /** Milliseconds for each attempt; overrides the client's `timeout`. */
  timeout?: number;
  /** Retries of 429/503 for this call; overrides the client's `maxRetries`. */
  maxRetries?: number;
  /**
   * An Engram-Consistency-Token to send: the server answers once its read
   * models include the write the token names (see `lastConsistencyToken`).
   */
  consistencyToken?: string;
  /** Extra request headers. */
  headers?: Record<string, string>;
}

/** What a call carries: nothing secret, a secret in the body, or the Bearer credential. */
export type Auth = "none" | "body" | "bearer";

export interface CallSpec {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** escaped, with a leading "/", under the base URL */
  path: string;
  query?: Record<string, string | number | boolean | undefined> | undefined;
  body?: unknown;
  /** A body sent as is, with its content type (JSON Lines of an import). */
  content?: { type: string; data: string } | undefined;
  auth?: Auth;
  /**
   * Whether sending the call twice does what sending it once does: reads
   * and the read-only POSTs (search, embeddings). Only such calls are
   * retried on 429 and 503; a write is retried only on 503
   * write_not_stored, which guarantees nothing was stored.
   */
  idempotent?: boolean;
  /** The If-Match header. */
  ifMatch?: string | undefined;
  /** The response is not the success envelope (OpenAI-compatible routes). */
  raw?: boolean;
  options?: RequestOptions | undefined;
}

export interface TransportConfig {
  baseURL: string;
  apiKey: string | undefined;
  timeout: number;
  maxRetries: number;
  fetch: typeof fetch;
  defaultHeaders: Record<string, string>;
  onConsistencyToken: (token: string) => void;
}

/** The longest Retry-After the client waits out; longer ones fail the call. */
const MAX_RETRY_AFTER_SECONDS = 60;

/**
 * secureURL reports whether secrets may travel to url: https, or http to a
 * loopback host. Names other than "localhost" are not resolved, because
 * what a name resolves to can change between the check and the dial.
 */
export function secureURL(url: URL): boolean {
  if (url.protocol === "https:") return true;
  if (url.protocol !== "http:") return false;
  const host = url.hostname.toLowerCase();
  return host === "localhost" || /^127(\.\d{1,3}){3}$/.test(host) || host === "[::1]";
}

export class Transport {
  constructor(readonly config: TransportConfig) {}

  /** Sends the call, retrying what may be retried, and returns the envelope's data. */
  async call<T>(spec: CallSpec): Promise<T> {
    const opts = spec.options ?? {};
    const maxRetries = opts.maxRetries ?? this.config.maxRetries;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once<T>(spec);
      } catch (err) {
        const wait = this.retryDelay(spec, err, attempt, maxRetries);
        if (wait === undefined) throw err;
        await sleep(wait, opts.signal);
      }
    }
  }

  /** The milliseconds to wait before sending spec again after err, or undefined to give up. */
  private retryDelay(spec: CallSpec, err: unknown, attempt: number, maxRetries: number): number | undefined {
    if (attempt >= maxRetries) return undefined;
    const backoff = Math.min(8000, 500 * 2 ** attempt) * (0.75 + Math.random() * 0.5);
    if (err instanceof APIConnectionError && !(err instanceof APITimeoutError)) {
      return spec.idempotent ? backoff : undefined;
    }
    if (!(err instanceof APIStatusError) || (err.status !== 429 && err.status !== 503)) return undefined;
    if (err.code === CODE_WRITE_NOT_YET_VISIBLE) return undefined; // stored: resending stores a copy
    if (!spec.idempotent && err.code !== CODE_WRITE_NOT_STORED) return undefined;
    if (err.retryAfter === undefined) return backoff;
    if (err.retryAfter > MAX_RETRY_AFTER_SECONDS) return undefined;
    return err.retryAfter * 1000;
  }

  private url(spec: CallSpec): URL {
    let url: URL;
    try {
      url = new URL(this.config.baseURL.replace(/\/+$/, "") + spec.path);
    } catch (cause) {
      throw new EngramError(`base URL ${JSON.stringify(this.config.baseURL)} is not a URL`, { cause });
    }
    for (const [k, v] of Object.entries(spec.query ?? {})) {
      if (v !== undefined && v !== "") url.searchParams.set(k, String(v));
    }
    return url;
  }

  /**
   * Sends spec and returns the response with its body unread, for a body
   * streamed as JSON Lines (an export); a failure is thrown as call throws
   * it. Not retried: a stream cannot be resumed.
   */
  async stream(spec: CallSpec): Promise<Response> {
    const url = this.url(spec);
    if (!secureURL(url)) {
      throw new InsecureURLError(`refusing to send a secret over plain http to ${url.host}, which is not loopback; use https`);
    }
    if (!this.config.apiKey) throw new EngramError("no API key: pass apiKey or set ENGRAM_API_KEY");
    const opts = spec.options ?? {};
    const headers: Record<string, string> = {
      Accept: "application/x-ndjson",
      ...this.config.defaultHeaders,
      Authorization: `Bearer ${this.config.apiKey}`,
      ...opts.headers,
    };
    let resp: Response;
    try {
      resp = await this.config.fetch(url, { method: spec.method, headers, signal: opts.signal ?? null, redirect: "error" });
    } catch (cause) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw new APIConnectionError(`${spec.method} ${url.pathname}: ${(cause as Error)?.message ?? cause}`, { cause });
    }
    if (!resp.ok) throw failure(resp, await resp.text(), false);
    return resp;
  }

  private async once<T>(spec: CallSpec): Promise<T> {
    const opts = spec.options ?? {};
    const auth = spec.auth ?? "bearer";
    const url = this.url(spec);
    if (auth !== "none" && !secureURL(url)) {
      throw new InsecureURLError(
        `refusing to send a secret over plain http to ${url.host}, which is not loopback; use https`,
      );
    }
    const headers: Record<string, string> = { Accept: "application/json", ...this.config.defaultHeaders };
    if (spec.body !== undefined) headers["Content-Type"] = "application/json";
    if (spec.content !== undefined) headers["Content-Type"] = spec.content.type;
    if (auth === "bearer") {
      if (!this.config.apiKey) {
        throw new EngramError("no API key: pass apiKey or set ENGRAM_API_KEY");
      }
      headers["Authorization"] = `Bearer ${this.config.apiKey}`;
    }
    if (spec.ifMatch) headers["If-Match"] = spec.ifMatch;
    if (opts.consistencyToken) headers[CONSISTENCY_TOKEN_HEADER] = opts.consistencyToken;
    Object.assign(headers, opts.headers);

    const timeout = AbortSignal.timeout(opts.timeout ?? this.config.timeout);
    const signal = opts.signal ? anySignal([opts.signal, timeout]) : timeout;
    const what = `${spec.method} ${url.pathname}`;
    let resp: Response;
    let text: string;
    try {
      resp = await this.config.fetch(url, {
        method: spec.method,
        headers,
        body: spec.content !== undefined ? spec.content.data : spec.body === undefined ? null : JSON.stringify(spec.body),
        signal,
        // The API never redirects; following one would resend a secret.
        redirect: "error",
      });
      text = await resp.text();
    } catch (cause) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (timeout.aborted) throw new APITimeoutError(`${what}: timed out`, { cause });
      throw new APIConnectionError(`${what}: ${(cause as Error)?.message ?? cause}`, { cause });
    }
    const token = resp.headers.get(CONSISTENCY_TOKEN_HEADER);
    if (token) this.config.onConsistencyToken(token);
    if (!resp.ok) throw failure(resp, text, spec.raw === true);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (cause) {
      throw new EngramError(`${what}: status ${resp.status} with a body that is not JSON`, { cause });
    }
    if (spec.raw) return parsed as T;
    const env = parsed as { success?: unknown; data?: unknown };
    if (env.success !== true) {
      throw new EngramError(`${what}: status ${resp.status} without a success envelope`);
    }
    return env.data as T;
  }
}

/** failure turns a failure response into an APIStatusError. */
function failure(resp: Response, text: string, openAIShape: boolean): APIStatusError {
  const init = {
    status: resp.status,
    code: "",
    message: "",
    requestId: resp.headers.get("X-Request-Id") ?? "",
    retryAfter: parseRetryAfter(resp.headers.get("Retry-After")),
    consistencyToken: resp.headers.get(CONSISTENCY_TOKEN_HEADER) ?? undefined,
    details: undefined as Record<string, unknown> | undefined,
  };
  let body: { error?: Record<string, unknown> } | undefined;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const e = body?.error;
  if (e && typeof e === "object") {
    if (openAIShape && typeof e["type"] === "string") {
      // OpenAI's {error: {message, type, param, code}}.
      init.code = typeof e["code"] === "string" && e["code"] ? e["code"] : (e["type"] as string);
      init.message = String(e["message"] ?? "");
      init.details = { type: e["type"], param: e["param"] };
      return errorFor(init);
    }
    if (typeof e["code"] === "string" && e["code"]) {
      init.code = e["code"];
      init.message = String(e["message"] ?? "");
      if (typeof e["request_id"] === "string" && e["request_id"]) init.requestId = e["request_id"];
      if (e["details"] && typeof e["details"] === "object") init.details = e["details"] as Record<string, unknown>;
      return errorFor(init);
    }
  }
  const start = text.trim();
  init.message = start.length > 200 ? start.slice(0, 200) + "…" : start || resp.statusText || String(resp.status);
  return errorFor(init);
}

/** parseRetryAfter reads delay-seconds or an HTTP date into seconds. */
export function parseRetryAfter(v: string | null): number | undefined {
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, (at - Date.now()) / 1000);
}

/** sleep waits ms, or rejects with the signal's reason when it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * anySignal aborts when the first of signals does, with its reason:
 * AbortSignal.any, which Node.js 18 (Debian 12's) lacks.
 */
export function anySignal(signals: AbortSignal[]): AbortSignal {
  const ctl = new AbortController();
  for (const s of signals) {
    if (s.aborted) {
      ctl.abort(s.reason);
      return ctl.signal;
    }
  }
  const onAbort = (event: Event) => {
    ctl.abort((event.target as AbortSignal).reason);
    for (const s of signals) s.removeEventListener("abort", onAbort);
  };
  for (const s of signals) s.addEventListener("abort", onAbort, { once: true });
  return ctl.signal;
}

/** Whether err is the 503 not_yet_consistent of a consistency token not reached yet. */
export function isNotYetConsistent(err: unknown): err is APIStatusError {
  return err instanceof APIStatusError && err.code === CODE_NOT_YET_CONSISTENT;
}

/**
 * A list call: `await` it for the first page, or iterate it with
 * `for await` for every item of every page, fetched as needed.
 */
export class PagePromise<Page, Item> implements PromiseLike<Page>, AsyncIterable<Item> {
  private first: Promise<Page> | undefined;

  constructor(
    private readonly fetchPage: (cursor: string | undefined) => Promise<Page>,
    private readonly items: (page: Page) => Item[],
    private readonly nextCursor: (page: Page) => string | undefined,
    private readonly startCursor?: string,
  ) {}

  private firstPage(): Promise<Page> {
    this.first ??= this.fetchPage(this.startCursor);
    return this.first;
  }

  then<A = Page, B = never>(
    onfulfilled?: ((value: Page) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.firstPage().then(onfulfilled, onrejected);
  }

  catch<B = never>(onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<Page | B> {
    return this.firstPage().catch(onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<Page> {
    return this.firstPage().finally(onfinally);
  }

  /** Every page, the first one included. */
  async *pages(): AsyncGenerator<Page, void, undefined> {
    let page = await this.firstPage();
    for (;;) {
      yield page;
      const cursor = this.nextCursor(page);
      if (!cursor) return;
      page = await this.fetchPage(cursor);
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item, void, undefined> {
    for await (const page of this.pages()) yield* this.items(page);
  }
}

/** pathID escapes one path segment. */
export function pathID(id: string): string {
  return encodeURIComponent(id);
}
