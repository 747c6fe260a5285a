#!/usr/bin/env python3
"""Writes the failure responses of each operation of api/openapi.json.

Each operation answering in Engram's failure envelope gets one response
per status it can produce, with the enum of its error codes. The codes
of an operation are
  - those the API test suite observed for it: a run of the package with
    ENGRAM_OPENAPI_RECORD=<file> appends every (operation, status, code)
    of a failure to <file> (api/openapi_record_test.go), kept in
    test/openapi/observed_errors.txt;
  - those of the middleware every route, or every route of a kind, goes
    through (RULES below), whether a test provoked them or not.
A failure recorded for a method a documented path does not list (405
method_not_allowed) belongs to no operation: it becomes the shared
response Failure<status>-<code>, against which the API tests check it.
The validation of every response of the API tests against the document
then fails a test on a (status, code) its operation does not document,
and TestOpenAPIErrorStatusesFollowTheErrorTable checks each documented
code that is an error kind against api/httpstatus.

Usage: python3 test/openapi/error_table.py [observed file …]
(default test/openapi/observed_errors.txt), from the repository root.
"""
import json
import sys
from collections import defaultdict

DOC = "api/openapi.json"
OBSERVED = "test/openapi/observed_errors.txt"
FAILURE = "#/components/responses/Failure"
# The record's name for a method a documented path does not list
# (api/openapi_test.go, undocumentedMethod): no operation can carry its
# failures, so each becomes a shared response of its own, which the
# document's description names.
UNDOCUMENTED_METHOD = "undocumented_method"


def rules(op_id, op, doc):
    """(status, code) pairs the middleware produces for op."""
    out = {(500, "internal"), (413, "payload_too_large")}  # every route: a panic or a store error; withIOBounds
    if op_id != "get_healthz":
        out.add((503, "server_busy"))  # limitInFlight spares /healthz only
    if "application/json" in op.get("requestBody", {}).get("content", {}):
        # decodeJSON: malformed JSON or unknown field, wrong content type,
        # the body too slow to arrive.
        out |= {(400, "invalid_request"), (415, "unsupported_media_type"), (408, "request_timeout")}
    if any(param_in(p, doc) in ("query", "header") for p in op.get("parameters", [])):
        # a query parameter out of its range, or a header (Engram-Source)
        # with a value the server refuses, whatever the test suite provoked.
        out.add((400, "invalid_request"))
    authenticated = op.get("security", doc.get("security")) != []
    ip_limited = op_id in {"post_v1_auth_register", "post_v1_auth_verify", "post_v1_auth_login"}
    if authenticated:
        out.add((401, "unauthorized"))  # requireAuth
    if authenticated or ip_limited:
        # the per-credential or per-IP rate limit, then awaitConsistencyToken
        # (and, authenticated, the wait for the credential changes).
        out |= {(429, "rate_limited"), (400, "invalid_consistency_token"), (400, "consistency_token_ahead_of_log"),
                (429, "too_many_consistency_waits"), (503, "not_yet_consistent")}
    return out


def param_in(param, doc):
    """Where param (inline or a $ref into components) is sent."""
    ref = param.get("$ref")
    if ref:
        param = doc["components"]["parameters"][ref.rsplit("/", 1)[1]]
    return param.get("in")


def response(status, codes):
    headers = {"X-Request-ID": {"schema": {"type": "string"}}}
    if status in (429, 503):
        headers["Retry-After"] = {"description": "Seconds to wait, when the server knows.", "schema": {"type": "integer"}}
    if status == 405:
        headers["Allow"] = {"description": "The methods the path answers (RFC 9110).", "required": True, "schema": {"type": "string"}}
    return {
        "description": ", ".join(codes),
        "headers": headers,
        "content": {"application/json": {"schema": {"allOf": [
            {"$ref": "#/components/schemas/Failure"},
            {"properties": {"error": {"properties": {"code": {"enum": codes}}}}},
        ]}}},
    }


def main(files):
    with open(DOC, encoding="utf-8") as f:
        doc = json.load(f)
    observed = defaultdict(set)
    for name in files:
        with open(name, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    op_id, status, code = line.split()
                    observed[op_id].add((int(status), code))
    components = doc["components"]["responses"]
    for name in [n for n in components if n.startswith("Failure") and n != "Failure"]:
        del components[name]
    ops = {}
    for item in doc["paths"].values():
        for op in item.values():
            if isinstance(op, dict) and "operationId" in op:
                ops[op["operationId"]] = op
    for op_id in observed:
        if op_id not in ops and op_id != UNDOCUMENTED_METHOD:
            sys.exit(f"{op_id}: observed but not in the document")
    for status, code in observed[UNDOCUMENTED_METHOD]:
        components[f"Failure{status}-{code}"] = response(status, [code])
    for op_id, op in ops.items():
        responses = op["responses"]
        failures = {s: r for s, r in responses.items() if r.get("$ref", "").startswith(FAILURE)}
        if not failures:
            continue  # OpenAI's error shape, or /mcp's transport
        for s in failures:
            del responses[s]
        by_status = defaultdict(set)
        for status, code in rules(op_id, op, doc) | observed[op_id]:
            by_status[status].add(code)
        for status in sorted(by_status):
            codes = sorted(by_status[status])
            name = f"Failure{status}-" + "-".join(codes)
            components.setdefault(name, response(status, codes))
            responses[str(status)] = {"$ref": "#/components/responses/" + name}
    if f'"{FAILURE}"' not in json.dumps(doc["paths"]):
        components.pop("Failure", None)  # the catch-all the first run replaced
    doc["components"]["responses"] = dict(sorted(components.items()))
    with open(DOC, "w", encoding="utf-8") as f:
        f.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:] or [OBSERVED])
