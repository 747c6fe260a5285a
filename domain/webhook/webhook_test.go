package webhook_test

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/domain/webhook"
)

func TestValidateURL(t *testing.T) {
	for _, tc := range []struct {
		url          string
		allowPrivate bool
		ok           bool
	}{
		{"https://hooks.example.com/engram", false, true},
		{"https://hooks.example.com:8443/engram?x=1", false, true},
		{"https://93.184.215.14/h", false, true},
		{"http://hooks.example.com/engram", false, false},
		{"http://127.0.0.1:9000/h", true, true},
		{"https://127.0.0.1/h", false, false},
		{"https://127.0.0.1/h", true, true},
		{"https://10.0.0.1/h", false, false},
		{"https://172.16.5.4/h", false, false},
		{"https://192.168.0.1/h", false, false},
		{"https://100.64.0.1/h", false, false},
		{"https://169.254.169.254/latest/meta-data", false, false},
		{"https://[::1]/h", false, false},
		{"https://[fd00::1]/h", false, false},
		{"https://[fe80::1]/h", false, false},
		{"https://[::ffff:10.0.0.1]/h", false, false},
		{"https://0.0.0.0/h", false, false},
		{"ftp://hooks.example.com/h", true, false},
		{"https:///nohost", false, false},
		{"https://user:pass@hooks.example.com/h", false, false},
		{"https://hooks.example.com/h#frag", false, false},
		{"hooks.example.com/h", false, false},
		{"", false, false},
		{"https://hooks.example.com/" + strings.Repeat("a", webhook.MaxURLLength), false, false},
	} {
		_, err := webhook.ValidateURL(tc.url, tc.allowPrivate)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateURL(%.60q, allowPrivate %v) = %v, want ok %v", tc.url, tc.allowPrivate, err, tc.ok)
		}
		if err != nil {
			if de, _ := domain.AsError(err); de == nil || de.Kind != domain.KindInvalid || de.Code != "invalid_webhook_url" || de.Details["field"] != "url" {
				t.Errorf("ValidateURL(%.60q): %#v, want invalid_webhook_url naming url", tc.url, err)
			}
		}
	}
}

func TestForbiddenAddr(t *testing.T) {
	for addr, forbidden := range map[string]bool{
		"8.8.8.8": false, "2606:4700:4700::1111": false,
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "10.1.1.1": true, "192.168.1.1": true, "172.31.255.255": true,
		"169.254.169.254": true, "fe80::1": true, "fc00::1": true, "100.100.100.100": true, "0.0.0.0": true, "::": true,
		"224.0.0.1": true, "ff02::1": true, "::ffff:127.0.0.1": true, "192.0.2.1": true, "255.255.255.255": true,
	} {
		if got := webhook.ForbiddenAddr(netip.MustParseAddr(addr)); got != forbidden {
			t.Errorf("ForbiddenAddr(%s) = %v, want %v", addr, got, forbidden)
		}
	}
}

func TestValidateEvents(t *testing.T) {
	got, err := webhook.ValidateEvents([]string{"memory.updated", "key.revoked", "memory.updated"})
	if err != nil || strings.Join(got, ",") != "key.revoked,memory.updated" {
		t.Fatalf("got %v, %v; want sorted without repeats", got, err)
	}
	for _, bad := range [][]string{nil, {}, {"memory.deleted"}, {"memory.created", ""}, {"MEMORY.CREATED"}} {
		if _, err := webhook.ValidateEvents(bad); err == nil {
			t.Errorf("ValidateEvents(%q) accepted", bad)
		} else if de, _ := domain.AsError(err); de.Code != "invalid_webhook_events" || de.Details["field"] != "events" {
			t.Errorf("ValidateEvents(%q): %v", bad, err)
		}
	}
}

// TestSignature pins the signature format the docs' snippets compute:
// v1= and the hex HMAC-SHA256 of "timestamp.body" (want was computed
// with Python's hmac module, as the docs' snippet does).
func TestSignature(t *testing.T) {
	const want = "v1=1504f8c83db5b190e62ecc175f61b458d5a466ca74d034f695eecea1a518911c"
	got := webhook.Sign("whsec_test", 1700000000, []byte(`{"event":"memory.created"}`))
	if got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
	if !webhook.Verify("whsec_test", 1700000000, []byte(`{"event":"memory.created"}`), got) {
		t.Fatal("Verify refuses Sign's signature")
	}
	for name, verify := range map[string]bool{
		"other secret":    webhook.Verify("whsec_other", 1700000000, []byte(`{"event":"memory.created"}`), got),
		"other timestamp": webhook.Verify("whsec_test", 1700000001, []byte(`{"event":"memory.created"}`), got),
		"other body":      webhook.Verify("whsec_test", 1700000000, []byte(`{"event":"memory.created"} `), got),
	} {
		if verify {
			t.Errorf("%s verifies", name)
		}
	}
}

func event(t *testing.T, version uint64, p domain.Payload) domain.Event {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return domain.Event{ID: "e", Version: version, Type: p.EventType(), Payload: raw}
}

func TestSubscriptionsLimitAndDelete(t *testing.T) {
	now := time.Now()
	var events []domain.Event
	for i := range webhook.MaxPerUser {
		subs, err := webhook.Fold("u", events)
		if err != nil {
			t.Fatal(err)
		}
		reg, err := subs.Register(string(rune('a'+i)), "https://hooks.example.com/", []string{webhook.MemoryCreated}, "s", false, now)
		if err != nil {
			t.Fatalf("webhook %d: %v", i+1, err)
		}
		events = append(events, event(t, uint64(i), reg))
	}
	subs, _ := webhook.Fold("u", events)
	if _, err := subs.Register("z", "https://hooks.example.com/", []string{webhook.MemoryCreated}, "s", false, now); domain.ErrorKind(err) != domain.KindQuotaExceeded {
		t.Fatalf("webhook %d: %v, want quota_exceeded", webhook.MaxPerUser+1, err)
	}
	if _, err := subs.Delete("nope", now); domain.ErrorKind(err) != domain.KindNotFound {
		t.Fatalf("delete unknown: %v", err)
	}
	del, err := subs.Delete("a", now)
	if err != nil {
		t.Fatal(err)
	}
	subs, _ = webhook.Fold("u", append(events, event(t, uint64(len(events)), del)))
	if _, err := subs.Register("z", "https://hooks.example.com/", []string{webhook.MemoryCreated}, "s", false, now); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	if subs.Version() != int64(len(events)) {
		t.Fatalf("version %d, want %d", subs.Version(), len(events))
	}
}

func TestNotificationOf(t *testing.T) {
	ref := memory.AgentRef{UserID: "u1", AgentID: "a1"}
	for _, tc := range []struct {
		payload domain.Payload
		event   string
		data    map[string]any
	}{
		{memory.MemoryCreated{AgentRef: ref, MemoryID: "m1", Type: "note"}, webhook.MemoryCreated, map[string]any{"agent_id": "a1", "memory_id": "m1", "memory_type": memory.Type("note")}},
		{memory.MemoryPatched{AgentRef: ref, MemoryID: "m1"}, webhook.MemoryUpdated, map[string]any{"agent_id": "a1", "memory_id": "m1"}},
		{memory.MemoryForgotten{AgentRef: ref, MemoryID: "m1"}, webhook.MemoryForgotten, map[string]any{"agent_id": "a1", "memory_id": "m1"}},
		{account.APIKeyRevoked{UserID: "u1", KeyID: "k1"}, webhook.KeyRevoked, map[string]any{"key_id": "k1"}},
		{account.APIKeyCycled{UserID: "u1", OldKeyID: "k1", NewKey: account.KeyRecord{KeyID: "k2"}}, webhook.KeyRevoked, map[string]any{"key_id": "k1", "replaced_by": "k2"}},
		{processing.SuggestionCreated{AgentRef: processing.AgentRef{UserID: "u1", AgentID: "a1"}, SuggestionID: "s1", MemoryType: "note"}, webhook.SuggestionCreated,
			map[string]any{"agent_id": "a1", "memory_type": "note", "suggestion_id": "s1"}},
		{job.Completed{UserID: "u1", JobID: "j1"}, webhook.JobCompleted, map[string]any{"job_id": "j1"}},
	} {
		n, ok, err := webhook.NotificationOf(event(t, 0, tc.payload))
		if err != nil || !ok || n.UserID != "u1" || n.Event != tc.event {
			t.Fatalf("%s: %+v %v %v", tc.payload.EventType(), n, ok, err)
		}
		gotData, _ := json.Marshal(n.Data)
		wantData, _ := json.Marshal(tc.data)
		if string(gotData) != string(wantData) {
			t.Errorf("%s: data %s, want %s", tc.payload.EventType(), gotData, wantData)
		}
	}
	if _, ok, err := webhook.NotificationOf(event(t, 0, memory.MemoryEmbedded{AgentRef: ref})); ok || err != nil {
		t.Fatalf("MemoryEmbedded notifies: %v %v", ok, err)
	}
}
