// Checking a webhook delivery's signature (docs/operations.md#webhooks),
// with the Web Crypto API (Node.js 18 and browsers).

export const SIGNATURE_HEADER = "Engram-Signature";
export const TIMESTAMP_HEADER = "Engram-Timestamp";
export const DELIVERY_HEADER = "Engram-Delivery";
export const EVENT_HEADER = "Engram-Event";

export interface VerifyWebhookOptions {
  /** Seconds a timestamp may be off the clock (default 300). */
  tolerance?: number;
  /** The clock, in Unix seconds (default now). */
  now?: number;
}

/**
 * Whether `signature` (the Engram-Signature header) is the webhook's
 * signature of `body` (the raw request body, as received) sent at
 * `timestamp` (the Engram-Timestamp header), within the tolerance of the
 * clock: `v1=` and the hex HMAC-SHA256, keyed with the secret, of the
 * timestamp, `.` and the body. Deduplicate verified deliveries by
 * Engram-Delivery: delivery is at least once.
 */
export async function verifyWebhook(
  secret: string,
  body: string | Uint8Array,
  timestamp: string,
  signature: string,
  options: VerifyWebhookOptions = {},
): Promise<boolean> {
  const sent = Number(timestamp);
  const now = options.now ?? Date.now() / 1000;
  if (!/^\d+$/.test(timestamp) || Math.abs(now - sent) > (options.tolerance ?? 300)) return false;
  const enc = new TextEncoder();
  const raw = typeof body === "string" ? enc.encode(body) : body;
  const prefix = enc.encode(`${timestamp}.`);
  const signed = new Uint8Array(prefix.length + raw.length);
  signed.set(prefix);
  signed.set(raw, prefix.length);
  const key = await crypto.subtle.importKey("raw", enc.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, signed));
  const expected = "v1=" + Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
  // Constant time over the length of the expected value.
  let diff = expected.length ^ signature.length;
  for (let i = 0; i < expected.length; i++) diff |= expected.charCodeAt(i) ^ (signature.charCodeAt(i) || 0);
  return diff === 0;
}
