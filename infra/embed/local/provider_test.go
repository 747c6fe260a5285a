package local

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/engram-memory/engram/domain"
)

func TestProviderErrors(t *testing.T) {
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		req      domain.EmbedRequest
		wantKind domain.Kind
		wantCode string
	}{
		{"unknown model", context.Background(),
			domain.EmbedRequest{Model: "text-embedding-3-small", Texts: []string{"x"}},
			domain.KindInvalid, "model_not_available"},
		{"other dimensions", context.Background(),
			domain.EmbedRequest{Model: BuiltinModelName, Texts: []string{"x"}, Dimensions: 128},
			domain.KindInvalid, "invalid_request"},
		{"cancelled", cancelled,
			domain.EmbedRequest{Model: BuiltinModelName, Texts: []string{"x"}},
			domain.KindProviderUnavailable, "provider_unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Embed(tt.ctx, tt.req)
			e, ok := domain.AsError(err)
			if !ok || e.Kind != tt.wantKind || e.PublicCode() != tt.wantCode {
				t.Fatalf("err = %v, want kind %s code %s", err, tt.wantKind, tt.wantCode)
			}
		})
	}
	_, err = p.Embed(context.Background(), domain.EmbedRequest{Model: "nope", Texts: []string{"x"}})
	e, _ := domain.AsError(err)
	if got := e.Details["available_models"]; !slices.Equal(got.([]string), []string{BuiltinModelName, DefaultModelName}) {
		t.Errorf("available_models = %v", got)
	}
	_, err = p.Embed(cancelled, domain.EmbedRequest{Model: BuiltinModelName, Texts: []string{"x"}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancellation cause lost: %v", err)
	}
}

func TestProviderNativeDimensionsMayBeNamed(t *testing.T) {
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: BuiltinModelName, Texts: nil, Dimensions: 384})
	if err != nil || res.Dimensions != 384 || len(res.Vectors) != 0 || p.Name() != "local" {
		t.Fatalf("res %+v err %v", res, err)
	}
}
