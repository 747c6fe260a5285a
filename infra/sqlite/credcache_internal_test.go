package sqlite

import (
	"testing"

	"github.com/engram-memory/engram/domain/account"
)

// A lookup that read the read model before an invalidation must not store
// its answer after it: that answer may predate the batch (e.g. a key that
// has just been revoked).
func TestCredCacheGeneration(t *testing.T) {
	c := newCredCache()
	_, _, gen := c.key("h")
	c.invalidate() // a batch committed while the lookup ran
	c.putKey(gen, "h", account.KeyView{ID: "stale"})
	if _, ok, _ := c.key("h"); ok {
		t.Fatal("stale key stored across an invalidation")
	}
	_, _, gen = c.session("s")
	c.invalidate()
	c.putSession(gen, "s", account.SessionView{ID: "stale"})
	if _, ok, _ := c.session("s"); ok {
		t.Fatal("stale session stored across an invalidation")
	}

	// Without an invalidation in between, the answer is kept.
	_, _, gen = c.key("h")
	c.putKey(gen, "h", account.KeyView{ID: "fresh"})
	if k, ok, _ := c.key("h"); !ok || k.ID != "fresh" {
		t.Fatalf("key %+v %v", k, ok)
	}

	// The maps are bounded.
	for i := range maxCachedCreds + 5 {
		_, _, gen := c.key("x")
		c.putKey(gen, string(rune(i+1000)), account.KeyView{})
	}
	if n := len(c.keys); n > maxCachedCreds {
		t.Fatalf("%d cached keys", n)
	}
}
