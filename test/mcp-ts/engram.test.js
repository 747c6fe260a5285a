// The official TypeScript MCP SDK drives the real engram binary, over stdio
// (`engram mcp -s STACK` on a temporary local stack) and over streamable
// HTTP (`/mcp` of `engram serve` on a random loopback port, as a user
// registered through the outbox). Nobody on the Engram project wrote this
// client: what it accepts, other MCP clients accept.
//
// ENGRAM_BIN names the binary; without it (or without Node.js) the suite
// fails rather than skips. Run: ENGRAM_BIN=/path/to/engram node --test
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const bin = process.env.ENGRAM_BIN;
if (!bin || !existsSync(bin)) {
  throw new Error(`ENGRAM_BIN must name the engram binary to test (got ${JSON.stringify(bin)})`);
}

const TOOLS = ['add_memory', 'capture', 'search_memories', 'get_memory', 'list_memories',
  'update_memory', 'forget_memory', 'review_suggestions', 'memory_status'];

const cleanups = [];
after(async () => {
  for (const f of cleanups.reverse()) await f();
});

function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// hermeticEnv is what an engram process gets: the machine's PATH and temp
// space, and a HOME and ENGRAM_HOME of its own, so no setting of the
// developer's reaches the test.
function hermeticEnv(home) {
  const env = { HOME: home, ENGRAM_HOME: home };
  for (const name of ['PATH', 'TMPDIR', 'TZ', 'LANG']) {
    if (process.env[name] !== undefined) env[name] = process.env[name];
  }
  return env;
}

function newClient() {
  return new Client({ name: 'engram-ts-sdk-test', version: '1.0.0' });
}

// call calls a tool; the SDK checks structuredContent against the tool's
// output schema.
async function call(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  const text = (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
  return { res, text, out: res.structuredContent ?? {} };
}

async function ok(client, name, args) {
  const { res, text, out } = await call(client, name, args);
  assert.ok(!res.isError, `${name}(${JSON.stringify(args)}) failed: ${text}`);
  assert.ok(text.length > 0, `${name} returned no text rendering`);
  return out;
}

async function fails(client, name, args, code) {
  const { res, text, out } = await call(client, name, args);
  assert.equal(res.isError, true, `${name}(${JSON.stringify(args)}) succeeded: ${text}`);
  assert.equal(out.error?.code, code, `${name}: error ${JSON.stringify(out)}`);
  assert.match(text, new RegExp(code));
  return out.error;
}

// scenario is the steps every transport must pass: list tools, add, search
// (finds what it added), get, update, forget, review, status.
async function scenario(client, agent) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const want of TOOLS) assert.ok(names.includes(want), `tools ${names} lack ${want}`);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', `${t.name} input schema`);
    assert.equal(t.outputSchema?.type, 'object', `${t.name} declares no output schema`);
    assert.ok(t.description, `${t.name} has no description`);
  }
  const search = tools.find((t) => t.name === 'search_memories');
  assert.equal(search.annotations?.readOnlyHint, true, 'search_memories is read-only');
  const forget = tools.find((t) => t.name === 'forget_memory');
  assert.notEqual(forget.annotations?.readOnlyHint, true, 'forget_memory writes');

  const added = await ok(client, 'add_memory', {
    agent_id: agent, type: 'note',
    content: { content: 'the lighthouse keeper logs the tide at dawn' }, tags: ['coast'],
  });
  assert.equal(added.type, 'note');
  assert.ok(added.id, 'add_memory returned no id');

  const captured = await ok(client, 'capture', { agent_id: agent, text: 'heard gulls before the storm' });
  assert.equal(captured.type, 'raw_entry');

  const found = await ok(client, 'search_memories', { agent_id: agent, query: 'lighthouse tide dawn', limit: 5 });
  assert.ok(found.results.some((r) => r.id === added.id), `search did not find ${added.id}: ${JSON.stringify(found)}`);
  const hit = found.results.find((r) => r.id === added.id);
  for (const field of ['type', 'id', 'score', 'content', 'created_at', 'strength']) {
    assert.ok(field in hit, `search result lacks ${field}`);
  }

  const got = await ok(client, 'get_memory', { agent_id: agent, type: 'note', id: added.id });
  assert.equal(got.memory.id, added.id);
  assert.ok(got.memory.version >= 1);
  assert.ok(Array.isArray(got.provenance.sources) && Array.isArray(got.provenance.derived));

  const updated = await ok(client, 'update_memory', {
    agent_id: agent, type: 'note', id: added.id, version: got.memory.version,
    patch: { content: { content: 'the lighthouse keeper logs the tide at dusk' } },
  });
  const memoryAfter = updated.memory ?? updated;
  assert.match(memoryAfter.content.content, /dusk/);
  await fails(client, 'update_memory', {
    agent_id: agent, type: 'note', id: added.id, version: got.memory.version, patch: { tags: ['stale'] },
  }, 'precondition_failed');

  const listed = await ok(client, 'list_memories', { agent_id: agent, type: 'note' });
  assert.equal(listed.items.length, 1);

  const forgotten = await ok(client, 'forget_memory', { agent_id: agent, type: 'note', id: added.id, reason: 'superseded' });
  assert.equal(forgotten.memory.forgotten, true);
  const after = await ok(client, 'search_memories', { agent_id: agent, query: 'lighthouse tide', mode: 'keyword' });
  assert.ok(!after.results.some((r) => r.id === added.id), 'a forgotten memory is still found');

  const review = await ok(client, 'review_suggestions', { agent_id: agent, action: 'list' });
  assert.ok(!review.suggestions || Array.isArray(review.suggestions));
  await fails(client, 'review_suggestions', { agent_id: agent, action: 'reject', suggestion_id: 'sug_missing' }, 'not_found');

  const status = await ok(client, 'memory_status', { agent_id: agent });
  assert.ok(status.stats.total >= 1, `memory_status: ${JSON.stringify(status)}`);
  assert.equal(typeof status.anxiety.level, 'string');

  await fails(client, 'get_memory', { agent_id: agent, type: 'note', id: 'no-such-memory' }, 'not_found');
  const invalid = await fails(client, 'add_memory', { agent_id: agent, type: 'note', content: { content: '' } }, 'invalid_request');
  assert.match(String(invalid.details?.field ?? ''), /^content/, `the error names the field: ${JSON.stringify(invalid)}`);

  const stats = await client.readResource({ uri: `engram://agents/${agent}/stats` });
  assert.ok(JSON.parse(stats.contents[0].text).total >= 1);
  const prompt = await client.getPrompt({ name: 'session_start', arguments: { agent_id: agent } });
  assert.ok(prompt.messages[0].content.text.includes(agent));
}

test('stdio: engram mcp on a local stack', async () => {
  const home = tempDir('engram-mcp-ts-');
  const transport = new StdioClientTransport({
    command: bin, args: ['mcp', '-s', 'claire'], env: hermeticEnv(home), stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr += d; });
  const client = newClient();
  await client.connect(transport);
  try {
    await scenario(client, 'claire');
    // Bound to its stack: another agent is refused.
    const { res } = await call(client, 'memory_status', { agent_id: 'someone-else' });
    assert.equal(res.isError, true, 'engram mcp -s claire served another agent');
  } finally {
    await client.close();
  }
  assert.doesNotMatch(stderr, /panic/);
});

// startServe runs engram serve on a random loopback port and resolves
// with its base URL and data directory once /readyz answers.
async function startServe() {
  const home = tempDir('engram-serve-home-');
  const dataDir = tempDir('engram-serve-data-');
  const proc = spawn(bin, ['serve', '--addr', '127.0.0.1:0', '--data-dir', dataDir], {
    env: hermeticEnv(home), stdio: ['ignore', 'ignore', 'pipe'],
  });
  cleanups.push(() => new Promise((resolve) => {
    if (proc.exitCode !== null) return resolve();
    proc.once('exit', resolve);
    proc.kill('SIGTERM');
  }));
  const log = [];
  const addr = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`engram serve did not start:\n${log.join('\n')}`)), 30000);
    proc.once('exit', (code) => reject(new Error(`engram serve exited (${code}):\n${log.join('\n')}`)));
    createInterface({ input: proc.stderr }).on('line', (line) => {
      log.push(line);
      const m = /msg="engram serving" addr=(\S+)/.exec(line);
      let a = m?.[1];
      if (!a && line.startsWith('{')) {
        try { const rec = JSON.parse(line); if (rec.msg === 'engram serving') a = rec.addr; } catch { /* not JSON */ }
      }
      if (a) { clearTimeout(timer); resolve(a); }
    });
  });
  const base = `http://${addr}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/readyz`)).ok) break;
    } catch { /* not yet */ }
    if (i > 1500) throw new Error('engram serve never became ready');
    await new Promise((r) => setTimeout(r, 20));
  }
  return { base, dataDir };
}

async function postJSON(url, body) {
  const resp = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const env = await resp.json();
  assert.ok(resp.ok && env.success, `${url}: ${resp.status} ${JSON.stringify(env)}`);
  return env.data;
}

// register creates a verified user through the public API: register, read
// the token from the mail in the outbox, verify; it returns the API key.
async function register(base, dataDir, email) {
  await postJSON(`${base}/v1/auth/register`, { email });
  const outbox = join(dataDir, 'outbox');
  for (let i = 0; i < 500; i++) {
    const files = existsSync(outbox) ? readdirSync(outbox).filter((f) => f.endsWith('.eml')) : [];
    for (const f of files) {
      const mail = readFileSync(join(outbox, f), 'utf8');
      const token = /^(engv_[A-Za-z0-9]+)\r?$/m.exec(mail)?.[1];
      if (token && mail.includes(email)) {
        return (await postJSON(`${base}/v1/auth/verify`, { token })).api_key;
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no verification mail to ${email} in ${outbox}`);
}

function httpTransport(base, key, agent) {
  const url = new URL(`${base}/mcp`);
  if (agent) url.searchParams.set('agent_id', agent);
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  return new StreamableHTTPClientTransport(url, { requestInit: { headers } });
}

test('streamable HTTP: /mcp of engram serve', async () => {
  const { base, dataDir } = await startServe();
  const key = await register(base, dataDir, 'ts-sdk@example.com');

  const client = newClient();
  await client.connect(httpTransport(base, key, 'claire'));
  try {
    await scenario(client, 'claire');
    const { res } = await call(client, 'memory_status', { agent_id: 'bob' });
    assert.equal(res.isError, true, 'a connection bound to claire served bob');
  } finally {
    await client.close();
  }

  // Another user's key sees none of claire.
  const otherKey = await register(base, dataDir, 'ts-sdk-other@example.com');
  const other = newClient();
  await other.connect(httpTransport(base, otherKey));
  try {
    await fails(other, 'memory_status', { agent_id: 'claire' }, 'not_found');
    await fails(other, 'search_memories', { agent_id: 'claire', query: 'lighthouse' }, 'not_found');
  } finally {
    await other.close();
  }

  // No key, or a bad one: 401 with a Bearer challenge, and the SDK's
  // connect fails.
  for (const auth of [undefined, 'Bearer ek_live_not_a_key']) {
    const resp = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...(auth ? { Authorization: auth } : {}) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(resp.status, 401);
    assert.match(resp.headers.get('www-authenticate') ?? '', /^Bearer\b/);
  }
  await assert.rejects(newClient().connect(httpTransport(base, undefined)));

  const meta = await (await fetch(`${base}/.well-known/oauth-protected-resource`)).json();
  assert.equal(meta.resource, `${base}/mcp`);
  assert.deepEqual(meta.bearer_methods_supported, ['header']);
});
