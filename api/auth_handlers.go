package api

import "github.com/go-chi/chi/v5"

// Accounts is the account and key use-case surface the API needs.
type Accounts interface{}

func (s *Server) accountRoutes(r chi.Router) {}
