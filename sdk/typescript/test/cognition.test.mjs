// The cognition surface through the SDK against the real binary:
// settings, processing, raw entries, suggestions, exhaust, anxiety, audit
// and stats — each group with a bad request and another user's 404.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";

import { BadRequestError, ConflictError, NotFoundError } from "../dist/index.js";
import { register, start } from "./server.mjs";

let server;
let client;
let other;
let rawID;

/** rejectsAll asserts that every call rejects with cls. */
async function rejectsAll(calls, cls) {
  for (const [what, call] of Object.entries(calls)) {
    await assert.rejects(async () => await call(), cls, what);
  }
}

before(async () => {
  server = await start();
  client = await register(server, "cog@example.com");
  other = await register(server, "cog-other@example.com");
  const raw = (text) => client.memories.create({ agent_id: "claire", type: "raw_entry", content: { content: text } });
  rawID = (await raw("Yesterday we deployed the billing service and it failed, then I learned to check migrations")).id;
  await raw("I think caching always helps latency");
  await raw("Reminder: the docs are at https://example.com/docs");
});
after(() => server?.stop());

describe("cognition", () => {
  test("settings", async () => {
    const s = await client.agents.settings("claire");
    assert.equal(s.agent_id, "claire");
    assert.equal(s.updated_at, null);
    const patched = await client.agents.updateSettings("claire", { lint_rules: { min_length: 12 } });
    assert.equal(patched.lint_rules.min_length, 12);
    assert.ok(patched.updated_at);
    await assert.rejects(client.agents.updateSettings("claire", { stack_state: "asleep" }), BadRequestError);
    await rejectsAll(
      {
        get: () => other.agents.settings("claire"),
        patch: () => other.agents.updateSettings("claire", { lazy_decay: true }),
      },
      NotFoundError,
    );
  });

  test("processing, raw entries and suggestions", async () => {
    let v = await client.processing.get("claire");
    assert.equal(v.triggers.length, 7);
    assert.equal(v.raw.unprocessed, 3);
    assert.equal(v.config.layers.raw_to_episode.quantity_threshold, 10);
    v = await client.processing.update("claire", { layers: { raw_to_episode: { quantity_threshold: 3 } } });
    assert.equal(v.config.layers.raw_to_episode.quantity_threshold, 3);
    await assert.rejects(client.processing.update("claire", { layers: { raw_to_episode: { batch_size: 0 } } }), BadRequestError);

    const { passes } = await client.processing.run("claire", { force: true });
    assert.equal(passes.length, 7);
    assert.equal(passes[0].transition, "raw_to_episode");
    assert.equal(passes[0].source_count, 3);
    assert.equal(passes[0].suggestions.length, 1);
    await assert.rejects(client.processing.run("claire", { transition: "raw_to_poem" }), BadRequestError);

    const done = await client.processing.rawEntries("claire", { processed: true, limit: 1 });
    assert.equal(done.raw_entries.length, 1);
    assert.equal(done.raw_entries[0].processed, true);
    assert.equal(done.raw_entries[0].type, "raw_entry");
    await assert.rejects(client.processing.rawEntries("claire", { limit: 501 }), BadRequestError);

    const { suggestions: pending } = await client.suggestions.list("claire", { status: "pending" });
    assert.equal(pending.length, 3);
    await assert.rejects(client.suggestions.list("claire", { status: "maybe" }), BadRequestError);
    const byType = Object.fromEntries(pending.map((s) => [s.memory_type, s]));
    const ep = byType.episode;
    const got = await client.suggestions.get(ep.id);
    assert.equal(got.sources[0], `raw_entry:${rawID}`);

    const acc = await client.suggestions.accept(ep.id, { tags: ["ops"] });
    assert.equal(acc.suggestion.status, "promoted");
    assert.equal(acc.memory.type, "episode");
    await assert.rejects(client.suggestions.accept(ep.id), (e) => e instanceof ConflictError && e.code === "suggestion_not_pending");
    const rej = await client.suggestions.reject(byType.belief.id, { reason: "too vague" });
    assert.equal(rej.status, "rejected");
    assert.equal(rej.resolution_reason, "too vague");
    assert.equal((await client.suggestions.dismiss(byType.note.id)).status, "dismissed");

    await rejectsAll(
      {
        processing: () => other.processing.get("claire"),
        "patch processing": () => other.processing.update("claire", {}),
        process: () => other.processing.run("claire"),
        raw: () => other.processing.rawEntries("claire"),
        suggestions: () => other.suggestions.list("claire"),
        suggestion: () => other.suggestions.get(ep.id),
        accept: () => other.suggestions.accept(byType.belief.id),
        reject: () => other.suggestions.reject(byType.belief.id),
        dismiss: () => other.suggestions.dismiss(byType.belief.id),
      },
      NotFoundError,
    );
  });

  test("exhaust", async () => {
    await client.memories.create({
      agent_id: "claire",
      type: "raw_entry",
      content: { content: "Another day, another deploy: we shipped the search service and it failed, then I learned to pin versions" },
    });
    const r = await client.processing.exhaust("claire", { auto_promote: false });
    assert.equal(r.converged, true);
    assert.equal(r.convergence_reason, "inference_unavailable");
    assert.equal(r.cycles[0].intensity, "light");
    assert.equal(r.total_suggestions, 1);
    await assert.rejects(client.processing.exhaust("claire", { max_cycles: 101 }), BadRequestError);
    await assert.rejects(other.processing.exhaust("claire"), NotFoundError);
  });

  test("anxiety, audit and stats", async () => {
    const rep = await client.agents.anxiety("claire");
    assert.equal(Object.keys(rep.dimensions).length, 6);
    assert.ok(rep.overall_level);

    const page = await client.agents.audit("claire", { limit: 2 });
    assert.equal(page.entries.length, 2);
    assert.ok(page.next_before);
    const all = [];
    for await (const e of client.agents.audit("claire", { limit: 2 })) all.push(e.id);
    assert.ok(all.length > 2);
    assert.equal(new Set(all).size, all.length, "pages do not overlap");
    const second = await client.agents.audit("claire", { limit: 2, before: page.next_before });
    assert.equal(second.entries[0].id, all[2]);

    const ops = new Set();
    const mine = new Set();
    for await (const e of client.audit.list({ limit: 1 })) {
      ops.add(e.operation);
      mine.add(e.id);
      assert.equal(e.agent_id, undefined);
    }
    assert.ok(ops.has("register") && ops.has("email_verified"), [...ops].join(","));
    await assert.rejects(async () => await client.audit.list({ limit: 1001 }), BadRequestError);
    for await (const e of other.audit.list()) assert.ok(!mine.has(e.id), "the other user sees this user's audit");

    const st = await client.agents.stats("claire");
    assert.equal(st.by_type.raw_entry, 4);
    assert.equal(st.by_type.episode, 1);
    assert.equal(st.suggestions.promoted, 1);
    await rejectsAll(
      {
        anxiety: () => other.agents.anxiety("claire"),
        audit: () => other.agents.audit("claire"),
        stats: () => other.agents.stats("claire"),
        "a missing agent": () => client.agents.stats("nobody"),
      },
      NotFoundError,
    );
  });
});
