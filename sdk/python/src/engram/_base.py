"""What the sync and async clients share: configuration, request building,
decoding the envelopes, the retry policy and the consistency token."""

from __future__ import annotations

import email.utils
import ipaddress
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from ._errors import APIStatusError, InsecureURLError, error_class
from ._version import __version__

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2
# The longest Retry-After a retry honours; a longer one is raised at once.
MAX_RETRY_WAIT = 60.0
CONSISTENCY_TOKEN_HEADER = "Engram-Consistency-Token"
RETRYABLE_STATUSES = (429, 503)


@dataclass
class Request:
    """One API call. ``idempotent`` calls are retried on 429 and 503;
    unauthenticated ones send no Authorization header, and ``secret`` marks
    those that carry a secret in the body instead (verify, login)."""

    method: str
    path: str
    params: dict[str, Any] | None = None
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    idempotent: bool = False
    authenticated: bool = True
    secret: bool = False
    envelope: bool = True  # False: the OpenAI-compatible route's bare JSON
    content: bytes | None = None  # a body sent as is (with its Content-Type in headers)


def segment(value: str) -> str:
    """Escape one path segment."""
    return quote(value, safe="")


def query(**params: Any) -> dict[str, Any]:
    """Query parameters without the ones left out (None); booleans as true/false."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, (list, tuple)):
            v = ",".join(v)
        out[k] = v
    return out


def body(**fields: Any) -> dict[str, Any]:
    """A JSON body without the fields left out (None)."""
    return {k: v for k, v in fields.items() if v is not None}


def if_match_header(etag: str | None) -> dict[str, str]:
    return {"If-Match": etag} if etag else {}


def secure_url(url: httpx.URL) -> bool:
    """Whether secrets may travel to url: https, or http to a loopback host.
    Only the literal name localhost and loopback IPs count: names are not
    resolved, because what they resolve to can change."""
    if url.scheme == "https":
        return True
    if url.scheme != "http":
        return False
    host = url.host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: delay-seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(int(value)))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class BaseClient:
    """Configuration and the parts of a call that do no I/O."""

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        timeout: float | httpx.Timeout | None,
        max_retries: int,
        consistency_token: str | None,
    ) -> None:
        if api_key is None:
            api_key = os.environ.get("ENGRAM_API_KEY")
        if base_url is None:
            base_url = os.environ.get("ENGRAM_BASE_URL") or DEFAULT_BASE_URL
        url = httpx.URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"base_url {base_url!r} must be http(s)://host[:port]/...")
        self.api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        self.max_retries = max_retries
        # Sent with every request, so that reads wait for that write.
        self.consistency_token = consistency_token
        # The token of the last write this client made (shared with copies).
        self._last_token: list[str | None] = [None]

    @property
    def last_consistency_token(self) -> str | None:
        """The ``Engram-Consistency-Token`` of the last response that wrote."""
        return self._last_token[0]

    def _options(self, **overrides: Any) -> dict[str, Any]:
        opts = {
            "api_key": self.api_key,
            "base_url": self.base_url,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "consistency_token": self.consistency_token,
        }
        opts.update({k: v for k, v in overrides.items() if v is not None})
        return opts

    def _build(self, req: Request) -> dict[str, Any]:
        headers = {
            "Accept": "application/json",
            "User-Agent": f"engram-python/{__version__}",
        }
        if (req.authenticated or req.secret) and not secure_url(httpx.URL(self.base_url)):
            raise InsecureURLError(
                f"refusing to send a secret over plain http to {self.base_url}: use https or a loopback host"
            )
        if req.authenticated:
            if not self.api_key:
                raise ValueError("no API key: pass api_key= or set ENGRAM_API_KEY")
            headers["Authorization"] = f"Bearer {self.api_key}"
        if self.consistency_token and CONSISTENCY_TOKEN_HEADER not in req.headers:
            headers[CONSISTENCY_TOKEN_HEADER] = self.consistency_token
        headers.update(req.headers)
        kwargs: dict[str, Any] = {
            "method": req.method,
            "url": self.base_url + req.path,
            "headers": headers,
            "params": req.params or None,
        }
        if req.body is not None:
            kwargs["json"] = req.body
        if req.content is not None:
            kwargs["content"] = req.content
        return kwargs

    def _retry_delay(self, req: Request, resp: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before sending req again, or None to raise.

        429 and 503 are retried for idempotent calls, honouring Retry-After;
        503 write_not_stored (nothing stored) for every call; 503
        write_not_yet_visible (stored) never."""
        if resp.status_code not in RETRYABLE_STATUSES:
            return None
        code = _error_code(resp)
        if code == "write_not_yet_visible":
            return None
        if not req.idempotent and code != "write_not_stored":
            return None
        wait = parse_retry_after(resp.headers.get("Retry-After"))
        if wait is None:
            wait = min(8.0, 0.5 * 2**attempt) * (0.75 + random.random() / 2)
        if wait > MAX_RETRY_WAIT:
            return None
        return wait

    def _decode(self, req: Request, resp: httpx.Response) -> Any:
        token = resp.headers.get(CONSISTENCY_TOKEN_HEADER)
        if token:
            self._last_token[0] = token
        if resp.status_code == 304:  # If-None-Match named the current version
            return None
        if not 200 <= resp.status_code < 300:
            raise _status_error(resp)
        if resp.status_code == 204 or not resp.content:
            return None
        payload = resp.json()
        if not req.envelope:
            return payload
        if not isinstance(payload, dict) or payload.get("success") is not True:
            raise APIStatusError(
                status=resp.status_code,
                code="",
                message="response without a success envelope",
                request_id=resp.headers.get("X-Request-Id", ""),
            )
        return payload.get("data")


def _error_code(resp: httpx.Response) -> str:
    try:
        err = resp.json().get("error")
    except (ValueError, AttributeError):
        return ""
    return err.get("code") or "" if isinstance(err, dict) else ""


def _status_error(resp: httpx.Response) -> APIStatusError:
    request_id = resp.headers.get("X-Request-Id", "")
    code, message, details = "", "", None
    try:
        err = resp.json().get("error")
    except (ValueError, AttributeError):
        err = None
    if isinstance(err, dict):
        code = err.get("code") or ""
        message = err.get("message") or ""
        details = err.get("details")
        request_id = err.get("request_id") or request_id
        if not code and err.get("type"):  # the OpenAI-compatible route's shape
            code = str(err.get("type"))
    if not message:
        message = resp.text.strip()[:200] or resp.reason_phrase
    cls = error_class(resp.status_code, code)
    return cls(
        status=resp.status_code,
        code=code,
        message=message,
        request_id=request_id,
        details=details if isinstance(details, dict) else None,
        retry_after=parse_retry_after(resp.headers.get("Retry-After")),
        consistency_token=resp.headers.get(CONSISTENCY_TOKEN_HEADER),
    )
