"""schemathesis hooks of TestSchemathesis (internal/cli/e2e_schemathesis_test.go).

The test seeds one user's data through the API (an agent, memories of
several types, raw entries, suggestions, a job, webhooks, extra keys) and
writes their ids to the JSON file named by ENGRAM_FUZZ_SEED. These hooks
put those real ids into the generated requests, so the fuzzer reaches the
routes' success paths instead of only their 404s, in one of two passes
(ENGRAM_FUZZ_PASS):

owner         the seeding user's key: positive cases (valid by the
              document) get the seeded ids; negative cases keep their
              generated ids, so malformed ids stay fuzzed too.
cross_tenant  another user's key: every case gets the seeded ids, and the
              check below fails any answer that lets that user read or
              change the seeding user's objects.

The owner pass also runs schemathesis's stateful phase, which follows the
document's links from a create to the routes that use what it created:
there a value a link took from an earlier answer is kept, and each
resource a create answered with is read again with another user's key
(ENGRAM_FUZZ_OTHER_KEY), which must answer 404. Import bodies
(application/x-ndjson) are drawn from the lines of a real export of the
seeded agent, mixed with malformed lines; a refused import must leave
its agent's event log and memory count as they were.

In both passes the valid requests get the data a document cannot state
(docs/api.md lists it): the account routes that take no credential a real
secret of the pass (ENGRAM_FUZZ_KEY, the pass's API key, for login; a
unspent verification token of the seed for each verify, several per phase), so each
reaches its success instead of only its refusals; the embeddings routes
(OpenAI's, generate, batch, bulk re-embedding) a model the server serves,
a similarity search a vector of the agent's dimensions, a search a time
window that is not empty, agent settings lint bounds in order, a webhook
a URL it can reach, a memory's derived_from memories of the agent it
writes to,
a client's time one not in the future, a pushed event fresh ids; the
cancel route a job still running, and the bulk re-embedding and sync push
an agent of their own, per phase. Every
exchange is appended to ENGRAM_FUZZ_LOG as "METHOD PATH PHASE
positive|negative STATUS CODE", from which TestSchemathesis names the
operations behind a schema validation mismatch, which fails it.
"""

from __future__ import annotations

import datetime
import itertools
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator, MutableMapping
from typing import Any

import schemathesis
from hypothesis import strategies as st
from schemathesis import HookContext
from schemathesis.core import NotSet

SEED: dict[str, Any] = json.loads(open(os.environ["ENGRAM_FUZZ_SEED"], encoding="utf-8").read())
PASS = os.environ["ENGRAM_FUZZ_PASS"]
if PASS not in ("owner", "cross_tenant"):
    raise ValueError(f"ENGRAM_FUZZ_PASS={PASS!r}: want owner or cross_tenant")
KEY = os.environ["ENGRAM_FUZZ_KEY"]
LOG = os.environ["ENGRAM_FUZZ_LOG"]
# If set, every exchange is also appended there whole, as a JSON line (the
# request's path with its values, query, headers, body; the answer's
# status and body), so a failure of a long run can be traced to the
# request that caused it (TestSchemathesis's ENGRAM_TEST_FUZZ_API_LOGS).
TRACE = os.environ.get("ENGRAM_FUZZ_TRACE", "")
# The server's base URL (http://host:port), for the checks' own requests.
BASE_URL = os.environ["ENGRAM_FUZZ_BASE_URL"]
# Another user's key, with which the owner pass reads again what its
# stateful phase created (none in the cross-tenant pass).
OTHER_KEY = os.environ.get("ENGRAM_FUZZ_OTHER_KEY", "")

# Which seeded ids a path parameter takes, by (method, path template). A
# route that destroys or changes its object's state gets objects of its
# own, so the routes after it in the run still find theirs; an operation
# not listed takes the default of its parameter's name.
ROUTE_IDS: dict[tuple[str, str], list[str]] = {
    ("DELETE", "/v1/agents/{agent_id}"): [SEED["doomed_agent"]],
    ("PATCH", "/v1/agents/{agent_id}/settings"): [SEED["settings_agent"]],
    ("DELETE", "/v1/memories/{id}"): [SEED["doomed_memory"]],
    ("POST", "/v1/memories/{id}/recover"): [SEED["forgotten_memory"]],
    ("GET", "/v1/suggestions/{id}"): SEED["suggestions"],
    ("POST", "/v1/suggestions/{id}/accept"): SEED["suggestions"][0:1],
    ("POST", "/v1/suggestions/{id}/reject"): SEED["suggestions"][1:2],
    ("POST", "/v1/suggestions/{id}/dismiss"): SEED["suggestions"][2:3],
    ("DELETE", "/v1/webhooks/{webhook_id}"): [SEED["doomed_webhook"]],
}
DEFAULT_IDS: dict[str, list[str]] = {
    "agent_id": [SEED["agent"]],
    "id": SEED["memories"],
    "job_id": [SEED["running_jobs"]["examples"]],
    "webhook_id": [SEED["webhook"]],
    "key_id": [SEED["cycled_keys"]["examples"]],
    "model": [SEED["model"]],
}

# Each (operation, parameter) walks through its ids in turn: with one
# worker and a fixed seed the run stays repeatable.
_turns: dict[tuple[str, str, str], Iterator[str]] = {}


# A text field of each memory type, by its name in answers, which a
# content patch of a memory of that type may name.
PATCHED_FIELD = {
    "raw_entry": "content",
    "note": "content",
    "belief": "statement",
    "episode": "outcome",
    "goal": "title",
    "value": "statement",
    "playbook": "description",
    "relationship": "entity_name",
    "drive": "drive_type",
}
# The spellings seedFuzzData writes its memories' types in.
SEEDED_TYPE = {"raw_entry": "raw_entry", "notes": "note", "beliefs": "belief", "episodes": "episode", "goals": "goal"}


def memory_type(memory_id: Any) -> str | None:
    """The type of a memory of the pass's user, by its name in answers: a
    seeded one's from the seed, another's (one a create of the stateful
    phase answered with, which a link brings to the patch) read back."""
    seeded = SEED["memory_types"].get(memory_id)
    if seeded is not None:
        return SEEDED_TYPE[seeded]
    if not isinstance(memory_id, str):
        return None
    status, answer = api_get(f"/v1/memories/{urllib.parse.quote(memory_id, safe='')}", KEY)
    return answer["data"]["type"] if status == 200 else None


_verify_tokens: dict[str, Any] = {}


# A time the document allows: RFC 3339 of the year 1970 or later (its
# pattern), at any offset. schemathesis draws a date-time from the format
# and then filters by the pattern, which drops about one draw in five; a
# pushed batch holds many times, so nearly every body was dropped
# (filter_too_much on POST /v1/sync/events at make fuzz-api's budget).
schemathesis.openapi.format(
    "date-time",
    st.builds(
        lambda when, minutes: when.replace(tzinfo=datetime.timezone(datetime.timedelta(minutes=minutes))).isoformat(),
        st.datetimes(min_value=datetime.datetime(1970, 1, 2), max_value=datetime.datetime(9999, 12, 30)),
        st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59),
    ),
)


def next_verify_token(phase: str) -> str:
    """The phase's next unspent verification token; the last once spent
    (its 410 then says the budget outran the tokens the test made)."""
    tokens = SEED["verify_tokens"][PASS][phase]
    turn = _verify_tokens.setdefault(phase, iter(tokens))
    return next(turn, tokens[-1])


def seeded_id(method: str, path: str, name: str) -> str | None:
    # Every route listed in ROUTE_IDS has one path parameter.
    ids = ROUTE_IDS.get((method, path), DEFAULT_IDS.get(name))
    if not ids:
        return None
    turn = _turns.setdefault((method, path, name), itertools.cycle(ids))
    return next(turn)


def is_positive(case: Any) -> bool:
    return case.meta is not None and case.meta.generation.mode.name == "POSITIVE"


def phase_of(case: Any) -> str:
    return str(case.meta.phase.name.value) if case.meta is not None else "examples"


def in_the_past(value: Any) -> Any:
    """A generated RFC 3339 time, moved to 2020 when it is later than now:
    the server refuses a client's time more than 5 minutes ahead of its
    clock, which no document can state."""
    if not isinstance(value, str):
        return value
    try:
        when = datetime.datetime.fromisoformat(value)
    except ValueError:
        return value
    if when.tzinfo is None or when <= datetime.datetime.now(datetime.timezone.utc):
        return value
    return "2020" + value[4:]


def parsed_time(value: Any) -> datetime.datetime | None:
    """value as an aware time, or None when it is not one Python reads."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def with_time_window(search: dict[str, Any]) -> None:
    """A search's created_before later than its created_after when it has
    both (the server refuses an empty window, which no document can state;
    the format alone lets schemathesis draw the same time for both)."""
    after, before = parsed_time(search.get("created_after")), parsed_time(search.get("created_before"))
    if after is None or before is None or before > after:
        return
    try:
        search["created_before"] = (after + datetime.timedelta(seconds=1)).isoformat()
    except OverflowError:  # created_after is the last second of year 9999
        search["created_after"] = (before - datetime.timedelta(seconds=1)).isoformat()


def seeded_refs(refs: Any, agent: str) -> Any:
    """derived_from of a valid request: memories of the agent it writes to,
    as "type:id" (a generated id names no memory, and a memory of another
    agent is rightly refused, 400 naming the reference)."""
    if not isinstance(refs, list):
        return refs
    if agent == SEED["agent"]:
        return [f"{SEED['memory_types'][i]}:{i}" for i in itertools.islice(_derived, len(refs))]
    ref = stateful_ref() if agent == SEED["stateful_agent"]["agent"] else memory_of(agent)
    return [ref for _ in refs] if ref else []


def memory_of(agent: str) -> str | None:
    """A memory of the agent as "type:id", None when it has none (an
    agent a link named, which schemathesis may give a create too)."""
    status, page = api_get(f"/v1/memories?agent_id={urllib.parse.quote(agent, safe='')}&limit=1", KEY)
    memories = page["data"]["memories"] if status == 200 else []
    return f"{memories[0]['type']}:{memories[0]['id']}" if memories else None


# The seeded agent's memories, in turn, for derived_from.
_derived = itertools.cycle(SEED["memories"])

# The note of the stateful phase's agent its memories derive from: the
# seeded one, until a link deletes the agent (one from a memory's create
# leads to the agent's delete) and takes the note with it.
_stateful_ref = [SEED["stateful_agent"]["ref"]]


def stateful_ref() -> str:
    """A reference to a note of the stateful phase's agent that exists: a
    reference to a memory gone with its agent is rightly refused (400
    invalid_request, derived_from not found), which a valid request must
    not be, so the note is written again (which makes the agent again)."""
    memory_id = _stateful_ref[0].split(":", 1)[1]
    status, _ = api_get(f"/v1/memories/{memory_id}", KEY)
    if status == 200:
        return _stateful_ref[0]
    note = {"agent_id": SEED["stateful_agent"]["agent"], "type": "notes", "content": {"content": SEED["marker"] + " stateful note"}}
    status, answer = api_call("POST", "/v1/memories", KEY, note)
    if status != 201:
        raise RuntimeError(f"the stateful phase's note could not be written again: {status} {answer}")
    _stateful_ref[0] = "notes:" + answer["data"]["id"]
    return _stateful_ref[0]


def memory_agent(phase: str) -> str:
    """The agent a valid request writes memories to: the seeded one, whose
    memories the routes after it read, except in the stateful phase, which
    reads what it wrote itself through the links and may delete its agent
    (a link from a memory's create leads there)."""
    return SEED["stateful_agent"]["agent"] if phase == "stateful" else SEED["agent"]


def memory_target(case: Any) -> str:
    """The agent a valid memory create or batch writes to: one a link of
    the stateful phase gave it (schemathesis also reuses such values where
    no link leads), else the phase's (with_seeded_ids puts it in)."""
    agent = case.body.get("agent_id")
    return agent if is_linked(case, agent) else memory_agent(phase_of(case))


def with_memory_data(memory: Any, agent: str) -> None:
    if isinstance(memory, dict):
        if "created_at" in memory:
            memory["created_at"] = in_the_past(memory["created_at"])
        if "derived_from" in memory:
            memory["derived_from"] = seeded_refs(memory["derived_from"], agent)


_fresh = itertools.count(1)


def fresh_id() -> str:
    """A canonical UUID no other request of the run sent (the same in every
    run: the run stays repeatable)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"engram-fuzz/{PASS}/{next(_fresh)}"))


# commands.promotedIDSpace: the namespace of the ids of memories accepted
# from suggestions.
PROMOTED_ID_SPACE = uuid.UUID("6f1f4c1e-5b0e-4c47-9d0b-2a6c5e8f3a71")

# The times of a pushed event's payload, by field name.
EVENT_TIMES = ("created_at", "updated_at", "forgotten_at", "recovered_at", "at", "verified_at", "changed_at", "imported_at", "exported_at")


def with_sync_data(event: Any, ref: str) -> None:
    """A pushed event of a valid request: its times not in the future, its
    memory's derived_from naming a memory of the agent (ref), and a
    settings change's lint bounds in order (min_length <= max_length, which
    a document cannot state)."""
    if not isinstance(event, dict):
        return
    # A new event, and a new memory, have ids no other has: a generated id
    # may repeat one pushed before (409 event_conflict, memory_exists).
    if "id" in event:
        event["id"] = fresh_id()
    if "time" in event:
        event["time"] = in_the_past(event["time"])
    payload = event.get("payload")
    if not isinstance(payload, dict):
        return
    if event.get("type") == "MemoryCreated" and "memory_id" in payload:
        payload["memory_id"] = fresh_id()
        promotes = payload.get("promotes")
        if isinstance(promotes, dict) and "suggestion_id" in promotes:
            # The memory accepted from a suggestion has the id the server
            # derives from the suggestion's (commands.PromotedMemoryID:
            # UUIDv5 in its namespace), which a document cannot state.
            promotes["suggestion_id"] = fresh_id()
            payload["memory_id"] = str(uuid.uuid5(PROMOTED_ID_SPACE, promotes["suggestion_id"]))
    for name in EVENT_TIMES:
        if name in payload:
            payload[name] = in_the_past(payload[name])
    if isinstance(payload.get("derived_from"), list):
        payload["derived_from"] = [ref for _ in payload["derived_from"]]
    if isinstance(payload.get("settings"), dict):
        with_lint_order(payload["settings"])
        if "enforce_provenance" in payload["settings"]:
            # Enforced provenance would bind the phase's later pushes to
            # sources of the types its rules name, and the agent has one
            # note: their memories, valid by the document, would be
            # refused (400 provenance_violation, as a stateful scenario's
            # pushed drive was at the full budget).
            payload["settings"]["enforce_provenance"] = False


def with_lint_order(settings: dict[str, Any]) -> None:
    """Agent settings' lint bounds in order (min_length <= max_length, which
    a document cannot state)."""
    lint = settings.get("lint_rules")
    # An integer of the document may be drawn as an integral float (138.0),
    # which the server reads as the integer it is.
    bounds = (int, float)
    if not isinstance(lint, dict):
        return
    low, high = lint.get("min_length"), lint.get("max_length")
    if isinstance(low, bounds) and isinstance(high, bounds):
        low, high = sorted((low, high))
        lint["min_length"], lint["max_length"] = low, max(high, 1)
    elif isinstance(high, bounds):
        # The bound left out keeps its default (a push) or the current
        # value (a patch), which may lie past the one given: both given.
        lint["min_length"] = 0
    elif isinstance(low, bounds):
        lint["max_length"] = max(low, 1)


def nonzero_window(embedding: list[Any], size: int) -> list[Any]:
    """size numbers of embedding, repeated as needed, starting at its first
    non-zero one, so a vector valid by the document (not all zero) stays so."""
    start = next((i for i, x in enumerate(embedding) if isinstance(x, (int, float)) and abs(x) >= 1e-44), 0)
    turned = embedding[start:] + embedding[:start]
    return (turned * size)[:size]


# Negative cases add headers of random names and bytes. Engram reads only
# the headers the document names (and the transport's Authorization and
# Content-Type) and ignores the rest, but Go's HTTP/1.1 parser refuses some
# of those random ones (net/http's "400 Bad Request", text/plain) before any
# handler of Engram runs: that is the protocol's grammar, not the API's, so
# the requests are sent without headers the document does not name, and
# without values outside printable ASCII.
KNOWN_HEADERS = {"authorization", "content-type", "engram-source"}


def http_value_ok(value: Any) -> bool:
    # What Go's parser and the requests library both carry unchanged:
    # printable ASCII (the values of the documented headers are ASCII words;
    # a wrong one still reaches the API and is refused there).
    return not isinstance(value, str) or all(c == "\t" or " " <= c <= "~" for c in value)


IMPORT_PATH = "/v1/agents/{agent_id}/import"

# The values the links of the stateful phase took from this pass's
# answers (an id a create answered with, the agent it wrote to): a request
# that carries one got it from a link, and keeps it.
_linked: set[str] = set()


def is_linked(case: Any, value: Any) -> bool:
    return phase_of(case) == "stateful" and isinstance(value, str) and value in _linked


def links_of(case: Any, status: int) -> list[dict[str, Any]]:
    """The links the document gives the case's operation's answer of status."""
    responses = case.operation.definition.raw.get("responses", {})
    response = responses.get(str(status), {})
    return list(response.get("links", {}).values()) if isinstance(response, dict) else []


_EXPRESSION = re.compile(r"\{(\$[^}]*)\}")


def pointer(document: Any, path: str) -> Any:
    """The value at a JSON pointer of document, None when there is none."""
    for token in path.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(document, dict):
            document = document.get(token)
        elif isinstance(document, list) and token.isdigit() and int(token) < len(document):
            document = document[int(token)]
        else:
            return None
    return document


def evaluate(expression: str, case: Any, response: Any) -> Any:
    """A link's runtime expression (the forms the document uses, which
    api/openapi_links_test.go allows) on a request and its answer."""
    if not expression.startswith("$"):
        # A string with expressions inside ("Bearer {$response.body#/data/token}").
        return _EXPRESSION.sub(lambda m: str(evaluate(m.group(1), case, response)), expression)
    where, _, path = expression.partition("#")
    if where == "$response.body":
        if not path:
            return response.content.decode("utf-8", errors="replace")
        try:
            return pointer(response.json(), path)
        except ValueError:
            return None
    if where == "$request.body":
        return pointer(case.body, path) if path else case.body
    _, location, name = where.split(".", 2)
    return {"path": case.path_parameters, "query": case.query, "header": case.headers}.get(location, {}).get(name)


def link_values(link: dict[str, Any], case: Any, response: Any) -> dict[str, Any]:
    """What a link takes from an answer: its parameters' values by name,
    and its body's fields."""
    values = {name: evaluate(e, case, response) for name, e in link.get("parameters", {}).items()}
    body = link.get("requestBody")
    if isinstance(body, dict):
        values.update({f"body.{name}": evaluate(e, case, response) for name, e in body.items()})
    return values


# The last consistency token an answer of this pass carried: the reads
# the checks make send it, so they see every write of the pass before.
_token: list[str] = []


def remember_token(response: Any) -> None:
    token = response.headers.get("engram-consistency-token")
    if token:
        _token[:] = token[:1] if isinstance(token, list) else [token]


def api_get(path: str, key: str) -> tuple[int, Any]:
    """GET an API path (/v1/...) with key, after the pass's last write."""
    return api_call("GET", path, key)


def api_call(method: str, path: str, key: str, body: Any = None) -> tuple[int, Any]:
    """Send a request to an API path (/v1/...) with key, after the pass's
    last write, and remember the consistency token of its answer."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(BASE_URL + path, data=data, method=method, headers={"Authorization": "Bearer " + key})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if _token:
        request.add_header("Engram-Consistency-Token", _token[0])
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            remember_token(answer)
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as refused:
        return refused.code, None


# The state of an import's agent before the import, by case id: what a
# refused import must leave as it was.
_before_import: dict[str, tuple[Any, Any]] = {}


def import_target_state(agent: str) -> tuple[Any, Any]:
    """An agent's event log head and memory count (None: unknown agent)."""
    quoted = urllib.parse.quote(agent, safe="")
    status, page = api_get(f"/v1/sync/events?agent_id={quoted}&limit=1", KEY)
    head = page["data"]["head"] if status == 200 else None
    status, stats = api_get(f"/v1/agents/{quoted}/stats", KEY)
    total = stats["data"]["total"] if status == 200 else None
    return head, total


def snapshot_import_target(case: Any) -> None:
    agent = (case.path_parameters or {}).get("agent_id")
    if isinstance(agent, str) and agent:
        _before_import[case.id] = import_target_state(agent)


@schemathesis.hook
def before_call(context: HookContext, case: Any, kwargs: dict[str, Any]) -> None:
    for headers in (case.headers, kwargs.get("headers")):
        if isinstance(headers, MutableMapping):
            for name in [n for n, v in headers.items() if n.lower() not in KNOWN_HEADERS or not http_value_ok(v)]:
                del headers[name]
    # schemathesis 4.32 judges a case again after a hook changes it: what
    # the hook does below keeps a valid request valid, so the case is
    # judged once, as generated (without the headers dropped above).
    positive = is_positive(case)
    if positive and isinstance(case.body, dict):
        # The secrets are valid by the document; a generated one, however
        # well-formed, is unknown to the server (401, 400 for a token).
        if case.path == "/v1/auth/login":
            case.body["api_key"] = KEY
        elif case.path == "/v1/auth/register" and PASS == "cross_tenant" and isinstance(case.body.get("email"), str):
            # Another address than the owner pass's, which runs at the same
            # time: an address registered again within a minute is 429.
            email = case.body["email"]
            at = len(email) - len(email.lstrip(" \t\r\n"))
            if len(email) < 254:
                case.body["email"] = email[:at] + "x" + email[at:]
        elif case.path == "/v1/auth/verify":
            # A token works once: each valid request of the phase takes the
            # next unspent one (schemathesis judges each phase apart).
            case.body["token"] = next_verify_token(case.meta.phase.name.value)
        elif case.path == "/v1/embeddings" and isinstance(case.body.get("model"), str):
            case.body["model"] = SEED["model"]  # OpenAI's: a model the server serves
            if isinstance(case.body.get("dimensions"), (int, float)):
                # The size of that model: another is refused.
                case.body["dimensions"] = SEED["dimensions"]
        elif case.path in ("/v1/embeddings/generate", "/v1/embeddings/batch") and isinstance(case.body.get("model"), str):
            case.body["model"] = SEED["model"]  # a model the server serves
        elif case.path == "/v1/embeddings/similar" and isinstance(case.body.get("embedding"), list):
            # The generated numbers, as many as the agent's model has dimensions.
            case.body["embedding"] = nonzero_window(case.body["embedding"] or [0.5], SEED["dimensions"])
        elif case.path == "/v1/memories":
            with_memory_data(case.body, memory_target(case))
        elif case.path == "/v1/search":
            with_time_window(case.body)
        elif case.path == "/v1/agents/{agent_id}/settings":
            with_lint_order(case.body)
        elif case.path == "/v1/embeddings/bulk-reembed" and isinstance(case.body.get("model"), str):
            case.body["model"] = SEED["model"]  # a model the server serves
        elif case.path == "/v1/memories/batch" and isinstance(case.body.get("memories"), list):
            for memory in case.body["memories"]:
                with_memory_data(memory, memory_target(case))
        elif case.path == "/v1/sync/events" and isinstance(case.body.get("events"), list):
            for event in case.body["events"]:
                with_sync_data(event, SEED["sync_agents"][phase_of(case)]["ref"])
        elif case.path == "/v1/webhooks" and isinstance(case.body.get("url"), str):
            # A URL the server can deliver to (the test allows private
            # addresses; this port is closed, so nothing leaves the machine).
            case.body["url"] = "http://127.0.0.1:9/fuzz"
    if positive and isinstance(case.query, dict):
        # A cursor is one the server handed out with a page; a generated
        # one, however well-formed, names no page (400 naming it).
        for name in ("cursor", "before"):
            case.query.pop(name, None)
    if PASS == "cross_tenant" or positive:
        with_seeded_ids(case)
    else:
        with_own_objects(case)
    if case.path == IMPORT_PATH and PASS == "owner":
        snapshot_import_target(case)


# Every seeded id a path parameter may take.
SEEDED_PATH_IDS = {value for ids in (*ROUTE_IDS.values(), *DEFAULT_IDS.values()) for value in ids}


def with_own_objects(case: Any) -> None:
    """A negative case of the owner pass keeps its generated values, but
    the coverage phase builds its negative cases of an operation on the
    path parameters the hook gave a positive case of the same parameter
    (of another operation, the seeded ones): DELETE /v1/memories/{id}
    went out with the first seeded raw entry's id, ?purge=true and a
    Content-Type the operation has no body for, the negative part, which
    a DELETE rightly ignores, and purged it (issue 25). A route that
    destroys or changes its object takes, in place of a seeded id not its
    own, one of its own objects: a seeded id is valid, so the case stays
    as negative as it was. The stateful phase's linked values get the same
    (with_seeded_ids)."""
    own = ROUTE_IDS.get((case.method, case.path))
    if own is None:
        return
    for name, value in list((case.path_parameters or {}).items()):
        if isinstance(value, str) and value in SEEDED_PATH_IDS and value not in own:
            case.path_parameters[name] = seeded_id(case.method, case.path, name)


def with_seeded_ids(case: Any) -> None:
    """The seeded objects' ids in place of the generated ones (those a
    link of the stateful phase took from an answer stay)."""
    phase = phase_of(case)
    for name in list(case.path_parameters or {}):
        if is_linked(case, case.path_parameters[name]):
            continue
        value = seeded_id(case.method, case.path, name)
        if case.path == "/v1/embeddings/jobs/{job_id}/cancel":
            # A job still running, one per phase (schemathesis judges each
            # phase apart): the phase's first valid cancel succeeds.
            value = SEED["running_jobs"][phase_of(case)]
        elif case.path == "/v1/auth/keys/{key_id}/cycle":
            # A key of the phase's own: a key cycled (so revoked) by one
            # phase answers 409 key_already_revoked to the next.
            value = SEED["cycled_keys"][phase_of(case)]
        elif case.path == "/v1/auth/keys/{key_id}":
            value = SEED["doomed_keys"][phase_of(case)]
        elif case.path == IMPORT_PATH:
            # An agent per phase that imports append to (an import into the
            # seeded agent of its own export holds only duplicates).
            value = f"fuzz-import-{phase}"
        if value is not None:
            case.path_parameters[name] = value
    if phase == "stateful":
        # A link may carry a seeded object's id from an answer to a route
        # that destroys or changes its object (DELETE /v1/agents/{agent_id}
        # with the seeded agent, which took every seeded memory with it):
        # such a route takes one of its own objects instead.
        with_own_objects(case)
    if is_positive(case) and case.method == "PATCH" and case.path == "/v1/memories/{id}" and isinstance(case.body, dict) and isinstance(case.body.get("content"), dict):
        # The fields a content patch may name are those of its memory's
        # type, which the id decides, not the document: a field of the
        # memory's own type, keeping the marker the cross-tenant check
        # looks for.
        patched = PATCHED_FIELD.get(memory_type(case.path_parameters.get("id")) or "", "content")
        case.body["content"] = {patched: SEED["marker"] + " patched"}
    # The listing, search and sync routes name the agent in the query or
    # the body; the seeded one has data to find.
    if isinstance(case.query, dict) and "agent_id" in case.query and not is_linked(case, case.query["agent_id"]):
        case.query["agent_id"] = SEED["agent"]
    if isinstance(case.body, dict) and isinstance(case.body.get("agent_id"), str) and not is_linked(case, case.body["agent_id"]):
        case.body["agent_id"] = SEED["agent"]
        if case.path in ("/v1/memories", "/v1/memories/batch"):
            case.body["agent_id"] = memory_agent(phase)
        elif case.path == "/v1/embeddings/bulk-reembed":
            # An agent without a job, one per phase (one job per agent at a time).
            case.body["agent_id"] = SEED["reembed_agents"][phase_of(case)]
        elif case.path == "/v1/sync/events":
            # An agent of the phase's own, whose settings a push may change
            # (maintenance refuses every later memory write).
            case.body["agent_id"] = SEED["sync_agents"][phase_of(case)]["agent"]
    # POST /v1/embeddings/reembed names a memory and its type in the body.
    if isinstance(case.body, dict) and isinstance(case.body.get("memory_id"), str) and not is_linked(case, case.body["memory_id"]):
        memory_id = seeded_id(case.method, case.path, "id")
        case.body["memory_id"] = memory_id
        if isinstance(case.body.get("memory_type"), str):
            case.body["memory_type"] = SEED["memory_types"][memory_id]


@schemathesis.hook
def after_call(context: HookContext, case: Any, response: Any) -> None:
    remember_token(response)
    if phase_of(case) == "stateful" and 200 <= response.status_code < 300:
        for link in links_of(case, response.status_code):
            _linked.update(v for v in link_values(link, case, response).values() if isinstance(v, str) and v)
    code = "-"
    if response.status_code >= 400:
        try:
            code = str(response.json()["error"]["code"])
        except (ValueError, KeyError, TypeError):
            pass
    mode = "positive" if is_positive(case) else "negative"
    phase = case.meta.phase.name.value if case.meta is not None else "-"
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(f"{case.method} {case.path} {phase} {mode} {response.status_code} {code}\n")
    if TRACE:
        trace(case, response, phase, mode)


def trace(case: Any, response: Any, phase: str, mode: str) -> None:
    """Appends the exchange, whole, to TRACE (bodies cut at 4000 characters)."""
    body = None if isinstance(case.body, NotSet) else case.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    entry = {
        "method": case.method,
        "path": case.formatted_path,
        "phase": phase,
        "mode": mode,
        "query": case.query,
        "headers": {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"},
        "body": json.dumps(body, default=repr)[:4000],
        "status": response.status_code,
        "answer": response.text[:4000],
    }
    with open(TRACE, "a", encoding="utf-8") as out:
        out.write(json.dumps(entry, default=repr) + "\n")


# The seeded objects' ids are random, and every seeded memory's content
# carries SEED["marker"]; another user's request names those ids (they are
# what the hook puts in), so an answer may echo one in an error message,
# but only a leak can carry the marker, and only an answer about the
# seeding user's object can be a success on a route addressed by one.
OWNED_BY_ID = ("id", "key_id", "job_id", "webhook_id")


def derived_refs(body: Any) -> list[str]:
    """The derived_from references of a memory create, batch or sync push."""
    items: list[Any] = [body]
    if isinstance(body, dict):
        items += body.get("memories") or []
        items += [e.get("payload") for e in body.get("events") or [] if isinstance(e, dict)]
    refs: list[str] = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("derived_from"), list):
            refs += [r for r in item["derived_from"] if isinstance(r, str)]
    return refs


# The checks below run only when named in schemathesis's --checks, which,
# given, turns off every check it does not name, registered ones too:
# each logs that it ran ("check NAME"), and TestSchemathesis fails a pass
# in which one of them (its hookChecks) did not.
_ran: set[str] = set()


def ran(check: str) -> None:
    if check not in _ran:
        _ran.add(check)
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(f"check {check}\n")


@schemathesis.check
def cross_tenant_isolation(ctx: Any, response: Any, case: Any) -> bool | None:
    """Another user never reads or changes the seeding user's objects."""
    ran("cross_tenant_isolation")
    if PASS != "cross_tenant":
        return None
    body = response.content.decode("utf-8", errors="replace") if response.content else ""
    if SEED["marker"] in body:
        raise AssertionError(
            f"{case.method} {case.formatted_path} as another user answered {response.status_code} "
            f"with the seeding user's content ({SEED['marker']})"
        )
    if response.status_code >= 500:
        raise AssertionError(f"{case.method} {case.formatted_path} as another user answered {response.status_code}")
    seeded = set(SEED["memories"]) | {a["ref"].split(":", 1)[1] for a in SEED["sync_agents"].values()}
    if 200 <= response.status_code < 300 and any(r.split(":", 1)[-1] in seeded for r in derived_refs(case.body)):
        raise AssertionError(
            f"{case.method} {case.formatted_path} as another user answered {response.status_code} "
            "to memories derived from the seeding user's: want 400"
        )
    named = [n for n in OWNED_BY_ID if n in (case.path_parameters or {})]
    if isinstance(case.body, dict) and "memory_id" in case.body:
        named.append("memory_id")
    if named and 200 <= response.status_code < 300:
        raise AssertionError(
            f"{case.method} {case.formatted_path} as another user answered {response.status_code} "
            f"on the seeding user's {named[0]}: want 404"
        )
    if named and is_positive(case) and response.status_code not in (403, 404):
        # A request the document accepts, naming an object of the seeding
        # user, is refused as if the object did not exist: any other answer
        # (a conflict, a precondition, a refusal of its shape, which the
        # document would then describe wrongly) would tell its state.
        raise AssertionError(
            f"{case.method} {case.formatted_path} as another user answered {response.status_code}: want 404 or 403"
        )
    return None


@schemathesis.check
def created_resources_stay_private(ctx: Any, response: Any, case: Any) -> bool | None:
    """What the owner pass's stateful phase created is another user's to
    read nowhere: each link from a create's answer to a read of the
    created resource by the id the server gave it, followed with another
    user's key, is 404 (decisions.md: another user's object is as absent
    as one never made). An agent id is a name each user picks: another
    user's agent of that name is its own, so reads by agent are not
    followed (the cross-tenant pass reads the seeded agent's)."""
    ran("created_resources_stay_private")
    if PASS != "owner" or phase_of(case) != "stateful" or case.method.upper() == "GET":
        return None
    if not 200 <= response.status_code < 300:
        return None
    paths = case.operation.schema.raw_schema["paths"]
    for link in links_of(case, response.status_code):
        target = operation_by_id(paths, link["operationId"])
        if target is None or target[0] != "get" or "{" not in target[1] or "{agent_id}" in target[1]:
            continue
        values = link_values(link, case, response)
        path = target[1]
        for name in re.findall(r"\{([^}]+)\}", path):
            value = values.get(name, values.get(f"path.{name}"))
            if not isinstance(value, str) or not value:
                path = ""
                break
            path = path.replace("{" + name + "}", urllib.parse.quote(value, safe=":"))
        if not path:
            continue
        status, _ = api_get(path, OTHER_KEY)
        if status != 404:
            raise AssertionError(
                f"{case.method} {case.formatted_path} created what GET {path} reads; "
                f"another user's key got {status} there: want 404"
            )
    return None


def operation_by_id(paths: dict[str, Any], operation_id: str) -> tuple[str, str] | None:
    """The method and path template of the document's operation of that id."""
    for path, item in paths.items():
        for method, operation in item.items():
            if isinstance(operation, dict) and operation.get("operationId") == operation_id:
                return method, path
    return None


@schemathesis.check
def refused_import_changes_nothing(ctx: Any, response: Any, case: Any) -> bool | None:
    """An import is all or nothing: a refused one leaves its agent's event
    log and memory count as they were, and a refused line is named in the
    failure envelope (its message and details.line)."""
    ran("refused_import_changes_nothing")
    if case.path != IMPORT_PATH or response.status_code < 400:
        return None
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        raise AssertionError(f"import answered {response.status_code} without the failure envelope") from None
    line = re.match(r"line (\d+): ", str(error.get("message", "")))
    if line is not None and (error.get("details") or {}).get("line") != int(line.group(1)):
        raise AssertionError(f"import refused {error['message']!r} with details {error.get('details')!r}: want its line")
    before = _before_import.get(case.id)
    if before is None:
        return None
    after = import_target_state(case.path_parameters["agent_id"])
    if after != before:
        raise AssertionError(
            f"import into {case.path_parameters['agent_id']} answered {response.status_code} "
            f"({error.get('code')}) yet changed its (event log head, memory count) from {before} to {after}"
        )
    return None


# Import bodies: JSON Lines drawn from the lines of the seeded agent's
# exports (the test exports it in both formats), a prefix in log order
# (an event after the one it follows), with or without its header, and
# malformed lines among them: text, truncated lines, JSON that is no
# object, unknown fields, two kinds in one line, a field anywhere in a
# line given another JSON value, a header that is not first. Another
# user's pass imports the same lines without the seed's marker, which in
# its answers would mean a leak.
def _export_lines() -> dict[str, list[str]]:
    exports: dict[str, list[str]] = SEED["exports"]
    if PASS == "owner":
        return exports
    return {f: [line.replace(SEED["marker"], "fuzz-other-marker") for line in lines] for f, lines in exports.items()}


EXPORTS = _export_lines()

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=16),
    lambda inner: st.lists(inner, min_size=1, max_size=3) | st.dictionaries(st.text(max_size=8), inner, min_size=1, max_size=3),
    max_leaves=6,
)


def _places(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) of a JSON value, depth first."""
    places: list[tuple[Any, Any]] = []
    keys = value.keys() if isinstance(value, dict) else range(len(value)) if isinstance(value, list) else []
    for key in keys:
        places.append((value, key))
        places.extend(_places(value[key]))
    return places


@st.composite
def malformed_line(draw: st.DrawFn, lines: list[str]) -> str:
    line = draw(st.sampled_from(lines))
    kind = draw(st.sampled_from(["text", "truncated", "not_object", "unknown_field", "two_kinds", "changed", "header"]))
    if kind == "text":
        return draw(st.text(max_size=40))
    if kind == "truncated":
        return line[: draw(st.integers(min_value=1, max_value=max(1, len(line) - 1)))]
    if kind == "not_object":
        return json.dumps(draw(JSON_VALUES.filter(lambda v: not isinstance(v, dict))))
    value = json.loads(line)
    if kind == "unknown_field":
        value[draw(st.text(min_size=1, max_size=8))] = draw(JSON_VALUES)
    elif kind == "two_kinds":
        value[draw(st.sampled_from(["header", "event", "memory"]))] = draw(JSON_VALUES)
    elif kind == "changed":
        container, key = draw(st.sampled_from(_places(value)))
        container[key] = draw(JSON_VALUES)
    else:  # a header where only the first line may have one
        return draw(st.sampled_from([lines_of_format[0] for lines_of_format in EXPORTS.values()]))
    return json.dumps(value)


@st.composite
def ndjson_import(draw: st.DrawFn) -> bytes:
    lines = EXPORTS[draw(st.sampled_from(sorted(EXPORTS)))]
    header, body = lines[0], lines[1:]
    chosen = body[: draw(st.integers(min_value=1, max_value=len(body)))]
    if draw(st.booleans()):
        chosen = [header, *chosen]
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        chosen.insert(draw(st.integers(min_value=0, max_value=len(chosen))), draw(malformed_line(lines)))
    separator = draw(st.sampled_from(["\n", "\r\n", "\n\n"]))
    return (separator.join(chosen) + draw(st.sampled_from(["", "\n"]))).encode("utf-8", errors="surrogatepass")


schemathesis.openapi.media_type("application/x-ndjson", ndjson_import())


@schemathesis.serializer("application/x-ndjson")
def ndjson_body(ctx: Any, value: Any) -> bytes:
    """The body as drawn (bytes), as the export answered it (text), or, for
    the values a negative case draws against the body's `string`, as JSON."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", errors="surrogatepass")
    return json.dumps(value).encode()


@schemathesis.deserializer("application/x-ndjson")
def ndjson_answer(ctx: Any, response: Any) -> str:
    """An export's body, as its document says, a string: the link from an
    export to an import sends it back."""
    return response.content.decode("utf-8", errors="replace")
