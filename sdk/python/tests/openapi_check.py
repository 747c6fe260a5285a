"""Every exchange of the suite with a test server, checked against the API's
OpenAPI document (api/openapi.json, as the server serves it at
GET /v1/openapi.json).

The rule is the Go API suite's (api/openapi_test.go, validatingHandler):
every response must be one the document describes for its operation, and a
request the server accepts (2xx) must be one the document allows. A request
the document refuses is still sent (the tests of bad input send them) and
must then be refused by the server. A request to a route the document lacks
that the server does not refuse with 404 or 405 is a violation too.

The schemas are JSON Schema 2020-12 (OpenAPI 3.1's dialect), checked with
jsonschema against the whole document registered as one resource, so the
document's own $refs resolve as written.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import httpx
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DOC_URI = "urn:engram:openapi"
METHODS = ("get", "put", "post", "patch", "delete")


def _pointer(*parts: str) -> str:
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


@dataclass
class Route:
    template: str
    pattern: re.Pattern[str]
    literal_segments: int


@dataclass
class Document:
    """The document of one server, with a validator per schema location."""

    raw: dict[str, Any]
    routes: list[Route] = field(default_factory=list)
    _validators: dict[str, Draft202012Validator] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.registry: Registry[Any] = Registry().with_resource(DOC_URI, Resource(self.raw, DRAFT202012))
        for template in self.raw["paths"]:
            regex = re.sub(r"\\\{([A-Za-z_][A-Za-z0-9_]*)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
            literal = sum(1 for s in template.split("/") if s and not s.startswith("{"))
            self.routes.append(Route(template, re.compile(f"^{regex}$"), literal))
        # /v1/memories/batch before /v1/memories/{id}: the most literal match wins.
        self.routes.sort(key=lambda r: -r.literal_segments)

    def find(self, method: str, path: str) -> tuple[str, dict[str, Any], dict[str, str]] | None:
        for route in self.routes:
            m = route.pattern.match(path)
            if m and method.lower() in self.raw["paths"][route.template]:
                return route.template, self.raw["paths"][route.template][method.lower()], m.groupdict()
        return None

    def errors(self, value: Any, *pointer: str) -> list[str]:
        """The schema at pointer's complaints about value."""
        ref = _pointer(*pointer)
        v = self._validators.get(ref)
        if v is None:
            v = Draft202012Validator({"$ref": DOC_URI + ref}, registry=self.registry)
            self._validators[ref] = v
        return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in v.iter_errors(value)]

    def parameters(self, template: str, method: str) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
        """An operation's parameters (its path's included) with the pointer to each one's schema."""
        item = self.raw["paths"][template]
        out = []
        for base, params in (
            (("paths", template, method), item[method].get("parameters", [])),
            (("paths", template), item.get("parameters", [])),
        ):
            for i, p in enumerate(params):
                pointer = (*base, "parameters", str(i), "schema")
                if "$ref" in p:
                    name = p["$ref"].split("/")[-1]
                    p = self.raw["components"]["parameters"][name]
                    pointer = ("components", "parameters", name, "schema")
                out.append((p, pointer))
        return out


def _coerce(value: str, schema: dict[str, Any]) -> Any:
    """A query or path parameter's text as its schema's type."""
    types = schema.get("type")
    types = types if isinstance(types, list) else [types]
    try:
        if "integer" in types:
            return int(value)
        if "number" in types:
            return float(value)
    except ValueError:
        return value
    if "boolean" in types and value in ("true", "false"):
        return value == "true"
    return value


def _media(content_type: str) -> str:
    return content_type.split(";")[0].strip().lower()


def check_exchange(doc: Document, request: httpx.Request, response: httpx.Response, body: bytes | None) -> list[str]:
    """What the exchange breaks of the document; body is None when the
    response was streamed to the caller unread."""
    method, path = request.method, request.url.path
    found = doc.find(method, path)
    what = f"{method} {path} → {response.status_code}"
    if found is None:
        if response.status_code in (404, 405):
            return []
        return [f"{what}: the route is not in the document"]
    template, op, path_params = found
    problems: list[str] = []
    m = method.lower()

    if 200 <= response.status_code < 300:
        query = dict(parse_qsl(request.url.query.decode(), keep_blank_values=True))
        params = doc.parameters(template, m)
        for p, pointer in params:
            source = path_params if p["in"] == "path" else query if p["in"] == "query" else None
            if source is None:
                continue
            if p["name"] not in source:
                if p.get("required"):
                    problems.append(f"{what}: the request lacks the required {p['in']} parameter {p['name']}")
                continue
            value = _coerce(source[p["name"]], p.get("schema", {}))
            problems += [f"{what}: {p['in']} parameter {p['name']}: {e}" for e in doc.errors(value, *pointer)]
        documented = {(p["in"], p["name"]) for p, _ in params}
        problems += [f"{what}: the query parameter {q} is not in the document" for q in query if ("query", q) not in documented]
        rb = op.get("requestBody")
        try:
            content: bytes | None = request.content
        except httpx.RequestNotRead:  # a streamed body (the import's lines): its media type is checked
            content = None
        streamed = content is None
        if rb is None and (content or streamed):
            problems.append(f"{what}: the request has a body the document does not describe")
        elif rb is not None:
            media = _media(request.headers.get("content-type", ""))
            if not content and not streamed:
                if rb.get("required"):
                    problems.append(f"{what}: the request lacks its required body")
            elif media not in rb.get("content", {}):
                problems.append(f"{what}: request media type {media!r} is not in the document")
            elif content and media == "application/json" and "schema" in rb["content"][media]:
                value = json.loads(content)
                pointer = ("paths", template, m, "requestBody", "content", media, "schema")
                problems += [f"{what}: request body {e}" for e in doc.errors(value, *pointer)]

    status = str(response.status_code)
    responses = op.get("responses", {})
    key = status if status in responses else f"{status[0]}XX" if f"{status[0]}XX" in responses else "default"
    if key not in responses:
        return problems + [f"{what}: the status is not in the document"]
    described = responses[key]
    if "$ref" in described:
        name = described["$ref"].split("/")[-1]
        described = doc.raw["components"]["responses"][name]
        base: tuple[str, ...] = ("components", "responses", name)
    else:
        base = ("paths", template, m, "responses", key)
    content_types = described.get("content", {})
    media = _media(response.headers.get("content-type", ""))
    if not content_types:
        if response.headers.get("content-length", "0") != "0" and body:
            problems.append(f"{what}: a body ({media}) where the document describes none")
        return problems
    if media not in content_types:
        return problems + [f"{what}: response media type {media!r} is not one of {sorted(content_types)}"]
    if body is not None and media == "application/json" and "schema" in content_types[media]:
        try:
            value = json.loads(body)
        except ValueError as e:
            return problems + [f"{what}: the response is not JSON: {e}"]
        problems += [
            f"{what}: response body {e}" for e in doc.errors(value, *base, "content", media, "schema")
        ]
    return problems


class Checker:
    """Wraps httpx's send of both clients so that each exchange with a
    registered server's origin is checked; violations are kept until
    taken (the suite's autouse fixture fails the test that made them)."""

    def __init__(self) -> None:
        self.docs: dict[str, Document] = {}
        self.violations: list[str] = []
        self._lock = threading.Lock()
        self._send = httpx.Client.send
        self._async_send = httpx.AsyncClient.send

    def register(self, base_url: str) -> None:
        """Check the exchanges with the server at base_url (scheme://host:port)
        against the document it serves."""
        resp = httpx.get(base_url + "/v1/openapi.json")
        resp.raise_for_status()
        self.docs[str(httpx.URL(base_url).netloc.decode())] = Document(resp.json())

    def take(self) -> list[str]:
        with self._lock:
            out, self.violations = self.violations, []
        return out

    def _check(self, request: httpx.Request, response: httpx.Response, body: bytes | None) -> None:
        doc = self.docs.get(request.url.netloc.decode())
        if doc is None:
            return
        problems = check_exchange(doc, request, response, body)
        if problems:
            with self._lock:
                self.violations += problems

    def install(self) -> None:
        checker = self
        send, async_send = self._send, self._async_send

        def checked_send(client: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
            response = send(client, request, **kwargs)
            streamed = kwargs.get("stream", False)
            checker._check(request, response, None if streamed else response.read())
            return response

        async def checked_async_send(client: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> httpx.Response:
            response = await async_send(client, request, **kwargs)
            streamed = kwargs.get("stream", False)
            checker._check(request, response, None if streamed else await response.aread())
            return response

        httpx.Client.send = checked_send  # type: ignore[method-assign,assignment]
        httpx.AsyncClient.send = checked_async_send  # type: ignore[method-assign,assignment]

    def uninstall(self) -> None:
        httpx.Client.send = self._send  # type: ignore[method-assign]
        httpx.AsyncClient.send = self._async_send  # type: ignore[method-assign]


# The one checker of the test process: installed by conftest.py for the
# whole session, fed each server's document by Server.
CHECKER = Checker()
