// How the client behaves around the calls: retries of 429/503 for what
// may be sent twice, the consistency token and waitVisible, timeouts and
// cancellation, and failures without the envelope. Against the real
// binary where it can be made to answer so on cue (rate limiting, tokens),
// and against a scripted loopback server for the answers it cannot be
// made to give on cue (write_not_yet_visible, write_not_stored, a hang,
// a proxy's HTML).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";

import {
  APIConnectionError,
  APITimeoutError,
  BadRequestError,
  Engram,
  InternalServerError,
  RateLimitError,
  ServiceUnavailableError,
  WriteNotStoredError,
  WriteNotYetVisibleError,
} from "../dist/index.js";
import { register, start } from "./server.mjs";

/** A fetch that records the status of every response it passes on. */
function recordingFetch() {
  const statuses = [];
  const f = async (...args) => {
    const r = await fetch(...args);
    statuses.push(r.status);
    return r;
  };
  return { fetch: f, statuses };
}

describe("against the real binary, rate-limited to 1 request a second per credential", () => {
  let server;

  before(async () => {
    server = await start(["--rate-limit", "1", "--rate-burst", "1"]);
  });
  after(() => server?.stop());

  /** A client of the user whose every call is recorded. */
  async function recorded(options = {}) {
    const rec = recordingFetch();
    const c = await register(server, `limited-${Math.random().toString(36).slice(2)}@example.com`, { fetch: rec.fetch, ...options });
    return { c, statuses: rec.statuses };
  }

  test("a read refused 429 is sent again after Retry-After and succeeds", async () => {
    const { c, statuses } = await recorded();
    await c.auth.status();
    await c.auth.status(); // the bucket is empty: 429, then the retry after Retry-After: 1
    assert.deepEqual(statuses.slice(-3), [200, 429, 200]);
  });

  test("with maxRetries 0 the 429 surfaces as RateLimitError with retryAfter", async () => {
    const { c } = await recorded({ maxRetries: 0 });
    await c.auth.status();
    await assert.rejects(c.auth.status(), (e) => {
      assert.ok(e instanceof RateLimitError);
      assert.equal(e.code, "rate_limited");
      assert.ok(e.retryAfter >= 1);
      assert.ok(e.requestId);
      return true;
    });
  });

  test("a write refused 429 is not sent again", async () => {
    const { c, statuses } = await recorded();
    await c.auth.status();
    const before = statuses.length;
    await assert.rejects(c.memories.create({ agent_id: "a", type: "notes", content: { content: "x" } }), RateLimitError);
    assert.deepEqual(statuses.slice(before), [429]);
  });

  test("search, a read-only POST, is retried", async () => {
    const { c, statuses } = await recorded();
    await c.auth.status();
    const before = statuses.length;
    await assert.rejects(c.search({ agent_id: "none", query: "x" }), (e) => e.status === 404);
    assert.deepEqual(statuses.slice(before), [429, 404]);
  });
});

describe("the consistency token, against the real binary", () => {
  let server;
  let client;

  before(async () => {
    server = await start();
    client = await register(server, "tokens@example.com");
  });
  after(() => server?.stop());

  test("a write's token is kept; waitVisible and a read carrying it succeed", async () => {
    assert.equal(client.lastConsistencyToken, undefined);
    const m = await client.memories.create({ agent_id: "t", type: "notes", content: { content: "visible soon" } });
    const token = client.lastConsistencyToken;
    assert.match(token, /^v1\.\d+$/);
    await client.waitVisible(token, { timeout: 10_000 });
    const got = await client.memories.get(m.id, { consistencyToken: token });
    assert.equal(got.id, m.id);
  });

  test("a token the server did not issue is 400", async () => {
    await assert.rejects(client.memories.list({ agent_id: "t" }, { consistencyToken: "nonsense" }), (e) => {
      assert.ok(e instanceof BadRequestError);
      assert.equal(e.code, "invalid_consistency_token");
      return true;
    });
    await assert.rejects(client.waitVisible("v1.999999999"), (e) => e.code === "consistency_token_ahead_of_log");
    await assert.rejects(client.waitVisible(""), /no consistency token/);
  });
});

/**
 * scripted starts a loopback HTTP server that answers each request with
 * the next of answers ({status, body, headers} or "hang") and records
 * what it got.
 */
async function scripted(answers) {
  const got = [];
  const srv = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      got.push({ method: req.method, url: req.url, body, headers: req.headers, at: Date.now() });
      const a = answers.shift() ?? { status: 500, body: "script exhausted" };
      if (a === "hang") return;
      res.writeHead(a.status, { "Content-Type": a.type ?? "application/json", ...a.headers });
      res.end(typeof a.body === "string" ? a.body : JSON.stringify(a.body));
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address();
  return {
    got,
    client: (options = {}) => new Engram({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "eng_test", ...options }),
    close: () => {
      srv.closeAllConnections();
      return new Promise((r) => srv.close(r));
    },
  };
}

const ok = (data, headers = {}) => ({ status: 200, body: { success: true, data }, headers });
const fail = (status, code, headers = {}) => ({
  status,
  body: { success: false, error: { code, message: `${code} happened`, request_id: "req_1", details: { why: code } } },
  headers,
});

describe("against a scripted loopback server", () => {
  test("503 write_not_yet_visible is never resent: the write is stored", async () => {
    const s = await scripted([fail(503, "write_not_yet_visible", { "Retry-After": "0", "Engram-Consistency-Token": "v1.42" })]);
    try {
      await assert.rejects(s.client().memories.create({ agent_id: "a", type: "notes", content: { content: "x" } }), (e) => {
        assert.ok(e instanceof WriteNotYetVisibleError);
        assert.ok(e instanceof ServiceUnavailableError);
        assert.equal(e.consistencyToken, "v1.42");
        assert.equal(e.requestId, "req_1");
        assert.deepEqual(e.details, { why: "write_not_yet_visible" });
        return true;
      });
      assert.equal(s.got.length, 1);
    } finally {
      await s.close();
    }
  });

  test("503 write_not_stored is resent after Retry-After: nothing was stored", async () => {
    const s = await scripted([
      fail(503, "write_not_stored", { "Retry-After": "1" }),
      ok({ type: "note", id: "m1", created_at: "2026-01-01T00:00:00Z", embedding: {} }, { "Engram-Consistency-Token": "v1.7" }),
    ]);
    try {
      const c = s.client();
      const m = await c.memories.create({ agent_id: "a", type: "notes", content: { content: "x" } });
      assert.equal(m.id, "m1");
      assert.equal(s.got.length, 2);
      assert.equal(s.got[0].body, s.got[1].body);
      assert.ok(s.got[1].at - s.got[0].at >= 900, "the retry waited for Retry-After");
      assert.equal(c.lastConsistencyToken, "v1.7");
    } finally {
      await s.close();
    }
  });

  test("an exhaust run whose second cycle failed is a result: the cycle stored, cycle_failed and the error", async () => {
    const pass = {
      pass_id: "p1", transition: "raw_to_note", model: "rules", forced: true, auto_promote: true, at: "2026-01-02T03:04:05Z",
      skipped: false, inference_blocked: false, source_count: 3, consumed: [{ id: "r1", into: ["note:n1"] }], suggestions: [],
      created: ["note:n1"], deduplicated: 0, gate_blocked: 0, gate_details: [], errors: [], purged: ["belief:b1"],
    };
    const s = await scripted([
      ok({
        cycles_completed: 1, total_promotions: 1, total_suggestions: 0, converged: false, convergence_reason: "cycle_failed", auto_promote: true,
        cycles: [{ cycle: 1, intensity: "light", sources: 3, promotions: 1, suggestions: 0, errors: 0, inference_blocked: false, passes: [pass] }],
        error: { code: "storage_full", message: "the server's storage is full", request_id: "req_1" },
      }),
    ]);
    try {
      const r = await s.client({ maxRetries: 0 }).processing.exhaust("claire", { max_cycles: 5 });
      assert.deepEqual([r.cycles_completed, r.converged, r.convergence_reason], [1, false, "cycle_failed"]);
      assert.deepEqual([r.error?.code, r.error?.request_id], ["storage_full", "req_1"]);
      assert.deepEqual(r.cycles[0].passes[0].purged, ["belief:b1"]);
      assert.equal(s.got.length, 1);
    } finally {
      await s.close();
    }
  });

  test("write_not_stored past maxRetries surfaces as WriteNotStoredError", async () => {
    const s = await scripted([fail(503, "write_not_stored", { "Retry-After": "0" }), fail(503, "write_not_stored", { "Retry-After": "0" })]);
    try {
      await assert.rejects(s.client({ maxRetries: 1 }).memories.batch({ agent_id: "a", memories: [] }), WriteNotStoredError);
      assert.equal(s.got.length, 2);
    } finally {
      await s.close();
    }
  });

  test("503 server_busy: a read is resent, a write is not", async () => {
    const s = await scripted([
      fail(503, "server_busy", { "Retry-After": "0" }),
      ok({ id: "m1" }),
      fail(503, "server_busy", { "Retry-After": "0" }),
    ]);
    try {
      const c = s.client();
      assert.equal((await c.memories.get("m1")).id, "m1");
      await assert.rejects(c.memories.update("m1", { tags: [] }), (e) => e instanceof ServiceUnavailableError && e.code === "server_busy");
      assert.deepEqual(s.got.map((g) => g.method), ["GET", "GET", "PATCH"]);
    } finally {
      await s.close();
    }
  });

  test("a Retry-After beyond 60 s is not waited out", async () => {
    const s = await scripted([fail(429, "rate_limited", { "Retry-After": "3600" })]);
    try {
      await assert.rejects(s.client().auth.status(), (e) => e instanceof RateLimitError && e.retryAfter === 3600);
      assert.equal(s.got.length, 1);
    } finally {
      await s.close();
    }
  });

  test("a timeout is APITimeoutError; an abort rejects with the signal's reason", async () => {
    const s = await scripted(["hang", "hang"]);
    try {
      await assert.rejects(s.client({ timeout: 200 }).auth.status(), APITimeoutError);
      const ctl = new AbortController();
      const call = s.client().memories.get("m1", { signal: ctl.signal });
      setTimeout(() => ctl.abort(new Error("stop")), 50);
      await assert.rejects(call, /stop/);
    } finally {
      await s.close();
    }
  });

  test("a failure without the envelope (a proxy's page) keeps the status and the body's start", async () => {
    const s = await scripted([{ status: 502, type: "text/html", body: "<html>Bad Gateway</html>" }]);
    try {
      await assert.rejects(s.client().auth.status(), (e) => {
        assert.ok(e instanceof InternalServerError);
        assert.equal(e.status, 502);
        assert.equal(e.code, "");
        assert.equal(e.serverMessage, "<html>Bad Gateway</html>");
        return true;
      });
    } finally {
      await s.close();
    }
  });

  test("the credential, If-Match and the consistency token travel as headers", async () => {
    const s = await scripted([ok({ id: "m1", forgotten: true, forgotten_at: null })]);
    try {
      await s.client().memories.forget("m/1", { if_match: '"3"' }, { consistencyToken: "v1.5", headers: { "X-Request-Id": "mine" } });
      const [g] = s.got;
      assert.equal(g.method, "DELETE");
      assert.equal(g.url, "/v1/memories/m%2F1");
      assert.equal(g.headers.authorization, "Bearer eng_test");
      assert.equal(g.headers["if-match"], '"3"');
      assert.equal(g.headers["engram-consistency-token"], "v1.5");
      assert.equal(g.headers["x-request-id"], "mine");
      assert.match(g.headers["user-agent"], /^engram-typescript\//);
    } finally {
      await s.close();
    }
  });

  test("waitVisible asks again after each 503 not_yet_consistent, carrying the token", async () => {
    const s = await scripted([
      fail(503, "not_yet_consistent", { "Retry-After": "0" }),
      fail(503, "not_yet_consistent", { "Retry-After": "0" }),
      ok({ agents: [], next_cursor: null }),
    ]);
    try {
      await s.client().waitVisible("v1.9");
      assert.equal(s.got.length, 3);
      for (const g of s.got) {
        assert.equal(g.url, "/v1/agents?limit=1");
        assert.equal(g.headers["engram-consistency-token"], "v1.9");
      }
    } finally {
      await s.close();
    }
  });

  test("waitVisible gives up when its timeout passes", async () => {
    const answers = Array.from({ length: 50 }, () => fail(503, "not_yet_consistent", { "Retry-After": "1" }));
    const s = await scripted(answers);
    try {
      await assert.rejects(s.client().waitVisible("v1.9", { timeout: 300 }), (e) => e.name === "TimeoutError");
      assert.equal(s.got.length, 1);
    } finally {
      await s.close();
    }
  });

  test("a refused connection is APIConnectionError", async () => {
    const s = await scripted([]);
    const c = s.client({ maxRetries: 0 });
    await s.close();
    await assert.rejects(c.auth.status(), (e) => e instanceof APIConnectionError && !(e instanceof APITimeoutError));
  });
});
