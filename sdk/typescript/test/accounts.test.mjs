// Accounts, sessions and keys through the SDK against the real binary.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";

import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  Engram,
  InsecureURLError,
  NotFoundError,
  VERSION,
} from "../dist/index.js";
import { mailedToken, register, start } from "./server.mjs";

let server;
let client;

before(async () => {
  server = await start();
  client = await register(server, "keys@example.com");
});
after(() => server?.stop());

describe("auth", () => {
  test("status names the user and its e-mail", async () => {
    const s = await client.auth.status();
    assert.equal(s.authenticated, true);
    assert.equal(s.email, "keys@example.com");
    assert.ok(s.user_id);
  });

  test("register, the mailed token, verify; a spent token is 410 token_used", async () => {
    const anon = new Engram({ baseURL: server.apiURL, apiKey: "" });
    const since = Date.now() - 1000;
    const reg = await anon.auth.register({ email: "Fresh@Example.com " });
    assert.ok(reg.user_id);
    const token = await mailedToken(server, "fresh@example.com", since);
    const v = await anon.auth.verify({ token });
    assert.equal(v.verified, true);
    assert.match(v.api_key, /^eng_/);
    await assert.rejects(anon.auth.verify({ token }), (e) => e.status === 410 && e.code === "token_used");
  });

  test("a bad e-mail is 400 invalid_request naming the field", async () => {
    const anon = new Engram({ baseURL: server.apiURL, apiKey: "" });
    await assert.rejects(anon.auth.register({ email: "not-an-address" }), (e) => {
      assert.ok(e instanceof BadRequestError);
      assert.equal(e.code, "invalid_request");
      assert.equal(e.details.field, "email");
      assert.ok(e.requestId);
      assert.ok(e.serverMessage.length > 0);
      return true;
    });
  });

  test("a wrong key is 401 AuthenticationError", async () => {
    const wrong = new Engram({ baseURL: server.apiURL, apiKey: "eng_" + "x".repeat(40) });
    await assert.rejects(wrong.auth.status(), (e) => e instanceof AuthenticationError && e.code === "unauthorized");
  });

  test("sessions.create gives a token that works as a credential", async () => {
    const keys = await client.keys.list();
    const first = await client.keys.create({ name: "for-login" });
    const session = await client.sessions.create({ api_key: first.key });
    assert.match(session.token, /^engs_/);
    assert.ok(Date.parse(session.expires_at) > Date.now());
    const viaSession = client.withOptions({ apiKey: session.token });
    assert.equal((await viaSession.auth.status()).user_id, (await client.auth.status()).user_id);
    assert.ok(keys.keys.length >= 1);
  });
});

describe("keys", () => {
  test("create, list, cycle, revoke", async () => {
    const created = await client.keys.create({ name: "ci" });
    assert.match(created.key, /^eng_/);
    assert.equal(created.prefix, created.key.slice(0, 12));
    const listed = (await client.keys.list()).keys.find((k) => k.id === created.id);
    assert.equal(listed.name, "ci");
    assert.equal(listed.is_active, true);

    const cycled = await client.keys.cycle(created.id);
    assert.equal(cycled.old_key_id, created.id);
    assert.equal(cycled.old_key_revoked, true);
    const oldKey = client.withOptions({ apiKey: created.key });
    await assert.rejects(oldKey.auth.status(), AuthenticationError);
    const newKey = client.withOptions({ apiKey: cycled.new_key });
    assert.equal((await newKey.auth.status()).authenticated, true);

    const revoked = await client.keys.revoke(cycled.new_key_id);
    assert.equal(revoked.revoked, true);
    await assert.rejects(client.keys.revoke(cycled.new_key_id), (e) => e instanceof ConflictError && e.code === "key_already_revoked");
    await assert.rejects(newKey.auth.status(), AuthenticationError);
  });

  test("an empty name is 400; an unknown key is 404", async () => {
    await assert.rejects(client.keys.create({ name: "" }), (e) => e instanceof BadRequestError && e.details.field === "name");
    await assert.rejects(client.keys.revoke("no-such-key"), NotFoundError);
    await assert.rejects(client.keys.cycle("no-such-key"), NotFoundError);
  });

  test("another user's key is 404 to this user", async () => {
    const other = await register(server, "keys-other@example.com");
    const theirs = (await other.keys.list()).keys[0];
    await assert.rejects(client.keys.revoke(theirs.id), NotFoundError);
    await assert.rejects(client.keys.cycle(theirs.id), NotFoundError);
    assert.equal((await other.keys.list()).keys.find((k) => k.id === theirs.id).is_active, true);
  });
});

describe("configuration", () => {
  test("ENGRAM_API_KEY and ENGRAM_BASE_URL are read when not given", async () => {
    const saved = { key: process.env.ENGRAM_API_KEY, url: process.env.ENGRAM_BASE_URL };
    const created = await client.keys.create({ name: "from-env" });
    process.env.ENGRAM_API_KEY = created.key;
    process.env.ENGRAM_BASE_URL = server.apiURL;
    try {
      const fromEnv = new Engram();
      assert.equal(fromEnv.baseURL, server.apiURL);
      assert.equal((await fromEnv.auth.status()).email, "keys@example.com");
    } finally {
      for (const [name, v] of [["ENGRAM_API_KEY", saved.key], ["ENGRAM_BASE_URL", saved.url]]) {
        if (v === undefined) delete process.env[name];
        else process.env[name] = v;
      }
    }
  });

  test("a secret is never sent over plain http to a host that is not loopback", async () => {
    const remote = new Engram({ baseURL: "http://engram.example.com/v1", apiKey: "eng_secret" });
    await assert.rejects(remote.auth.status(), InsecureURLError);
    await assert.rejects(remote.sessions.create({ api_key: "eng_secret" }), InsecureURLError);
    await assert.rejects(remote.auth.verify({ token: "engv_x" }), InsecureURLError);
  });

  test("health and readiness outside /v1", async () => {
    assert.deepEqual(await client.health(), { status: "ok" });
    const ready = await client.readiness();
    assert.equal(ready.status, "ready");
    assert.equal(typeof ready.backends, "object");
  });

  test("the package version is the server's release (VERSION) and package.json's", async () => {
    const { readFileSync } = await import("node:fs");
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    const lock = JSON.parse(readFileSync(new URL("../package-lock.json", import.meta.url), "utf8"));
    const release = readFileSync(new URL("../../../VERSION", import.meta.url), "utf8").trim();
    assert.equal(pkg.version, release, "package.json's version is not VERSION: run make sdk-version");
    assert.equal(lock.version, release, "package-lock.json's version is not VERSION: run make sdk-version");
    assert.equal(VERSION, release, "src/version.ts is not VERSION: run make sdk-version");
  });
});
