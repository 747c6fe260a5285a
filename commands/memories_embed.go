package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
)

// embedTexts asks e for one vector per text in exactly model and dims, and
// checks the answer before anything is recorded: a vector of another model
// or size would be stored against the wrong index.
func embedTexts(ctx context.Context, e Embedder, timeout time.Duration, model string, dims int, texts []string) ([][]float32, error) {
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := e.Embed(callCtx, domain.EmbedRequest{Model: model, Texts: texts, Dimensions: dims})
	if err != nil {
		return nil, err
	}
	if res.Model != model || res.Dimensions != dims || len(res.Vectors) != len(texts) {
		return nil, fmt.Errorf("commands: provider answered %d vectors of %s/%d for %d texts of %s/%d",
			len(res.Vectors), res.Model, res.Dimensions, len(texts), model, dims)
	}
	for i, v := range res.Vectors {
		if len(v) != dims {
			return nil, fmt.Errorf("commands: provider vector %d has %d dimensions, not %d", i, len(v), dims)
		}
	}
	return res.Vectors, nil
}
