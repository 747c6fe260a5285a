package api

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/engram-memory/engram/api/httpstatus"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
)

// The OpenAI-compatible embeddings endpoint, POST /v1/embeddings: OpenAI's
// request, response and error shapes (no Engram envelope), so any OpenAI
// SDK can use Engram as its embedding server by changing its base URL.

type openAIEmbeddingRequest struct {
	Input          json.RawMessage `json:"input"`
	Model          *string         `json:"model"`
	Dimensions     *int            `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
	User           string          `json:"user"` // accepted and ignored, as a hint for abuse monitoring
}

type openAIEmbedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string
}

type openAIEmbeddingResponse struct {
	Object string            `json:"object"`
	Data   []openAIEmbedding `json:"data"`
	Model  string            `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func (s *Server) openAIEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req openAIEmbeddingRequest
	if err := decodeJSON(r, &req); err != nil {
		s.failOpenAI(w, r, err)
		return
	}
	texts, single, err := openAIInput(req.Input)
	if err != nil {
		s.failOpenAI(w, r, err)
		return
	}
	if req.Model == nil || strings.TrimSpace(*req.Model) == "" {
		s.failOpenAI(w, r, domain.Invalid("model", "you must provide a model parameter (\"default\" selects the server's default model)"))
		return
	}
	format := req.EncodingFormat
	if format != "" && format != "float" && format != "base64" {
		s.failOpenAI(w, r, domain.Invalid("encoding_format", "encoding_format must be \"float\" or \"base64\", not %q", format))
		return
	}
	dims := 0
	if req.Dimensions != nil {
		if *req.Dimensions < 1 {
			s.failOpenAI(w, r, domain.Invalid("dimensions", "dimensions must be a positive integer"))
			return
		}
		dims = *req.Dimensions
	}
	res, err := s.cfg.Embeddings.Generate(r.Context(), commands.GenerateRequest{
		Texts: texts, Model: *req.Model, Dimensions: dims, Field: "input", Single: single,
	})
	if err != nil {
		s.failOpenAI(w, r, err)
		return
	}
	out := openAIEmbeddingResponse{Object: "list", Model: res.Model, Data: make([]openAIEmbedding, len(res.Vectors))}
	for i, v := range res.Vectors {
		out.Data[i] = openAIEmbedding{Object: "embedding", Index: i, Embedding: v}
		if format == "base64" {
			out.Data[i].Embedding = base64Floats(v)
		}
	}
	out.Usage.PromptTokens, out.Usage.TotalTokens = res.TokensUsed, res.TokensUsed
	writeJSON(w, http.StatusOK, out)
}

// openAIModel is one entry of GET /v1/models, OpenAI's model object. The
// catalogue has no creation dates, so created is 0 (the epoch) rather
// than a made-up date.
type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func modelObject(m domain.CatalogEntry) openAIModel {
	return openAIModel{ID: m.Name, Object: "model", OwnedBy: m.Provider}
}

// openAIModels lists, in OpenAI's shape, the models POST /v1/embeddings
// can use here: the catalogue's available ones (GET /v1/embeddings/models
// lists the whole catalogue in Engram's shape).
func (s *Server) openAIModels(w http.ResponseWriter, r *http.Request) {
	data := []openAIModel{}
	for _, m := range s.cfg.Queries.Models(r.Context()) {
		if m.Available {
			data = append(data, modelObject(m))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// openAIModel answers GET /v1/models/{model}: one available model, or
// OpenAI's 404 model_not_found.
func (s *Server) openAIModel(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "model")
	for _, m := range s.cfg.Queries.Models(r.Context()) {
		if m.Available && m.Name == name {
			writeJSON(w, http.StatusOK, modelObject(m))
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]openAIError{"error": {
		Message: fmt.Sprintf("the model %q does not exist or is not available here", name),
		Type:    "invalid_request_error", Param: ptr("model"), Code: ptr("model_not_found"),
	}})
}

func ptr[T any](v T) *T { return &v }

// openAIInput reads input: a string or an array of strings. Token arrays
// (of integers, or arrays of them) are OpenAI's too, but Engram's models
// have their own tokenizers, so they are refused rather than guessed at.
func openAIInput(raw json.RawMessage) (texts []string, single bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true, domain.Invalid("input", "input is required: a string or an array of strings")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, true, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, false, domain.Invalid("input", "input must be a string or an array of strings")
	}
	texts = make([]string, len(items))
	for i, item := range items {
		if json.Unmarshal(item, &texts[i]) != nil {
			trimmed := strings.TrimSpace(string(item))
			if trimmed != "" && (trimmed[0] == '[' || trimmed[0] == '-' || (trimmed[0] >= '0' && trimmed[0] <= '9')) {
				return nil, false, domain.Invalid("input", "input[%d]: token arrays are not supported; send the text itself", i).WithDetail("index", i)
			}
			return nil, false, domain.Invalid("input", "input[%d] must be a string", i).WithDetail("index", i)
		}
	}
	return texts, false, nil
}

// base64Floats encodes a vector as OpenAI does: little-endian float32 bytes.
func base64Floats(v []float32) string {
	buf := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(buf)
}

// failUnrouted answers a request that a middleware refuses before routing
// in the error shape of the route it was for: OpenAI's on the
// OpenAI-compatible routes, the failure envelope elsewhere.
func (s *Server) failUnrouted(w http.ResponseWriter, r *http.Request, err error) {
	if isOpenAIRoute(r.URL.Path) {
		s.failOpenAI(w, r, err)
		return
	}
	s.fail(w, r, err)
}

// isOpenAIRoute tells whether path is one of the OpenAI-compatible routes.
func isOpenAIRoute(path string) bool {
	path = strings.TrimSuffix(path, "/")
	return path == "/v1/embeddings" || path == "/v1/models" || strings.HasPrefix(path, "/v1/models/")
}

// openAIAuth is requireAuth with OpenAI's error shape.
func (s *Server) openAIAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		actor, err := s.authenticate(w, r)
		if err != nil {
			s.failOpenAI(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, actor)))
	})
}

type openAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// failOpenAI sends err in OpenAI's error shape with the status OpenAI uses
// for the same condition; internal errors get a generic message and go to
// the log, as in writeError.
func (s *Server) failOpenAI(w http.ResponseWriter, r *http.Request, err error) {
	noteFailure(r.Context(), err)
	status, body := http.StatusInternalServerError, openAIError{Message: "internal error", Type: "server_error"}
	var de *domain.Error
	if errors.As(err, &de) && de.Kind != domain.KindInternal {
		status, body = httpstatus.Of(de.Kind), openAIError{Message: de.Message, Type: "invalid_request_error"}
		code := de.PublicCode()
		if field, ok := de.Details["field"].(string); ok {
			body.Param = &field
		}
		switch de.Kind {
		case domain.KindInvalid:
			if code == "model_not_available" {
				// OpenAI answers an unknown model with 404 model_not_found.
				status, code = http.StatusNotFound, "model_not_found"
				if models, ok := de.Details["available_models"].([]string); ok {
					body.Message += "; available models: " + strings.Join(models, ", ")
				}
			}
		case domain.KindUnauthorized:
			w.Header().Set("WWW-Authenticate", `Bearer realm="engram"`)
			code = "invalid_api_key"
		case domain.KindRateLimited:
			body.Type, code = "requests", "rate_limit_exceeded"
		case domain.KindProviderUnavailable:
			body.Type = "server_error"
		}
		body.Code = &code
	} else {
		s.logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "request_id", requestID(r.Context()), "error", err)
	}
	if status == 0 {
		status = http.StatusInternalServerError
	}
	writeJSON(w, status, struct {
		Error openAIError `json:"error"`
	}{body})
}
