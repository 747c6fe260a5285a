export { Engram, DEFAULT_BASE_URL, type ClientOptions } from "./client.js";
export { PagePromise, CONSISTENCY_TOKEN_HEADER, type RequestOptions } from "./core.js";
export * from "./errors.js";
export { etag, jobDone } from "./resources.js";
export {
  verifyWebhook,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  DELIVERY_HEADER,
  EVENT_HEADER,
  type VerifyWebhookOptions,
} from "./webhooks.js";
export type * from "./types.js";
export { VERSION } from "./version.js";
export { Engram as default } from "./client.js";
