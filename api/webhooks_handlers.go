package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/webhook"
)

// Webhooks are the webhook use cases (commands.Webhooks implements them).
type Webhooks interface {
	Create(ctx context.Context, meta domain.Metadata, url string, events []string) (commands.CreatedWebhook, error)
	List(ctx context.Context, actor domain.Actor) ([]webhook.View, error)
	Delete(ctx context.Context, meta domain.Metadata, webhookID string) error
	Deliveries(ctx context.Context, actor domain.Actor, q webhook.DeliveryQuery) (webhook.DeliveryPage, error)
}

// webhookRoutes mounts /webhooks: each user's own webhooks.
func (s *Server) webhookRoutes(r chi.Router) {
	if s.cfg.Webhooks == nil {
		return
	}
	r.Group(func(r chi.Router) {
		r.Use(s.requireAuth)
		r.Post("/webhooks", s.createWebhook)
		r.Get("/webhooks", s.listWebhooks)
		r.Delete("/webhooks/{webhook_id}", s.deleteWebhook)
		r.Get("/webhooks/{webhook_id}/deliveries", s.webhookDeliveries)
	})
}

func webhookJSON(v webhook.View) map[string]any {
	return map[string]any{"id": v.ID, "url": v.URL, "events": v.Events, "created_at": rfc3339UTC(v.CreatedAt)}
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) {
	var req struct {
		URL    *string  `json:"url"`
		Events []string `json:"events"`
	}
	if err := decodeJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.URL == nil {
		s.fail(w, r, domain.Invalid("url", "field %q is required", "url"))
		return
	}
	created, err := s.cfg.Webhooks.Create(r.Context(), meta(r), *req.URL, req.Events)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body := webhookJSON(created.View)
	body["secret"] = created.Secret
	noStore(w)
	writeData(w, http.StatusCreated, body)
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	views, err := s.cfg.Webhooks.List(r.Context(), actor(r.Context()))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list := make([]map[string]any, len(views))
	for i, v := range views {
		list[i] = webhookJSON(v)
	}
	writeData(w, http.StatusOK, map[string]any{"webhooks": list})
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "webhook_id")
	if err := s.cfg.Webhooks.Delete(r.Context(), meta(r), id); err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}

// webhookDeliveries serves a page of a webhook's deliveries, newest first:
// ?limit= (1-200, default 50) and ?cursor= (next_cursor of the previous
// page; null on the last).
func (s *Server) webhookDeliveries(w http.ResponseWriter, r *http.Request) {
	params := r.URL.Query()
	q := webhook.DeliveryQuery{WebhookID: chi.URLParam(r, "webhook_id"), Cursor: params.Get("cursor")}
	if v := params.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > webhook.MaxDeliveryLimit {
			s.fail(w, r, domain.Invalid("limit", "limit must be an integer from 1 to %d, got %q", webhook.MaxDeliveryLimit, v).WithDetail("limit", webhook.MaxDeliveryLimit))
			return
		}
		q.Limit = n
	}
	page, err := s.cfg.Webhooks.Deliveries(r.Context(), actor(r.Context()), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list := make([]map[string]any, len(page.Deliveries))
	for i, d := range page.Deliveries {
		list[i] = map[string]any{
			"id": d.ID, "webhook_id": d.WebhookID, "event": d.Event, "event_id": d.EventID, "status": d.Status, "attempts": d.Attempts,
			"created_at": rfc3339UTC(d.CreatedAt), "next_attempt_at": optionalRFC3339(d.NextAttemptAt),
			"last_status_code": d.LastStatusCode, "last_error": d.LastError, "delivered_at": optionalRFC3339(d.DeliveredAt),
		}
	}
	writeData(w, http.StatusOK, map[string]any{"deliveries": list, "next_cursor": cursorJSON(page.NextCursor)})
}

// optionalRFC3339 is a time that may be absent: null, or as rfc3339UTC.
func optionalRFC3339(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := rfc3339UTC(*t)
	return &s
}
