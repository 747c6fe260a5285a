#!/usr/bin/env python3
"""Writes into api/openapi.json the server's rule for an absent value.

The server takes `null` for an optional field of a JSON request body, at
any depth, as the field absent (encoding/json leaves the field as it
was), and an empty value of an optional query parameter as the parameter
absent (url.Values.Get). The document says the same:
  - every optional property of a request body's schema (reached from the
    operation's application/json schema through $ref, properties, items,
    additionalProperties and the anyOf/oneOf/allOf/then/else branches),
    and every map's value (an additionalProperties schema), admits null: "null" joins its `type` (and its `enum`), or, for a
    schema without `type` (a $ref, a union), it becomes
    {"anyOf": [schema, {"type": "null"}]};
  - every optional query parameter has `allowEmptyValue: true`.
Go's zero time, 0001-01-01T00:00:00Z, is what encoding/json leaves for a
time left out or null, so the server refuses a time a request carries
before the year 1970 (domain.EarliestClientYear) rather than take it as
none; every date-time of a request body says so with a pattern on the
year as written (EARLIEST_YEAR).
Run it again after adding a field; it changes only what breaks the rule.
TestTheDocumentSaysNullAndEmptyMeanAbsent (api/openapi_absent_test.go)
fails until it has run.

Usage: python3 test/openapi/absent.py, from the repository root.
"""
import json

DOC = "api/openapi.json"
# The year as written, 1970 to 9999 (domain.CheckClientTime reads it so).
EARLIEST_YEAR = "^(?:19[7-9][0-9]|[2-9][0-9]{3})-"
EARLIEST_NOTE = "Of the year 1970 or later: an earlier time, Go's zero time 0001-01-01T00:00:00Z among them, is refused (400 invalid_request, details.minimum)."


def main():
    with open(DOC, encoding="utf-8") as f:
        doc = json.load(f)
    schemas = doc["components"]["schemas"]
    seen = set()

    def resolve(schema):
        while isinstance(schema, dict) and "$ref" in schema:
            schema = schemas[schema["$ref"].split("/")[-1]]
        return schema

    def admits_null(schema):
        schema = resolve(schema)
        if not isinstance(schema, dict):
            return schema is True
        types = schema.get("type")
        if types == "null" or (isinstance(types, list) and "null" in types):
            return "enum" not in schema or None in schema["enum"]
        if "type" not in schema and "enum" in schema:
            return None in schema["enum"]
        return any(admits_null(b) for b in schema.get("anyOf", []) + schema.get("oneOf", []))

    def with_null(schema):
        if admits_null(schema):
            return schema
        if "type" in schema:
            types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            schema["type"] = types + ["null"]
            if "enum" in schema:
                schema["enum"].append(None)
            return schema
        if "enum" in schema and not ({"$ref", "anyOf", "oneOf", "allOf"} & schema.keys()):
            schema["enum"].append(None)
            return schema
        outer = {}
        if "description" in schema:
            outer["description"] = schema.pop("description")
        return {"anyOf": [schema, {"type": "null"}], **outer}

    def walk(schema, inherited=frozenset()):
        """inherited: the properties the enclosing schema requires, which
        its anyOf/oneOf/allOf branches describe without requiring again."""
        if not isinstance(schema, dict):
            return
        ref = schema.get("$ref")
        if ref:
            if ref in seen:
                return
            seen.add(ref)
            walk(resolve(schema), inherited)
        if schema.get("format") == "date-time":
            schema["pattern"] = EARLIEST_YEAR
            note = schema.get("description", "")
            if EARLIEST_NOTE not in note:
                schema["description"] = (note + " " + EARLIEST_NOTE).strip()
        required = inherited | set(schema.get("required", []))
        props = schema.get("properties", {})
        for name in list(props):
            walk(props[name])
            if name not in required:
                props[name] = with_null(props[name])
        walk(schema.get("items"))
        values = schema.get("additionalProperties")
        if isinstance(values, dict) and values:
            # A map's entry is optional too: the server takes an entry of
            # null as the entry absent (a layer of the processing patch).
            walk(values)
            schema["additionalProperties"] = with_null(values)
        for key in ("then", "else"):
            walk(schema.get(key), required)
        for key in ("anyOf", "oneOf", "allOf"):
            for branch in schema.get(key, []):
                walk(branch, required)
        for branch in schema.get("prefixItems", []):
            walk(branch)

    params = doc["components"].get("parameters", {})
    for item in doc["paths"].values():
        for op in item.values():
            if not isinstance(op, dict):
                continue
            media = op.get("requestBody", {}).get("content", {}).get("application/json")
            if media:
                walk(media.get("schema"))
            for p in op.get("parameters", []):
                if "$ref" in p:
                    p = params[p["$ref"].split("/")[-1]]
                if p.get("in") == "query" and not p.get("required"):
                    p["allowEmptyValue"] = True

    with open(DOC, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
