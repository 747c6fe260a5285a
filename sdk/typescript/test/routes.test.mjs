// Every route the server mounts has an SDK call, and each call sends the
// method and path of its route. The routes are read from the chi
// registrations in api/*.go, so a route added to the server without an
// SDK call fails this test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join, resolve } from "node:path";

import { Engram } from "../dist/index.js";

const apiDir = resolve(fileURLToPath(import.meta.url), "../../../../api");

/**
 * The "METHOD /path" of every route registered in api/*.go: r.Get/Post/…
 * calls under the r.Route prefixes that enclose them.
 */
function mountedRoutes() {
  const routes = new Set();
  for (const file of readdirSync(apiDir).filter((f) => f.endsWith(".go") && !f.endsWith("_test.go"))) {
    const prefixes = []; // [indent, prefix]
    for (const line of readFileSync(join(apiDir, file), "utf8").split("\n")) {
      const indent = line.length - line.trimStart().length;
      while (prefixes.length && /^\s*}\)/.test(line) && indent === prefixes.at(-1)[0]) prefixes.pop();
      const route = /\br\.Route\("([^"]*)", func/.exec(line);
      if (route) {
        prefixes.push([indent, route[1]]);
        continue;
      }
      const m = /\br(?:\.With\([^)]*\))?\.(Get|Post|Patch|Put|Delete)\("([^"]*)"/.exec(line);
      if (!m) continue;
      // server.go mounts /healthz and /readyz at the root and every other
      // file's routes under r.Route("/v1", …).
      const root = file === "server.go" ? "" : "/v1";
      const path = (root + prefixes.map((p) => p[1]).join("") + m[2]).replace(/\/$/, "");
      routes.add(`${m[1].toUpperCase()} ${path}`);
    }
  }
  return routes;
}

/** Routes without an SDK call, and why. */
const notInTheSDK = {
  "GET /v1/auth/verify": "the HTML confirm page the mail links to, for a browser",
};


const page = {};
const id = "x1";
/** One SDK call per route. */
const calls = {
  "GET /healthz": (c) => c.health(),
  "GET /readyz": (c) => c.readiness(),
  "POST /v1/auth/register": (c) => c.auth.register({ email: "a@example.com" }),
  "POST /v1/auth/verify": (c) => c.auth.verify({ token: "t" }),
  "POST /v1/auth/login": (c) => c.sessions.create({ api_key: "k" }),
  "GET /v1/auth/status": (c) => c.auth.status(),
  "GET /v1/openapi.json": (c) => c.openapi(),
  "GET /v1/models": (c) => c.models.list(),
  "GET /v1/models/{model}": (c) => c.models.retrieve(id),
  "GET /v1/auth/keys": (c) => c.keys.list(),
  "POST /v1/auth/keys": (c) => c.keys.create({ name: "n" }),
  "DELETE /v1/auth/keys/{key_id}": (c) => c.keys.revoke(id),
  "POST /v1/auth/keys/{key_id}/cycle": (c) => c.keys.cycle(id),
  "POST /v1/memories": (c) => c.memories.create({ agent_id: "a", type: "notes", content: {} }),
  "POST /v1/memories/batch": (c) => c.memories.batch({ agent_id: "a", memories: [] }),
  "GET /v1/memories": async (c) => await c.memories.list(),
  "GET /v1/memories/{id}": (c) => c.memories.get(id),
  "PATCH /v1/memories/{id}": (c) => c.memories.update(id, {}),
  "DELETE /v1/memories/{id}": (c) => c.memories.forget(id),
  "GET /v1/agents": async (c) => await c.agents.list(),
  "DELETE /v1/agents/{agent_id}": (c) => c.agents.delete(id),
  "POST /v1/embeddings": (c) => c.embeddings.createOpenAI({ input: "x", model: "m" }),
  "POST /v1/embeddings/generate": (c) => c.embeddings.generate({ text: "x" }),
  "POST /v1/embeddings/batch": (c) => c.embeddings.batch({ texts: ["x"] }),
  "POST /v1/embeddings/reembed": (c) => c.embeddings.reembed({ agent_id: "a", memory_type: "notes", memory_id: id }),
  "POST /v1/embeddings/bulk-reembed": (c) => c.embeddings.bulkReembed({ agent_id: "a" }),
  "GET /v1/embeddings/jobs/{job_id}": (c) => c.embeddings.jobs.get(id),
  "POST /v1/embeddings/jobs/{job_id}/cancel": (c) => c.embeddings.jobs.cancel(id),
  "POST /v1/embeddings/similar": (c) => c.embeddings.similar({ agent_id: "a", embedding: [1] }),
  "GET /v1/embeddings/models": (c) => c.embeddings.models(),
  "POST /v1/search": (c) => c.search({ agent_id: "a", query: "q" }),
  "GET /v1/sync/events": async (c) => await c.sync.pull({ agent_id: "a" }),
  "POST /v1/sync/events": (c) => c.sync.push({ agent_id: "a", events: [] }),
  "POST /v1/agents/{agent_id}/process": (c) => c.processing.run(id),
  "POST /v1/agents/{agent_id}/process/exhaust": (c) => c.processing.exhaust(id),
  "GET /v1/agents/{agent_id}/processing": (c) => c.processing.get(id),
  "PATCH /v1/agents/{agent_id}/processing": (c) => c.processing.update(id, {}),
  "GET /v1/agents/{agent_id}/suggestions": (c) => c.suggestions.list(id),
  "GET /v1/agents/{agent_id}/anxiety": (c) => c.agents.anxiety(id),
  "GET /v1/agents/{agent_id}/raw": (c) => c.processing.rawEntries(id),
  "GET /v1/suggestions/{id}": (c) => c.suggestions.get(id),
  "POST /v1/suggestions/{id}/accept": (c) => c.suggestions.accept(id),
  "POST /v1/suggestions/{id}/reject": (c) => c.suggestions.reject(id),
  "POST /v1/suggestions/{id}/dismiss": (c) => c.suggestions.dismiss(id),
  "GET /v1/agents/{agent_id}/settings": (c) => c.agents.settings(id),
  "PATCH /v1/agents/{agent_id}/settings": (c) => c.agents.updateSettings(id, {}),
  "GET /v1/agents/{agent_id}/audit": async (c) => await c.agents.audit(id),
  "GET /v1/agents/{agent_id}/stats": (c) => c.agents.stats(id),
  "GET /v1/agents/{agent_id}/export": async (c) => {
    for await (const _ of c.agents.export(id));
  },
  "POST /v1/agents/{agent_id}/import": (c) => c.agents.import(id, [{ header: { format: "events" } }, "{}"]),
  "GET /v1/audit": async (c) => await c.audit.list(),
  "GET /v1/memories/{id}/provenance": (c) => c.memories.provenance(id),
  "POST /v1/memories/{id}/recover": (c) => c.memories.recover(id),
  "POST /v1/memories/{id}/protect": (c) => c.memories.protect(id),
  "POST /v1/memories/{id}/unprotect": (c) => c.memories.unprotect(id),
  "POST /v1/memories/{id}/weaken": (c) => c.memories.weaken(id),
  "POST /v1/memories/{id}/verify": (c) => c.memories.verify(id),
  "POST /v1/webhooks": (c) => c.webhooks.create({ url: "https://example.com/hook", events: ["memory.created"] }),
  "GET /v1/webhooks": (c) => c.webhooks.list(),
  "DELETE /v1/webhooks/{webhook_id}": (c) => c.webhooks.delete(id),
  "GET /v1/webhooks/{webhook_id}/deliveries": async (c) => await c.webhooks.deliveries(id),
};

test("every mounted route has an SDK call, and no call names a route that is not mounted", () => {
  const mounted = mountedRoutes();
  assert.ok(mounted.size > 40, `parsed ${mounted.size} routes`);
  const missing = [...mounted].filter((r) => !(r in calls) && !(r in notInTheSDK));
  const stale = Object.keys(calls).filter((r) => !mounted.has(r));
  assert.deepEqual({ missing, stale }, { missing: [], stale: [] });
});

test("each call sends its route's method and path", async () => {
  const got = [];
  const srv = createServer((req, res) => {
    got.push(`${req.method} ${new URL(req.url, "http://x").pathname}`);
    req.resume();
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ success: true, data: page }));
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  try {
    const client = new Engram({ baseURL: `http://127.0.0.1:${srv.address().port}/v1`, apiKey: "eng_test" });
    for (const [route, call] of Object.entries(calls)) {
      got.length = 0;
      await call(client);
      const [method, template] = route.split(" ");
      const pattern = new RegExp(`^${method} ${template.replace(/\{[^}]+\}/g, "[^/]+")}$`);
      assert.equal(got.length, 1, route);
      assert.match(got[0], pattern, route);
    }
  } finally {
    srv.close();
  }
});
