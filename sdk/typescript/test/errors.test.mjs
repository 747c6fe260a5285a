// Each failure status the API documents has an error class of its own,
// and 507 storage_full, provoked on the real binary by filling the file
// system under its data dir, arrives as StorageFullError.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { APIStatusError, InternalServerError, StorageFullError, errorFor } from "../dist/index.js";
import { register, start } from "./server.mjs";

const doc = JSON.parse(readFileSync(new URL("../../../api/openapi.json", import.meta.url), "utf8"));

/**
 * Every failure status the document lists, with its codes: those of its
 * operations' responses and those of its shared failure responses
 * (Failure<status>-<codes>, such as the 405 of a method a path does not list).
 */
function documentedFailures() {
  const out = new Map();
  const add = (status, response) => {
    const schema = response.content?.["application/json"]?.schema;
    const codes = schema?.allOf?.[1]?.properties?.error?.properties?.code?.enum ?? [];
    const known = out.get(Number(status)) ?? new Set();
    for (const code of codes) known.add(code);
    out.set(Number(status), known);
  };
  for (const item of Object.values(doc.paths)) {
    for (const op of Object.values(item)) {
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        if (!/^[45]\d\d$/.test(status)) continue; // "default": OpenAI's own error shape
        const ref = response.$ref?.split("/").at(-1);
        add(status, ref ? doc.components.responses[ref] : response);
      }
    }
  }
  for (const [name, response] of Object.entries(doc.components.responses)) {
    const status = /^Failure([45]\d\d)-/.exec(name)?.[1];
    if (status) add(status, response);
  }
  return out;
}

const failure = (status, code) => errorFor({ status, code, message: "m", requestId: "req_1" });

test("every failure status the document lists has a class of its own, which each of its codes gets", () => {
  const failures = documentedFailures();
  assert.ok(failures.get(507)?.has("storage_full"), "the document lists 507 storage_full");
  assert.ok(failures.get(405)?.has("method_not_allowed"), "the document lists 405 method_not_allowed");
  for (const [status, codes] of failures) {
    const cls = failure(status, "").constructor;
    assert.notEqual(cls, APIStatusError, `${status} has no class: add one to src/errors.ts`);
    if (status !== 500) assert.notEqual(cls, InternalServerError, `${status} has no class: add one to src/errors.ts`);
    for (const code of codes) {
      const err = failure(status, code);
      assert.ok(err instanceof cls, `${status} ${code} is a ${err.constructor.name}, not a ${cls.name}`);
      assert.equal(err.status, status);
      assert.equal(err.code, code);
    }
  }
});

/** fill appends to path until its file system has no byte left. */
function fill(path) {
  const fd = openSync(path, "a");
  try {
    for (const size of [1 << 20, 4 << 10, 1]) {
      const chunk = Buffer.alloc(size);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (e) {
          if (e.code !== "ENOSPC") throw e;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}

describe("against the real binary on a full disk", () => {
  let disk;
  let server;
  let client;

  before(async () => {
    // A tmpfs of its own to fill (mounting needs root, as the Go
    // full-disk tests do); room for the server's database while it runs.
    disk = mkdtempSync(join(tmpdir(), "engram-ts-disk-"));
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=48m", "tmpfs", disk]);
    server = await start([], { dataDir: join(disk, "data") });
    client = await register(server, "full-disk@example.com");
  });
  after(async () => {
    await server?.stop();
    if (disk) {
      execFileSync("umount", [disk]);
      rmSync(disk, { recursive: true, force: true });
    }
  });

  test("a write is refused with StorageFullError, and reads are still served", async () => {
    const note = { agent_id: "full", type: "notes", content: { content: "written while there was room" } };
    const stored = await client.memories.create(note);
    fill(join(disk, "filler"));
    let refused;
    // The server sees the disk full at its next write or free-space probe.
    for (let i = 0; i < 100 && !refused; i++) {
      refused = await client.memories
        .create({ ...note, content: { content: `refused ${i}` } })
        .then(() => undefined, (e) => e);
      if (!refused) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(refused instanceof StorageFullError, `got ${refused}`);
    assert.ok(refused instanceof InternalServerError);
    assert.equal(refused.status, 507);
    assert.equal(refused.code, "storage_full");
    assert.ok(refused.requestId);
    assert.ok(refused.retryAfter > 0, `retryAfter ${refused.retryAfter}`);
    assert.equal((await client.memories.get(stored.id)).id, stored.id);
  });
});
