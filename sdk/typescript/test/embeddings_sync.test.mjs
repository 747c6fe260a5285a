// Embeddings, re-embedding jobs, the OpenAI-compatible route and sync
// through the SDK against the real binary.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";

import { BadRequestError, NotFoundError, jobDone } from "../dist/index.js";
import { register, start } from "./server.mjs";

let server;
let client;
let other;

before(async () => {
  server = await start();
  client = await register(server, "emb@example.com");
  other = await register(server, "emb-other@example.com");
});
after(() => server?.stop());

describe("embeddings", () => {
  test("generate and batch", async () => {
    const one = await client.embeddings.generate({ text: "hello world" });
    assert.equal(one.embedding.length, one.dimensions);
    assert.ok(one.model);
    const many = await client.embeddings.batch({ texts: ["one", "two", "three"] });
    assert.equal(many.embeddings.length, 3);
    assert.equal(many.embeddings[0].length, many.dimensions);
    await assert.rejects(client.embeddings.generate({ text: "" }), (e) => e instanceof BadRequestError && e.details.field === "text");
    await assert.rejects(client.embeddings.batch({ texts: [] }), BadRequestError);
  });

  test("models lists the catalogue with the default", async () => {
    const cat = await client.embeddings.models();
    assert.ok(cat.models.length > 0);
    assert.ok(cat.models.some((m) => m.name === cat.default_model || m.default));
  });

  test("similar finds the memory nearest a vector; reembed re-embeds one", async () => {
    const m = await client.memories.create({ agent_id: "vec", type: "notes", content: { content: "kubernetes cluster upgrade" } });
    await client.memories.create({ agent_id: "vec", type: "notes", content: { content: "banana bread recipe" } });
    const q = await client.embeddings.generate({ text: "kubernetes cluster upgrade" });
    const { results } = await client.embeddings.similar({ agent_id: "vec", embedding: q.embedding, limit: 1 });
    assert.equal(results[0].id, m.id);
    assert.ok(results[0].score > 0);

    const re = await client.embeddings.reembed({ agent_id: "vec", memory_type: "notes", memory_id: m.id });
    assert.equal(re.memory_id, m.id);
    assert.ok(re.new_model);
    await assert.rejects(other.embeddings.reembed({ agent_id: "vec", memory_type: "notes", memory_id: m.id }), NotFoundError);
    await assert.rejects(other.embeddings.similar({ agent_id: "vec", embedding: q.embedding }), NotFoundError);
  });

  test("bulk re-embedding runs as a job that can be read and cancelled", async () => {
    await client.memories.create({ agent_id: "bulk", type: "notes", content: { content: "to be re-embedded" } });
    const job = await client.embeddings.bulkReembed({ agent_id: "bulk" });
    assert.ok(job.job_id);
    assert.equal(job.agent_id, "bulk");
    let state = await client.embeddings.jobs.get(job.job_id);
    for (let i = 0; i < 100 && !jobDone(state); i++) {
      await new Promise((r) => setTimeout(r, 50));
      state = await client.embeddings.jobs.get(job.job_id);
    }
    assert.equal(state.status, "completed", JSON.stringify(state));
    // Cancelling an ended job is refused; cancelling another user's is 404.
    await assert.rejects(client.embeddings.jobs.cancel(job.job_id), (e) => e.status === 409);
    await assert.rejects(other.embeddings.jobs.get(job.job_id), NotFoundError);
    await assert.rejects(other.embeddings.jobs.cancel(job.job_id), NotFoundError);
    await assert.rejects(client.embeddings.jobs.get("no-such-job"), NotFoundError);
  });

  test("POST /v1/embeddings answers in OpenAI's shape, float and base64", async () => {
    const floats = await client.embeddings.createOpenAI({ input: ["a", "b"], model: "default" });
    assert.equal(floats.object, "list");
    assert.equal(floats.data.length, 2);
    assert.ok(Array.isArray(floats.data[1].embedding));
    const b64 = await client.embeddings.createOpenAI({ input: "a", model: "default", encoding_format: "base64" });
    const bytes = Buffer.from(b64.data[0].embedding, "base64");
    assert.equal(bytes.length, 4 * floats.data[0].embedding.length);
    await assert.rejects(client.embeddings.createOpenAI({ input: [], model: "default" }), (e) => e.status === 400 && e.code !== "");
  });
});

describe("sync", () => {
  test("pull pages through an agent's events; push appends and deduplicates", async () => {
    for (let i = 0; i < 5; i++) {
      await client.memories.create({ agent_id: "syncer", type: "notes", content: { content: `event ${i}` } });
    }
    const page = await client.sync.pull({ agent_id: "syncer", limit: 2 });
    assert.equal(page.events.length, 2);
    assert.ok(page.head >= 5);
    const all = [];
    for await (const ev of client.sync.pull({ agent_id: "syncer", limit: 2 })) all.push(ev);
    assert.equal(all.length, page.head);
    assert.equal(new Set(all.map((e) => e.id)).size, all.length);
    const rest = [];
    for await (const ev of client.sync.pull({ agent_id: "syncer", after: 3 })) rest.push(ev);
    assert.deepEqual(rest.map((e) => e.id), all.slice(3).map((e) => e.id));

    const note = (text) => ({
      id: randomUUID(),
      type: "MemoryCreated",
      time: new Date().toISOString(),
      payload: { memory_id: randomUUID(), type: "note", content: { content: text } },
    });
    const events = [note("pushed one"), note("pushed two")];
    const pushed = await client.sync.push({ agent_id: "pushed", events });
    assert.equal(pushed.appended, 2);
    const again = await client.sync.push({ agent_id: "pushed", events });
    assert.equal(again.duplicates, 2);
    assert.equal(again.appended, 0);
    assert.equal((await client.memories.list({ agent_id: "pushed" })).memories.length, 2);

    // The same agent id is another agent for another user; event ids are everyone's.
    assert.equal((await other.sync.push({ agent_id: "pushed", events: [note("theirs")] })).appended, 1);
    await assert.rejects(other.sync.push({ agent_id: "pushed", events }), (e) => e.status === 409 && e.code === "event_conflict");
    assert.equal((await client.memories.list({ agent_id: "pushed" })).memories.length, 2);
    assert.equal((await other.memories.list({ agent_id: "pushed" })).memories.length, 1);
    await assert.rejects(async () => await other.sync.pull({ agent_id: "syncer" }), NotFoundError);
    await assert.rejects(async () => await client.sync.pull({ agent_id: "syncer", limit: 1001 }), BadRequestError);
  });
});
