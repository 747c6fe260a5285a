package api

import "github.com/go-chi/chi/v5"

// Memories is the agent and memory use-case surface the API needs.
type Memories interface{}

func (s *Server) memoryRoutes(r chi.Router) {}
