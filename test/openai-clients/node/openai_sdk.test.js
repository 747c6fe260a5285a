// The official OpenAI Node SDK against a real Engram: the server and the key
// come from ENGRAM_BASE_URL (…/v1) and ENGRAM_API_KEY, set by internal/cli's
// TestOfficialOpenAISDKs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import OpenAI from 'openai';

const baseURL = process.env.ENGRAM_BASE_URL;
const apiKey = process.env.ENGRAM_API_KEY;
assert.ok(baseURL && apiKey, 'ENGRAM_BASE_URL and ENGRAM_API_KEY must be set');
const client = new OpenAI({ apiKey, baseURL, maxRetries: 0 });

async function models() {
  const out = [];
  for await (const m of client.models.list()) out.push(m);
  return out;
}

test('models.list names models that embed', async () => {
  const listed = await models();
  assert.ok(listed.length > 0);
  for (const m of listed) {
    assert.equal(m.object, 'model');
    assert.ok(m.owned_by);
    assert.equal(typeof m.created, 'number');
    const res = await client.embeddings.create({ model: m.id, input: 'coffee in the morning' });
    assert.equal(res.model, m.id);
    assert.equal(res.data.length, 1);
  }
  assert.equal((await client.models.retrieve(listed[0].id)).id, listed[0].id);
});

test('single and batch, float and base64', async () => {
  const model = (await models())[0].id;
  const single = await client.embeddings.create({ model, input: 'rollback the release' });
  assert.equal(single.object, 'list');
  assert.ok(single.usage.prompt_tokens > 0);
  const texts = ['coffee in the morning', 'rollback the release', 'deploy on friday'];
  const float = await client.embeddings.create({ model, input: texts, encoding_format: 'float' });
  assert.deepEqual(float.data.map((d) => d.index), [0, 1, 2]);
  // Without encoding_format the SDK fetches base64 and decodes float32s, which
  // equal the JSON floats once rounded to float32.
  assert.deepEqual(float.data[1].embedding.map(Math.fround), single.data[0].embedding.map(Math.fround));
  const b64 = await client.embeddings.create({ model, input: texts, encoding_format: 'base64' });
  for (let i = 0; i < texts.length; i++) {
    const raw = b64.data[i].embedding;
    assert.equal(typeof raw, 'string');
    const bytes = Buffer.from(raw, 'base64');
    const floats = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
    assert.deepEqual(floats, float.data[i].embedding.map(Math.fround));
  }
});

test('typed errors', async () => {
  const wrong = new OpenAI({ apiKey: 'wrong', baseURL, maxRetries: 0 });
  await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401 && e.code === 'invalid_api_key');
  await assert.rejects(client.embeddings.create({ model: 'no-such-model', input: 'x' }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found' && e.param === 'model');
  await assert.rejects(client.models.retrieve('no-such-model'), (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
  await assert.rejects(client.embeddings.create({ model: 'default', input: [[1, 2, 3]] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'input' && e.type === 'invalid_request_error');
});
