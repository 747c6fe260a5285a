package api

import "github.com/go-chi/chi/v5"

// Embeddings is the embedding and re-embedding use-case surface the API needs.
type Embeddings interface{}

func (s *Server) embeddingRoutes(r chi.Router) {}
