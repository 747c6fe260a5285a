// Errors of the client, the same family as the Python SDK's: every
// failure the server reports is an APIStatusError (or a subclass chosen by
// status and code) carrying the failure envelope's code, message, request
// id and details; a request that got no answer is an APIConnectionError
// or an APITimeoutError.

/** Base of every error this package throws. */
export class EngramError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The server could not be reached or the connection broke. */
export class APIConnectionError extends EngramError {}
/** The request did not complete within the client's or the call's timeout. */
export class APITimeoutError extends APIConnectionError {}
/**
 * Refused before anything was sent: the call would carry a secret over
 * plain http to a host that is not loopback
 * (docs/decisions.md#secrets-in-transit).
 */
export class InsecureURLError extends EngramError {}

/** What the server said about a failed request. */
export interface APIStatusErrorInit {
  status: number;
  code: string;
  message: string;
  requestId: string;
  details?: Record<string, unknown> | undefined;
  retryAfter?: number | undefined;
  consistencyToken?: string | undefined;
}

/**
 * The server answered with a failure status: the failure envelope
 * `{success: false, error: {code, message, request_id, details}}` plus the
 * HTTP status. `code` is empty when the body was not an envelope (say,
 * from a proxy; then `message` is the start of the body).
 */
export class APIStatusError extends EngramError {
  /** HTTP status code. */
  readonly status: number;
  /** snake_case code, e.g. "not_found", "invalid_request". */
  readonly code: string;
  /** The server's message, as sent. */
  readonly serverMessage: string;
  /** The request's X-Request-Id, to find it in the server log. */
  readonly requestId: string;
  /** e.g. `{field: "agent_id"}`; empty when the server sent none. */
  readonly details: Record<string, unknown>;
  /** The server's Retry-After in seconds on 429 and 503; undefined if absent. */
  readonly retryAfter: number | undefined;
  /**
   * The response's Engram-Consistency-Token, set when the request wrote
   * before it failed. On 503 write_not_yet_visible the write is stored:
   * wait for it with `client.waitVisible(token)` instead of sending it
   * again, which would store a copy.
   */
  readonly consistencyToken: string | undefined;

  constructor(init: APIStatusErrorInit) {
    let text = `${init.status} ${init.code || "error"}: ${init.message}`;
    if (init.requestId) text += ` (request ${init.requestId})`;
    super(text);
    this.status = init.status;
    this.code = init.code;
    this.serverMessage = init.message;
    this.requestId = init.requestId;
    this.details = init.details ?? {};
    this.retryAfter = init.retryAfter;
    this.consistencyToken = init.consistencyToken;
  }
}

export class BadRequestError extends APIStatusError {}
export class AuthenticationError extends APIStatusError {}
export class PermissionDeniedError extends APIStatusError {}
/** 403 quota_*: a per-agent, per-user or byte quota is full. */
export class QuotaExceededError extends PermissionDeniedError {}
export class NotFoundError extends APIStatusError {}
/** 405 method_not_allowed: a method the route does not take. */
export class MethodNotAllowedError extends APIStatusError {}
/**
 * 408 request_timeout: the request's body did not reach the server in
 * time. (APITimeoutError is the client's own timeout.)
 */
export class RequestTimeoutError extends APIStatusError {}
export class ConflictError extends APIStatusError {}
export class GoneError extends APIStatusError {}
export class PreconditionFailedError extends APIStatusError {}
export class PayloadTooLargeError extends APIStatusError {}
/** 415 unsupported_media_type: a body that is not application/json. */
export class UnsupportedMediaTypeError extends APIStatusError {}
export class RateLimitError extends APIStatusError {}
export class InternalServerError extends APIStatusError {}
export class ServiceUnavailableError extends InternalServerError {}
/**
 * 507 storage_full: the server's storage is full, so it refuses every
 * write (nothing of it is stored) and still serves reads; `retryAfter`
 * says when to try again. A subclass of InternalServerError, which 507
 * was before it had a class of its own.
 */
export class StorageFullError extends InternalServerError {}
/**
 * 503 write_not_yet_visible: the write is stored but not yet applied to
 * every read model. Never send it again (that stores a copy); wait with
 * `client.waitVisible(error.consistencyToken)`.
 */
export class WriteNotYetVisibleError extends ServiceUnavailableError {}
/** 503 write_not_stored: nothing of the write was stored; sending it again is safe. */
export class WriteNotStoredError extends ServiceUnavailableError {}
/** 503 not_yet_consistent: the consistency token was not reached in time. */
export class NotYetConsistentError extends ServiceUnavailableError {}

export const CODE_WRITE_NOT_YET_VISIBLE = "write_not_yet_visible";
export const CODE_WRITE_NOT_STORED = "write_not_stored";
export const CODE_NOT_YET_CONSISTENT = "not_yet_consistent";

type StatusErrorClass = new (init: APIStatusErrorInit) => APIStatusError;

const byCode: Record<string, StatusErrorClass> = {
  [CODE_WRITE_NOT_YET_VISIBLE]: WriteNotYetVisibleError,
  [CODE_WRITE_NOT_STORED]: WriteNotStoredError,
  [CODE_NOT_YET_CONSISTENT]: NotYetConsistentError,
};

const byStatus: Record<number, StatusErrorClass> = {
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
};

/** The error for a failure's status and code. */
export function errorFor(init: APIStatusErrorInit): APIStatusError {
  let cls = byCode[init.code] ?? byStatus[init.status];
  if (init.status === 403 && init.code.startsWith("quota_")) cls = QuotaExceededError;
  if (!cls) cls = init.status >= 500 ? InternalServerError : APIStatusError;
  return new cls(init);
}
