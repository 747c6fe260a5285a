package kurrentdbtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/google/uuid"
	kdb "github.com/kurrent-io/KurrentDB-Client-Go/kurrentdb"

	"github.com/engram-memory/engram/infra/kurrentdb/kurrentdbtest"
)

func start(t *testing.T, opts kurrentdbtest.Options) (*kurrentdbtest.Server, *kdb.Client) {
	t.Helper()
	srv, err := kurrentdbtest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	conf, err := kdb.ParseConnectionString(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	conf.Logger = kdb.NoopLogging()
	c, err := kdb.NewClient(conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, c
}

func record(typ string, data string) kdb.EventData {
	return kdb.EventData{EventID: uuid.New(), EventType: typ, ContentType: kdb.ContentTypeJson, Data: []byte(data)}
}

func request(stream string, state kdb.StreamState, events ...kdb.EventData) kdb.AppendStreamRequest {
	return kdb.AppendStreamRequest{StreamName: stream, Events: slices.Values(events), ExpectedStreamState: state}
}

func readStream(t *testing.T, c *kdb.Client, stream string) []*kdb.RecordedEvent {
	t.Helper()
	rs, err := c.ReadStream(context.Background(), stream, kdb.ReadStreamOptions{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []*kdb.RecordedEvent
	for {
		e, err := rs.Recv()
		var kerr *kdb.Error
		switch {
		case errors.Is(err, io.EOF):
			return out
		case errors.As(err, &kerr) && kerr.IsErrorCode(kdb.ErrorCodeResourceNotFound):
			return nil
		case err != nil:
			t.Fatal(err)
		}
		out = append(out, e.Event)
	}
}

// TestAppendSession: the v2 multi-stream append of KurrentDB 25.1 as the
// client sees it: the records of every stream in one write, in order, the
// last record's commit position and each stream's revision; properties
// read back through v1 as JSON custom metadata with the schema's name
// and format.
func TestAppendSession(t *testing.T) {
	_, c := start(t, kurrentdbtest.Options{})
	ctx := context.Background()
	first := record("Created", `{"n":1}`)
	first.Metadata = []byte(`{"actor":"{\"kind\":\"user\"}","schema_version":"1"}`)
	res, err := c.MultiStreamAppend(ctx, slices.Values([]kdb.AppendStreamRequest{
		request("a", kdb.NoStream{}, first, record("Updated", `{"n":2}`)),
		request("b", kdb.Any{}, record("Created", `{"n":3}`)),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Responses) != 2 || res.Responses[0].StreamRevision != 1 || res.Responses[1].StreamRevision != 0 {
		t.Fatalf("responses %+v, want a at revision 1, b at 0", res.Responses)
	}
	a, b := readStream(t, c, "a"), readStream(t, c, "b")
	if len(a) != 2 || len(b) != 1 || !(a[0].Position.Commit < a[1].Position.Commit && a[1].Position.Commit < b[0].Position.Commit) {
		t.Fatalf("a holds %d, b %d records; want 2 and 1, in the order sent", len(a), len(b))
	}
	if uint64(res.Position) != b[0].Position.Commit || b[0].Position.Prepare != b[0].Position.Commit {
		t.Fatalf("session position %d, last record at %+v; want the last record's commit (= prepare) position", res.Position, b[0].Position)
	}
	var meta map[string]string
	if err := json.Unmarshal(a[0].UserMetadata, &meta); err != nil {
		t.Fatalf("custom metadata %s: %v", a[0].UserMetadata, err)
	}
	want := map[string]string{"actor": `{"kind":"user"}`, "schema_version": "1", "$schema.name": "Created", "$schema.format": "Json"}
	if !maps(meta, want) || a[0].EventID != first.EventID || a[0].ContentType != "application/json" {
		t.Fatalf("first record: metadata %v, id %s, content type %s; want %v, id %s, JSON", meta, a[0].EventID, a[0].ContentType, want, first.EventID)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestAppendSessionRefusals: a session refused for any one stream writes
// nothing, with the error and details KurrentDB 25.1 sends and the client
// maps; a 24.10 server has no v2 service at all.
func TestAppendSessionRefusals(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		opts     kurrentdbtest.Options
		requests []kdb.AppendStreamRequest
		want     kdb.ErrorCode
		check    func(t *testing.T, err error)
	}{
		{
			name:     "a wrong expected revision on the second stream",
			requests: []kdb.AppendStreamRequest{request("fresh", kdb.NoStream{}, record("E", `{}`)), request("taken", kdb.NoStream{}, record("E", `{}`))},
			want:     kdb.ErrorCodeStreamRevisionConflict,
			check: func(t *testing.T, err error) {
				var conflict *kdb.StreamRevisionConflictError
				if !errors.As(err, &conflict) || conflict.Stream != "taken" || conflict.ExpectedRevision != (kdb.NoStream{}) || conflict.ActualRevision != (kdb.StreamRevision{Value: 0}) {
					t.Fatalf("details %#v, want stream taken, expected no stream, actual revision 0", conflict)
				}
			},
		},
		{
			name:     "an exact revision behind",
			requests: []kdb.AppendStreamRequest{request("fresh", kdb.Any{}, record("E", `{}`)), request("taken", kdb.Revision(3), record("E", `{}`))},
			want:     kdb.ErrorCodeStreamRevisionConflict,
		},
		{
			name:     "a stream that must exist",
			requests: []kdb.AppendStreamRequest{request("fresh", kdb.StreamExists{}, record("E", `{}`))},
			want:     kdb.ErrorCodeStreamRevisionConflict,
		},
		{
			name:     "a tombstoned stream",
			requests: []kdb.AppendStreamRequest{request("fresh", kdb.Any{}, record("E", `{}`)), request("gone", kdb.Any{}, record("E", `{}`))},
			want:     kdb.ErrorCodeStreamTombstoned,
		},
		{
			name:     "one stream twice",
			requests: []kdb.AppendStreamRequest{request("fresh", kdb.Any{}, record("E", `{}`)), request("FRESH", kdb.Any{}, record("E", `{}`))},
			want:     kdb.ErrorAborted,
		},
		{
			name:     "over MaxAppendSize together",
			opts:     kurrentdbtest.Options{MaxAppendSize: 100},
			requests: []kdb.AppendStreamRequest{request("fresh", kdb.Any{}, record("E", `{"pad":"0123456789012345678901234567890123456789"}`)), request("other", kdb.Any{}, record("E", `{"pad":"0123456789012345678901234567890123456789"}`))},
			want:     kdb.ErrorCodeAppendTransactionSizeExceeded,
			check: func(t *testing.T, err error) {
				var tooLarge *kdb.AppendTransactionSizeExceededError
				if !errors.As(err, &tooLarge) || tooLarge.MaxSize != 100 || tooLarge.Size <= 100 {
					t.Fatalf("details %#v, want the size over a maximum of 100", tooLarge)
				}
			},
		},
		{
			name:     "KurrentDB 24.10",
			opts:     kurrentdbtest.Options{Version: kurrentdbtest.Version24_10},
			requests: []kdb.AppendStreamRequest{request("fresh", kdb.Any{}, record("E", `{}`))},
			want:     kdb.ErrorCodeUnsupportedFeature,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, client := start(t, c.opts)
			if _, err := client.AppendToStream(ctx, "taken", kdb.AppendToStreamOptions{StreamState: kdb.NoStream{}}, record("E", `{}`)); err != nil {
				t.Fatal(err)
			}
			if _, err := client.TombstoneStream(ctx, "gone", kdb.TombstoneStreamOptions{StreamState: kdb.Any{}}); err != nil {
				t.Fatal(err)
			}
			_, err := client.MultiStreamAppend(ctx, slices.Values(c.requests))
			var kerr *kdb.Error
			if !errors.As(err, &kerr) || kerr.Code() != c.want {
				t.Fatalf("err = %v, want error code %d", err, c.want)
			}
			if c.check != nil {
				c.check(t, kerr.Err())
			}
			for _, stream := range []string{"fresh", "other", "FRESH"} {
				if got := readStream(t, client, stream); len(got) != 0 {
					t.Fatalf("%s holds %d records after a refused session, want none", stream, len(got))
				}
			}
			if got := readStream(t, client, "taken"); len(got) != 1 {
				t.Fatalf("taken holds %d records, want its 1", len(got))
			}
			if n := srv.Sessions(); n != 0 {
				t.Fatalf("%d sessions wrote, want none", n)
			}
		})
	}
}
