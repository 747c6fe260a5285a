// Webhooks through the SDK against the real binary (run with
// --webhook-allow-private, so a receiver on loopback may register), with a
// receiver on loopback that checks each delivery with verifyWebhook.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";

import {
  BadRequestError,
  DELIVERY_HEADER,
  NotFoundError,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  verifyWebhook,
} from "../dist/index.js";
import { register, start } from "./server.mjs";

let server;
let client;
let receiver;
const got = [];
const waiting = [];
// The receiver answers its first request 500, then 200.
let answers = [500];

before(async () => {
  server = await start(["--webhook-allow-private", "--webhook-backoff", "50ms", "--webhook-max-attempts", "3"]);
  client = await register(server, "hooks@example.com");
  receiver = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(answers.shift() ?? 200);
      res.end();
      while (waiting.length && waiting[0].n <= got.length) waiting.shift().resolve();
    });
  });
  await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
});
after(() => {
  receiver?.close();
  server?.stop();
});

function received(n) {
  if (got.length >= n) return Promise.resolve();
  return new Promise((resolve) => waiting.push({ n, resolve }));
}

describe("webhooks", () => {
  test("create, deliver signed with a retry, log, delete", async () => {
    const url = `http://127.0.0.1:${receiver.address().port}/hook`;
    const hook = await client.webhooks.create({ url, events: ["memory.created"] });
    assert.match(hook.secret, /^whsec_/);
    const { webhooks } = await client.webhooks.list();
    assert.deepEqual(webhooks.map((w) => w.id), [hook.id]);
    assert.equal(webhooks[0].secret, undefined);

    const created = await client.memories.create({ agent_id: "ts-hooks", type: "notes", content: { content: "hi" } });
    await received(2);
    const [first, second] = got;
    assert.equal(second.headers[DELIVERY_HEADER.toLowerCase()], first.headers[DELIVERY_HEADER.toLowerCase()]);
    const ts = second.headers[TIMESTAMP_HEADER.toLowerCase()];
    const sig = second.headers[SIGNATURE_HEADER.toLowerCase()];
    assert.equal(await verifyWebhook(hook.secret, second.body, ts, sig), true);
    assert.equal(await verifyWebhook(hook.secret, second.body.toString("utf8"), ts, sig), true);
    assert.equal(await verifyWebhook("whsec_other", second.body, ts, sig), false);
    assert.equal(await verifyWebhook(hook.secret, second.body, ts, sig, { now: Number(ts) + 3600 }), false);
    assert.equal(JSON.parse(second.body).data.memory_id, created.id);

    let page;
    for (let i = 0; i < 400; i++) {
      page = await client.webhooks.deliveries(hook.id, { limit: 10 });
      if (page.deliveries[0]?.status === "delivered") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(page.deliveries[0].status, "delivered");
    assert.equal(page.deliveries[0].attempts, 2);
    assert.equal(page.next_cursor, null);
    const all = [];
    for await (const d of client.webhooks.deliveries(hook.id, { limit: 1 })) all.push(d.id);
    assert.deepEqual(all, [page.deliveries[0].id]);

    const other = await register(server, "other-hooks@example.com");
    await assert.rejects(other.webhooks.deliveries(hook.id), (e) => e instanceof NotFoundError);
    assert.deepEqual((await other.webhooks.list()).webhooks, []);

    assert.equal((await client.webhooks.delete(hook.id)).deleted, true);
    assert.deepEqual((await client.webhooks.list()).webhooks, []);
  });

  test("an unknown event is 400 invalid_webhook_events naming the field", async () => {
    await assert.rejects(client.webhooks.create({ url: "https://example.com/h", events: ["memory.exploded"] }), (e) => {
      assert.ok(e instanceof BadRequestError);
      assert.equal(e.code, "invalid_webhook_events");
      assert.equal(e.details.field, "events");
      return true;
    });
  });
});
