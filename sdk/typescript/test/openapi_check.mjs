// Every exchange of the suite with a test server, checked against the
// API's OpenAPI document (api/openapi.json, as the server serves it at
// GET /v1/openapi.json). Importing this module wraps globalThis.fetch (the
// SDK's default fetch) and makes every test of the importing file fail
// when an exchange during it broke the document.
//
// The rule is the Go API suite's (api/openapi_test.go, validatingHandler):
// every response must be one the document describes for its operation,
// and a request the server accepts (2xx) must be one the document allows.
// A request the document refuses is still sent (the tests of bad input
// send them) and must then be refused by the server. A request to a route
// the document lacks that the server does not refuse with 404 or 405 is a
// violation too. The schemas are JSON Schema 2020-12 (OpenAPI 3.1's
// dialect), checked with Ajv against the whole document added as one
// schema, so the document's own $refs resolve as written.
import { afterEach } from "node:test";

import Ajv2020 from "ajv/dist/2020.js";

const DOC_ID = "urn:engram:openapi";
const realFetch = globalThis.fetch;
/** The document of each watched server, by host:port. */
const documents = new Map();
let violations = [];

const pointer = (...parts) => "#/" + parts.map((p) => String(p).replaceAll("~", "~0").replaceAll("/", "~1")).join("/");
const mediaType = (contentType) => (contentType ?? "").split(";")[0].trim().toLowerCase();

class Document {
  constructor(raw) {
    this.raw = raw;
    // strict: false because the document carries OpenAPI's own keywords
    // (example, discriminator) beside the schemas'.
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    this.ajv.addSchema(raw, DOC_ID);
    this.validators = new Map();
    this.routes = Object.keys(raw.paths)
      .map((template) => {
        const source = template
          .split("/")
          .map((s) => (/^\{\w+\}$/.test(s) ? `(?<${s.slice(1, -1)}>[^/]+)` : s.replace(/[.*+?^$()|[\]\\]/g, "\\$&")))
          .join("/");
        const literal = template.split("/").filter((s) => s && !s.startsWith("{")).length;
        return { template, pattern: new RegExp(`^${source}$`), literal };
      })
      // /v1/memories/batch before /v1/memories/{id}: the most literal match wins.
      .sort((a, b) => b.literal - a.literal);
  }

  find(method, path) {
    for (const route of this.routes) {
      const m = route.pattern.exec(path);
      const op = m && this.raw.paths[route.template][method];
      if (op) {
        const params = Object.fromEntries(Object.entries(m.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)]));
        return { template: route.template, op, params };
      }
    }
    return undefined;
  }

  /** The complaints of the schema at the pointer about value. */
  errors(value, ...parts) {
    const ref = pointer(...parts);
    let validate = this.validators.get(ref);
    if (!validate) {
      validate = this.ajv.compile({ $ref: DOC_ID + ref });
      this.validators.set(ref, validate);
    }
    if (validate(value)) return [];
    return validate.errors.map((e) => `${e.instancePath || "(root)"} ${e.message} ${JSON.stringify(e.params)}`);
  }

  /** An operation's parameters (its path's included), each with the pointer to its schema. */
  parameters(template, method) {
    const item = this.raw.paths[template];
    const out = [];
    for (const [base, params] of [
      [["paths", template, method], item[method].parameters ?? []],
      [["paths", template], item.parameters ?? []],
    ]) {
      params.forEach((p, i) => {
        let at = [...base, "parameters", i, "schema"];
        if (p.$ref) {
          const name = p.$ref.split("/").at(-1);
          p = this.raw.components.parameters[name];
          at = ["components", "parameters", name, "schema"];
        }
        out.push([p, at]);
      });
    }
    return out;
  }
}

/** A query or path parameter's text as its schema's type. */
function coerce(text, schema = {}) {
  const types = [schema.type].flat();
  if (types.includes("integer") || types.includes("number")) {
    const n = Number(text);
    return text !== "" && !Number.isNaN(n) ? n : text;
  }
  if (types.includes("boolean") && (text === "true" || text === "false")) return text === "true";
  return text;
}

/** What an exchange breaks of the document; body is undefined when the response was not read. */
export function checkExchange(doc, { method, url, headers, body: requestBody }, response, body) {
  const m = method.toLowerCase();
  const found = doc.find(m, url.pathname);
  const what = `${method} ${url.pathname} → ${response.status}`;
  if (!found) return response.status === 404 || response.status === 405 ? [] : [`${what}: the route is not in the document`];
  const { template, op, params: pathParams } = found;
  const problems = [];

  if (response.status >= 200 && response.status < 300) {
    const query = Object.fromEntries(url.searchParams);
    const params = doc.parameters(template, m);
    for (const [p, at] of params) {
      const source = p.in === "path" ? pathParams : p.in === "query" ? query : undefined;
      if (!source) continue;
      if (!(p.name in source)) {
        if (p.required) problems.push(`${what}: the request lacks the required ${p.in} parameter ${p.name}`);
        continue;
      }
      for (const e of doc.errors(coerce(source[p.name], p.schema), ...at)) problems.push(`${what}: ${p.in} parameter ${p.name}: ${e}`);
    }
    for (const q of Object.keys(query)) {
      if (!params.some(([p]) => p.in === "query" && p.name === q)) problems.push(`${what}: the query parameter ${q} is not in the document`);
    }
    const rb = op.requestBody;
    if (!rb && requestBody) problems.push(`${what}: the request has a body the document does not describe`);
    if (rb) {
      const media = mediaType(headers.get("content-type"));
      if (requestBody === undefined || requestBody === null) {
        if (rb.required) problems.push(`${what}: the request lacks its required body`);
      } else if (!(media in (rb.content ?? {}))) {
        problems.push(`${what}: request media type ${JSON.stringify(media)} is not in the document`);
      } else if (media === "application/json" && typeof requestBody === "string" && rb.content[media].schema) {
        for (const e of doc.errors(JSON.parse(requestBody), "paths", template, m, "requestBody", "content", media, "schema")) {
          problems.push(`${what}: request body ${e}`);
        }
      }
    }
  }

  const status = String(response.status);
  const responses = op.responses ?? {};
  const key = status in responses ? status : `${status[0]}XX` in responses ? `${status[0]}XX` : "default";
  if (!(key in responses)) return [...problems, `${what}: the status is not in the document`];
  let described = responses[key];
  let base = ["paths", template, m, "responses", key];
  if (described.$ref) {
    const name = described.$ref.split("/").at(-1);
    described = doc.raw.components.responses[name];
    base = ["components", "responses", name];
  }
  const media = mediaType(response.headers.get("content-type"));
  const contents = described.content ?? {};
  if (Object.keys(contents).length === 0) {
    if (body) problems.push(`${what}: a body (${media}) where the document describes none`);
    return problems;
  }
  if (!(media in contents)) return [...problems, `${what}: response media type ${JSON.stringify(media)} is not one of ${Object.keys(contents)}`];
  if (body !== undefined && media === "application/json" && contents[media].schema) {
    let value;
    try {
      value = JSON.parse(body);
    } catch (e) {
      return [...problems, `${what}: the response is not JSON: ${e.message}`];
    }
    for (const e of doc.errors(value, ...base, "content", media, "schema")) problems.push(`${what}: response body ${e}`);
  }
  return problems;
}

/** Checks the exchanges with the server at baseURL against the document it serves. */
export async function watch(baseURL) {
  const resp = await realFetch(`${baseURL}/v1/openapi.json`);
  if (!resp.ok) throw new Error(`GET /v1/openapi.json answered ${resp.status}`);
  documents.set(new URL(baseURL).host, new Document(await resp.json()));
}

globalThis.fetch = async function checkedFetch(input, init = {}) {
  const response = await realFetch(input, init);
  const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  const doc = documents.get(url.host);
  if (!doc) return response;
  const method = init.method ?? (input instanceof Request ? input.method : "GET");
  let requestBody = init.body;
  if (requestBody instanceof Uint8Array) requestBody = new TextDecoder().decode(requestBody);
  // A JSON answer is read from a clone, so the caller still reads it; other
  // bodies (the export's lines, HTML) are checked for their type only.
  const body = mediaType(response.headers.get("content-type")) === "application/json" ? await response.clone().text() : undefined;
  violations.push(...checkExchange(doc, { method, url, headers: new Headers(init.headers), body: requestBody }, response, body));
  return response;
};

afterEach(() => {
  const found = violations;
  violations = [];
  if (found.length) throw new Error(`exchanges that break api/openapi.json:\n${found.join("\n")}`);
});
