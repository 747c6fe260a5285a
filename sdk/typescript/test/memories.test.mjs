// Memories, agents and search through the SDK against the real binary,
// with another user's view of each.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";

import { BadRequestError, NotFoundError, PreconditionFailedError, etag } from "../dist/index.js";
import { register, start } from "./server.mjs";

let server;
let client;
let other;

before(async () => {
  server = await start();
  client = await register(server, "mem@example.com");
  other = await register(server, "mem-other@example.com");
});
after(() => server?.stop());

describe("memories", () => {
  test("create, get, update with If-Match, forget, recover, purge", async () => {
    const created = await client.memories.create({
      agent_id: "claire",
      type: "notes",
      content: { content: "The billing service deploys on Tuesdays" },
      tags: ["ops"],
    });
    assert.equal(created.type, "note");
    assert.ok(created.id);
    assert.ok(client.lastConsistencyToken, "a write's response carries a consistency token");

    const got = await client.memories.get(created.id);
    assert.equal(got.agent_id, "claire");
    assert.deepEqual(got.content.content, "The billing service deploys on Tuesdays");
    assert.deepEqual(got.tags, ["ops"]);

    const updated = await client.memories.update(created.id, { tags: ["ops", "billing"], if_match: etag(got) });
    assert.deepEqual(updated.tags, ["ops", "billing"]);
    await assert.rejects(
      client.memories.update(created.id, { tags: ["stale"], if_match: etag(got) }),
      (e) => e instanceof PreconditionFailedError && e.code === "precondition_failed",
    );

    const forgotten = await client.memories.forget(created.id);
    assert.equal(forgotten.forgotten, true);
    const recovered = await client.memories.recover(created.id);
    assert.equal(recovered.forgotten, false);

    const purged = await client.memories.purge(created.id, { if_match: etag(recovered) });
    assert.equal(purged.purged, true);
    await assert.rejects(client.memories.get(created.id), NotFoundError);
  });

  test("strength actions and provenance", async () => {
    const raw = await client.memories.create({ agent_id: "claire", type: "raw_entry", content: { content: "we shipped it" } });
    const belief = await client.memories.create({
      agent_id: "claire",
      type: "belief",
      content: { statement: "shipping on Fridays is risky", confidence: 0.7 },
      derived_from: [`raw:${raw.id}`],
    });
    assert.equal((await client.memories.protect(belief.id)).is_protected, true);
    assert.equal((await client.memories.unprotect(belief.id)).is_protected, false);
    const before = (await client.memories.get(belief.id)).strength;
    const weakened = await client.memories.weaken(belief.id, { by: 0.2, reason: "contradicted" });
    assert.ok(weakened.strength < before);
    const verified = await client.memories.verify(belief.id, { reason: "seen again" });
    assert.equal(verified.verification_count, 1);
    await assert.rejects(client.memories.weaken(belief.id, { by: 2 }), BadRequestError);

    const up = await client.memories.provenance(belief.id, { direction: "up" });
    assert.equal(up.id, belief.id);
    assert.equal(up.up.nodes[0].id, raw.id);
    const down = await client.memories.provenance(raw.id, { direction: "down", depth: 1 });
    assert.equal(down.down.nodes[0].id, belief.id);
  });

  test("batch creates all or none", async () => {
    const { memories } = await client.memories.batch({
      agent_id: "batcher",
      memories: [
        { type: "notes", content: { content: "one" } },
        { type: "episodes", content: { objective: "deploy", outcome: "done" } },
      ],
    });
    assert.deepEqual(memories.map((m) => m.type), ["note", "episode"]);
    await assert.rejects(
      client.memories.batch({ agent_id: "batcher", memories: [{ type: "notes", content: { content: "ok" } }, { type: "notes", content: {} }] }),
      BadRequestError,
    );
    assert.equal((await client.memories.list({ agent_id: "batcher" })).memories.length, 2);
  });

  test("list pages with a cursor; for await walks every page", async () => {
    const texts = ["a", "b", "c", "d", "e"].map((c) => `page test ${c}`);
    await client.memories.batch({ agent_id: "pager", memories: texts.map((t) => ({ type: "notes", content: { content: t } })) });

    const first = await client.memories.list({ agent_id: "pager", limit: 2 });
    assert.equal(first.memories.length, 2);
    assert.ok(first.next_cursor);

    const seen = [];
    for await (const m of client.memories.list({ agent_id: "pager", limit: 2 })) seen.push(m.content.content);
    assert.deepEqual(seen.sort(), texts);

    let pages = 0;
    for await (const page of client.memories.list({ agent_id: "pager", limit: 2 }).pages()) {
      pages++;
      assert.ok(page.memories.length <= 2);
    }
    assert.equal(pages, 3);

    await assert.rejects(async () => await client.memories.list({ agent_id: "pager", limit: 0 }), BadRequestError);
    await assert.rejects(async () => await client.memories.list({ agent_id: "pager", cursor: "garbage" }), BadRequestError);
  });

  test("bad input is 400 naming the field", async () => {
    await assert.rejects(client.memories.create({ agent_id: "claire", type: "poems", content: { content: "x" } }), (e) => {
      assert.ok(e instanceof BadRequestError);
      assert.equal(e.details.field, "type");
      return true;
    });
    await assert.rejects(client.memories.create({ agent_id: "", type: "notes", content: { content: "x" } }), (e) => e.details.field === "agent_id");
  });
});

describe("agents", () => {
  test("list pages and delete", async () => {
    for (const a of ["ag-1", "ag-2", "ag-3"]) {
      await client.memories.create({ agent_id: a, type: "notes", content: { content: `hello from ${a}` } });
    }
    const names = [];
    for await (const a of client.agents.list({ limit: 2 })) names.push(a.agent_id);
    for (const a of ["ag-1", "ag-2", "ag-3"]) assert.ok(names.includes(a), `${a} in ${names}`);
    const page = await client.agents.list({ limit: 1 });
    assert.equal(page.agents.length, 1);
    assert.ok(page.next_cursor);

    assert.deepEqual(await client.agents.delete("ag-3"), { agent_id: "ag-3", deleted: true });
    const after = [];
    for await (const a of client.agents.list()) after.push(a.agent_id);
    assert.ok(!after.includes("ag-3"));
    await assert.rejects(client.agents.delete("ag-3"), NotFoundError);
  });
});

describe("search", () => {
  test("typed results in .results, every mode", async () => {
    await client.memories.create({ agent_id: "searcher", type: "notes", content: { content: "The database migration failed on Tuesday" } });
    await client.memories.create({ agent_id: "searcher", type: "notes", content: { content: "Lunch was pizza" } });
    for (const mode of ["hybrid", "keyword", "vector"]) {
      const res = await client.search({ agent_id: "searcher", query: "database migration", mode, limit: 5, explain: true });
      assert.ok(res.results.length >= 1, mode);
      assert.match(res.results[0].content.content, /migration/, mode);
      assert.ok(res.results[0].score > 0 && res.results[0].score <= 1);
      assert.equal(typeof res.query_time_ms, "number");
      assert.ok(res.results[0].explain);
    }
    await assert.rejects(client.search({ agent_id: "searcher", query: "x", mode: "psychic" }), (e) => e instanceof BadRequestError && e.details.field === "mode");
  });
});

describe("tenant isolation", () => {
  test("another user sees none of this user's memories, agents or hits", async () => {
    const mine = await client.memories.create({ agent_id: "private", type: "notes", content: { content: "secret plans for the launch" } });
    await assert.rejects(other.memories.get(mine.id), NotFoundError);
    await assert.rejects(other.memories.update(mine.id, { tags: ["x"] }), NotFoundError);
    await assert.rejects(other.memories.forget(mine.id), NotFoundError);
    await assert.rejects(other.memories.purge(mine.id), NotFoundError);
    await assert.rejects(other.memories.recover(mine.id), NotFoundError);
    await assert.rejects(other.memories.protect(mine.id), NotFoundError);
    await assert.rejects(other.memories.provenance(mine.id), NotFoundError);
    await assert.rejects(other.agents.delete("private"), NotFoundError);
    assert.equal((await other.memories.list({ agent_id: "private" })).memories.length, 0);
    const theirs = [];
    for await (const a of other.agents.list()) theirs.push(a.agent_id);
    assert.ok(!theirs.includes("private"));
    await assert.rejects(other.search({ agent_id: "private", query: "secret plans launch" }), NotFoundError);
    assert.equal((await client.memories.get(mine.id)).forgotten, false);
  });
});
