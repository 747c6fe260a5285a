package api

import "github.com/go-chi/chi/v5"

// Searcher runs searches over an agent's memories.
type Searcher interface{}

func (s *Server) searchRoutes(r chi.Router) {}
