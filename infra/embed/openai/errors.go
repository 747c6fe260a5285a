package openai

import (
	"net/http"

	"github.com/engram-memory/engram/domain"
)

// permanentError maps a failure that retrying will not fix. The provider's
// own message is passed on only where it is about the caller's input; for
// authentication it may quote (part of) our key, so it stays in Err.
func permanentError(model string, f failure) *domain.Error {
	var e *domain.Error
	switch {
	case f.status == http.StatusBadRequest || f.status == http.StatusRequestEntityTooLarge ||
		f.status == http.StatusUnprocessableEntity:
		e = domain.Invalid("texts", "the embedding provider rejected the input for %s: %s", model, f.message).
			WithCode(domain.CodeProviderRejectedInput).
			WithDetail("provider_status", f.status)
	case f.status == http.StatusUnauthorized || f.status == http.StatusForbidden:
		e = domain.Errorf(domain.KindProviderUnavailable,
			"the embedding provider refused our credentials (HTTP %d); check the configured API key", f.status).
			WithCode("provider_auth_failed")
	case f.status == http.StatusNotFound:
		e = domain.Errorf(domain.KindProviderUnavailable,
			"the embedding provider has no endpoint or model %q (HTTP 404); check the base URL and model", model).
			WithCode("provider_model_not_found")
	case f.code == "insufficient_quota":
		e = domain.Errorf(domain.KindProviderUnavailable, "the embedding provider's quota is exhausted").
			WithCode("provider_quota_exceeded")
	default:
		e = domain.Errorf(domain.KindProviderUnavailable, "the embedding provider failed for %s (HTTP %d)", model, f.status)
	}
	e.Err = f.err
	return e
}

// unavailableError reports a provider that stayed unreachable or overloaded.
func unavailableError(model string, attempts int, reason string, f failure) *domain.Error {
	e := domain.Errorf(domain.KindProviderUnavailable,
		"the embedding provider is unavailable for %s after %d attempt(s): %s", model, attempts, reason).
		WithDetail("attempts", attempts)
	if f.status != 0 {
		e = e.WithDetail("provider_status", f.status)
	}
	e.Err = f.err
	return e
}
