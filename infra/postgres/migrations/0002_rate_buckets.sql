-- Token buckets of the API's rate limits, shared by every node: one row per
-- limited key (credential or client IP). tokens is the bucket's content as
-- of updated_at (the database's clock, so node clocks do not matter).
CREATE TABLE rate_buckets (
    key        TEXT PRIMARY KEY,
    tokens     DOUBLE PRECISION NOT NULL,
    allowed    BOOLEAN          NOT NULL,
    updated_at TIMESTAMPTZ      NOT NULL
);
