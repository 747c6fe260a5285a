"""Checking a webhook delivery's signature (docs/operations.md#webhooks)."""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "Engram-Signature"
TIMESTAMP_HEADER = "Engram-Timestamp"
DELIVERY_HEADER = "Engram-Delivery"
EVENT_HEADER = "Engram-Event"


def verify_webhook(
    secret: str,
    body: bytes,
    timestamp: str,
    signature: str,
    *,
    tolerance: float = 300.0,
    now: float | None = None,
) -> bool:
    """Whether ``signature`` (the Engram-Signature header) is the webhook's
    signature of ``body`` (the raw request body) sent at ``timestamp`` (the
    Engram-Timestamp header), no more than ``tolerance`` seconds from now:
    ``v1=`` and the hex HMAC-SHA256, keyed with the secret, of the timestamp,
    ``.`` and the body. Deduplicate verified deliveries by Engram-Delivery:
    delivery is at least once."""
    try:
        sent = int(timestamp)
    except ValueError:
        return False
    if abs((time.time() if now is None else now) - sent) > tolerance:
        return False
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return hmac.compare_digest("v1=" + mac.hexdigest(), signature)
