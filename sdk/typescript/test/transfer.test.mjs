// Export and import through the SDK against the real binary: the export
// streams as lines, the import takes them back (from another server's
// export as it streams, or from the text of a file), idempotently.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";

import { NotFoundError } from "../dist/index.js";
import { register, start } from "./server.mjs";

let server;
let client;

before(async () => {
  server = await start();
  client = await register(server, "transfer@example.com");
});
after(() => server?.stop());

async function collect(iterable) {
  const out = [];
  for await (const x of iterable) out.push(x);
  return out;
}

async function contents(agent) {
  const all = await collect(client.memories.list({ agent_id: agent }));
  return all.map((m) => JSON.stringify(m.content)).sort();
}

test("export streams lines; import takes them back, chunked and idempotent", async () => {
  await client.memories.batch({
    agent_id: "source",
    memories: Array.from({ length: 5 }, (_, i) => ({ type: "note", content: { content: `exported note ${i}` } })),
  });
  const lines = await collect(client.agents.export("source"));
  assert.equal(lines[0].header.format, "events");
  assert.ok(lines.slice(1).every((l) => l.event));

  const first = await client.agents.import("copy", client.agents.export("source"), { chunkBytes: 2048 });
  assert.equal(first.appended, lines.length - 1);
  assert.deepEqual(await contents("copy"), await contents("source"));
  const audited = await collect(client.agents.audit("copy"));
  assert.ok(audited.length > 0 && audited.every((e) => e.source === "import"), JSON.stringify(audited.map((e) => e.source)));
  assert.ok((await collect(client.agents.audit("source"))).every((e) => e.source === "api"));

  const file = lines.map((l) => JSON.stringify(l)).join("\n") + "\n";
  const again = await client.agents.import("copy", file.split("\n"));
  assert.equal(again.appended, 0);
  assert.equal(again.duplicates, lines.length - 1);

  const memories = await collect(client.agents.export("source", { format: "memories" }));
  assert.equal(memories[0].header.format, "memories");
  assert.equal(memories.length, 6);
});

test("an unknown agent's export is not found", async () => {
  await assert.rejects(collect(client.agents.export("nobody")), NotFoundError);
});
