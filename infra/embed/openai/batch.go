package openai

// span is a half-open range [start, end) of a request's texts sent as one
// provider request.
type span struct{ start, end int }

// estimateTokens over-estimates a text's token count without a tokenizer:
// English averages ~4 bytes per token, code and non-Latin scripts fewer, so
// one token per 3 bytes (plus one) stays on the safe side for the per-request
// token budget.
func estimateTokens(text string) int { return len(text)/3 + 1 }

// splitBatches cuts texts into consecutive spans of at most maxInputs texts
// and at most maxTokens estimated tokens. A text above the budget on its own
// gets a span of its own, for the provider to accept or reject.
func splitBatches(texts []string, maxInputs, maxTokens int) []span {
	var spans []span
	start, tokens := 0, 0
	for i, text := range texts {
		t := estimateTokens(text)
		if i > start && (i-start >= maxInputs || tokens+t > maxTokens) {
			spans = append(spans, span{start, i})
			start, tokens = i, 0
		}
		tokens += t
	}
	if start < len(texts) {
		spans = append(spans, span{start, len(texts)})
	}
	return spans
}
