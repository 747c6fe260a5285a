"""Exceptions: one class per family of the server's error codes.

Every failure the server reports is an :class:`APIStatusError` carrying the
failure envelope (``code``, ``message``, ``request_id``, ``details``), the
HTTP status, ``Retry-After`` and, when the request wrote before it failed,
the consistency token.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "EngramError",
    "InsecureURLError",
    "APIConnectionError",
    "APITimeoutError",
    "APIStatusError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "QuotaExceededError",
    "NotFoundError",
    "MethodNotAllowedError",
    "RequestTimeoutError",
    "ConflictError",
    "GoneError",
    "PreconditionFailedError",
    "PayloadTooLargeError",
    "UnsupportedMediaTypeError",
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "StorageFullError",
    "WriteNotYetVisibleError",
    "WriteNotStoredError",
    "NotYetConsistentError",
]


class EngramError(Exception):
    """Base of every exception this package raises."""


class InsecureURLError(EngramError, ValueError):
    """Raised before sending a secret (API key, session or verification
    token) over plain http to a host that is not loopback: use https
    (docs/decisions.md#secrets-in-transit)."""


class APIConnectionError(EngramError):
    """The server could not be reached or the connection broke."""


class APITimeoutError(APIConnectionError):
    """The request did not complete within the client's timeout."""


class APIStatusError(EngramError):
    """The server answered with a failure status.

    ``code`` is the failure envelope's snake_case code (empty when the body
    was not an envelope, e.g. from a proxy), ``details`` its optional object,
    ``retry_after`` the ``Retry-After`` header in seconds (``None`` if absent)
    and ``consistency_token`` the ``Engram-Consistency-Token`` of a request
    that wrote before failing.
    """

    def __init__(
        self,
        *,
        status: int,
        code: str,
        message: str,
        request_id: str,
        details: dict[str, Any] | None = None,
        retry_after: float | None = None,
        consistency_token: str | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.details = details or {}
        self.retry_after = retry_after
        self.consistency_token = consistency_token
        text = f"{status} {code or 'error'}: {message}"
        if request_id:
            text += f" (request {request_id})"
        super().__init__(text)


class BadRequestError(APIStatusError):
    """400: invalid input; ``details['field']`` names the field."""


class AuthenticationError(APIStatusError):
    """401: missing, unknown, revoked or expired credential."""


class PermissionDeniedError(APIStatusError):
    """403."""


class QuotaExceededError(PermissionDeniedError):
    """403 ``quota_*``: ``details`` has ``limit``, ``used`` and ``requested``."""


class NotFoundError(APIStatusError):
    """404, also for another user's resources."""


class MethodNotAllowedError(APIStatusError):
    """405 ``method_not_allowed``: a method the route does not take."""


class RequestTimeoutError(APIStatusError):
    """408 ``request_timeout``: the request's body did not reach the server
    in time (:class:`APITimeoutError` is the client's own timeout)."""


class ConflictError(APIStatusError):
    """409, e.g. ``key_already_revoked``, ``job_in_progress``."""


class GoneError(APIStatusError):
    """410 ``token_expired`` / ``token_used``."""


class PreconditionFailedError(APIStatusError):
    """412: ``If-Match`` did not match; ``details['etag']`` is the current tag."""


class PayloadTooLargeError(APIStatusError):
    """413."""


class UnsupportedMediaTypeError(APIStatusError):
    """415 ``unsupported_media_type``: a body that is not application/json."""


class RateLimitError(APIStatusError):
    """429; ``retry_after`` says when to try again."""


class InternalServerError(APIStatusError):
    """500 and other 5xx without a more specific class."""


class ServiceUnavailableError(InternalServerError):
    """503, e.g. ``server_busy``, ``provider_unavailable``."""


class StorageFullError(InternalServerError):
    """507 ``storage_full``: the server's storage is full, so it refuses every
    write (nothing of it is stored) and still serves reads; ``retry_after``
    says when to try again. A subclass of :class:`InternalServerError`,
    which 507 raised before it had a class of its own."""


class WriteNotYetVisibleError(ServiceUnavailableError):
    """503 ``write_not_yet_visible``: the write IS stored. Do not send it
    again; wait for it with ``client.wait_visible(err.consistency_token)``."""


class WriteNotStoredError(ServiceUnavailableError):
    """503 ``write_not_stored``: nothing was stored; safe to send again."""


class NotYetConsistentError(ServiceUnavailableError):
    """503 ``not_yet_consistent``: the consistency token was not reached in time."""


_BY_CODE: dict[str, type[APIStatusError]] = {
    "write_not_yet_visible": WriteNotYetVisibleError,
    "write_not_stored": WriteNotStoredError,
    "not_yet_consistent": NotYetConsistentError,
}

_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    408: RequestTimeoutError,
    409: ConflictError,
    410: GoneError,
    412: PreconditionFailedError,
    413: PayloadTooLargeError,
    415: UnsupportedMediaTypeError,
    429: RateLimitError,
    500: InternalServerError,
    503: ServiceUnavailableError,
    507: StorageFullError,
}


def error_class(status: int, code: str) -> type[APIStatusError]:
    """The exception class for a failure's status and code."""
    if code in _BY_CODE:
        return _BY_CODE[code]
    if status == 403 and code.startswith("quota_"):
        return QuotaExceededError
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return InternalServerError
    return APIStatusError
