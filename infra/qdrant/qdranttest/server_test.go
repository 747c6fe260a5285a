package qdranttest_test

import (
	"context"
	"math"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/engram-memory/engram/infra/qdrant/qdranttest"
)

// These tests hold the test server to Qdrant's documented behaviour, through
// go-client itself, independently of the adapter.

func client(t *testing.T, srv *qdranttest.Server, key string) *qdrant.Client {
	t.Helper()
	host, portText, err := net.SplitHostPort(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	c, err := qdrant.NewClient(&qdrant.Config{Host: host, Port: port, APIKey: key, SkipCompatibilityCheck: true, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func code(err error) codes.Code { return status.Code(err) }

var wait = qdrant.PtrOf(true)

func setup(t *testing.T) (*qdrant.Client, context.Context) {
	t.Helper()
	srv := qdranttest.Start(t, "k")
	c := client(t, srv, "k")
	ctx := context.Background()
	if err := c.CreateCollection(ctx, &qdrant.CreateCollection{CollectionName: "c",
		VectorsConfig: qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: 2, Distance: qdrant.Distance_Cosine})}); err != nil {
		t.Fatal(err)
	}
	pts := []*qdrant.PointStruct{
		{Id: qdrant.NewIDNum(1), Vectors: qdrant.NewVectorsDense([]float32{1, 0}), Payload: qdrant.NewValueMap(map[string]any{"k": "a", "tags": []any{"x", "y"}, "n": 10, "b": true})},
		{Id: qdrant.NewIDNum(2), Vectors: qdrant.NewVectorsDense([]float32{3, 3}), Payload: qdrant.NewValueMap(map[string]any{"k": "b", "tags": []any{"y"}, "n": 20, "b": false})},
		{Id: qdrant.NewIDNum(3), Vectors: qdrant.NewVectorsDense([]float32{-1, 0}), Payload: qdrant.NewValueMap(map[string]any{"k": "c", "tags": []any{}, "n": 30, "b": false})},
	}
	if _, err := c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: "c", Wait: wait, Points: pts}); err != nil {
		t.Fatal(err)
	}
	return c, ctx
}

func ids(t *testing.T, c *qdrant.Client, ctx context.Context, f *qdrant.Filter) []uint64 {
	t.Helper()
	res, err := c.Query(ctx, &qdrant.QueryPoints{CollectionName: "c", Query: qdrant.NewQueryDense([]float32{1, 0}), Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, p := range res {
		out = append(out, p.GetId().GetNum())
	}
	return out
}

func TestFilters(t *testing.T) {
	c, ctx := setup(t)
	for _, tc := range []struct {
		name string
		f    *qdrant.Filter
		want []uint64
	}{
		{"none", nil, []uint64{1, 2, 3}},
		{"match keyword", &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchKeyword("k", "b")}}, []uint64{2}},
		{"match any", &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchKeywords("k", "a", "c")}}, []uint64{1, 3}},
		{"list matches by element", &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchKeyword("tags", "y")}}, []uint64{1, 2}},
		{"two musts on a list: all of", &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchKeyword("tags", "x"), qdrant.NewMatchKeyword("tags", "y")}}, []uint64{1}},
		{"bool", &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchBool("b", false)}}, []uint64{2, 3}},
		{"range gte/lt", &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewRange("n", &qdrant.Range{Gte: qdrant.PtrOf(10.0), Lt: qdrant.PtrOf(30.0)})}}, []uint64{1, 2}},
		{"must_not", &qdrant.Filter{MustNot: []*qdrant.Condition{qdrant.NewMatchKeyword("k", "a")}}, []uint64{2, 3}},
		{"should", &qdrant.Filter{Should: []*qdrant.Condition{qdrant.NewMatchKeyword("k", "a"), qdrant.NewMatchKeyword("k", "c")}}, []uint64{1, 3}},
		{"missing key", &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchKeyword("nope", "a")}}, nil},
	} {
		got := ids(t, c, ctx, tc.f)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCosineScoresThresholdAndLimit(t *testing.T) {
	c, ctx := setup(t)
	res, err := c.Query(ctx, &qdrant.QueryPoints{CollectionName: "c", Query: qdrant.NewQueryDense([]float32{2, 0})})
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]float64{1: 1, 2: 1 / math.Sqrt2, 3: -1}
	for i, p := range res {
		if math.Abs(float64(p.GetScore())-want[p.GetId().GetNum()]) > 1e-6 {
			t.Errorf("point %d score %v, want %v", p.GetId().GetNum(), p.GetScore(), want[p.GetId().GetNum()])
		}
		if i > 0 && p.GetScore() > res[i-1].GetScore() {
			t.Errorf("not best first")
		}
	}
	res, err = c.Query(ctx, &qdrant.QueryPoints{CollectionName: "c", Query: qdrant.NewQueryDense([]float32{1, 0}), ScoreThreshold: qdrant.PtrOf(float32(0.5)), Limit: qdrant.PtrOf(uint64(1))})
	if err != nil || len(res) != 1 || res[0].GetId().GetNum() != 1 {
		t.Fatalf("threshold 0.5 limit 1: %v, %v", res, err)
	}
}

func TestWaitFalseAppliesLater(t *testing.T) {
	c, ctx := setup(t)
	resp, err := c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: "c", Points: []*qdrant.PointStruct{
		{Id: qdrant.NewIDNum(4), Vectors: qdrant.NewVectorsDense([]float32{1, 1}), Payload: qdrant.NewValueMap(map[string]any{"k": "d"})},
	}})
	if err != nil || resp.GetStatus() != qdrant.UpdateStatus_Acknowledged {
		t.Fatalf("upsert without wait: %v, %v", resp, err)
	}
	only := &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchKeyword("k", "d")}}
	if got := ids(t, c, ctx, only); len(got) != 0 {
		t.Fatalf("an upsert without wait was visible at once: %v", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(ids(t, c, ctx, only)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("an upsert without wait never became visible")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestErrorCodes(t *testing.T) {
	c, ctx := setup(t)
	_, err := c.Query(ctx, &qdrant.QueryPoints{CollectionName: "absent", Query: qdrant.NewQueryDense([]float32{1, 0})})
	if code(err) != codes.NotFound {
		t.Errorf("query of a missing collection: %v", err)
	}
	if _, err := c.Count(ctx, &qdrant.CountPoints{CollectionName: "absent"}); code(err) != codes.NotFound {
		t.Errorf("count of a missing collection: %v", err)
	}
	_, err = c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: "c", Wait: wait, Points: []*qdrant.PointStruct{
		{Id: qdrant.NewIDNum(9), Vectors: qdrant.NewVectorsDense([]float32{1, 0, 0})},
	}})
	if code(err) != codes.InvalidArgument {
		t.Errorf("vector of the wrong size: %v", err)
	}
	err = c.CreateCollection(ctx, &qdrant.CreateCollection{CollectionName: "c",
		VectorsConfig: qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: 2, Distance: qdrant.Distance_Cosine})})
	if code(err) != codes.InvalidArgument {
		t.Errorf("creating an existing collection: %v", err)
	}
	_, err = c.SetPayload(ctx, &qdrant.SetPayloadPoints{CollectionName: "c", Wait: wait, Payload: qdrant.NewValueMap(map[string]any{"k": "z"}),
		PointsSelector: qdrant.NewPointsSelector(qdrant.NewIDNum(99))})
	if code(err) != codes.NotFound {
		t.Errorf("set payload of an absent point id: %v", err)
	}
	_, err = c.Query(ctx, &qdrant.QueryPoints{CollectionName: "c", Query: qdrant.NewQueryDense([]float32{1, 0}), Offset: qdrant.PtrOf(uint64(1))})
	if code(err) != codes.Unimplemented {
		t.Errorf("a request the test server does not implement: %v", err)
	}
}

func TestAPIKey(t *testing.T) {
	srv := qdranttest.Start(t, "k")
	ctx := context.Background()
	if _, err := client(t, srv, "").HealthCheck(ctx); err != nil {
		t.Errorf("health check without a key: %v", err)
	}
	for _, key := range []string{"", "wrong"} {
		if _, err := client(t, srv, key).ListCollections(ctx); code(err) != codes.Unauthenticated {
			t.Errorf("list with key %q: %v", key, err)
		}
	}
	if _, err := client(t, srv, "k").ListCollections(ctx); err != nil {
		t.Errorf("list with the key: %v", err)
	}
}
