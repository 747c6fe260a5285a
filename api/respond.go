package api

import (
	"encoding/json"
	"net/http"
)

// writeJSON writes v as the response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeData sends the success envelope around data.
func writeData(w http.ResponseWriter, status int, data any) {
	writeJSON(w, status, struct {
		Success bool `json:"success"`
		Data    any  `json:"data"`
	}{true, data})
}
