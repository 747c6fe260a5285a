package api

import (
	"bufio"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
)

// ndjson is the media type of exports and imports: JSON Lines.
const ndjson = "application/x-ndjson"

// Transferer exports and imports agents; commands.Transfer implements it.
type Transferer interface {
	Export(ctx context.Context, userID, agentID, format, origin string, emit func(commands.ExportLine) error) error
	Import(ctx context.Context, meta domain.Metadata, agentID string, header commands.ExportHeader, lines []commands.ExportLine) (commands.ImportResult, error)
}

// transferRoutes mounts GET /agents/{agent_id}/export and
// POST /agents/{agent_id}/import.
func (s *Server) transferRoutes(r chi.Router) {
	if s.cfg.Transfer == nil {
		return
	}
	r.Group(func(r chi.Router) {
		r.Use(s.requireAuth)
		r.Get("/agents/{agent_id}/export", s.exportAgent)
		r.Post("/agents/{agent_id}/import", s.importAgent)
	})
}

// exportFlushLines is how many lines an export writes between flushes:
// the client sees progress, and the server holds no more than a page.
const exportFlushLines = 256

// exportAgent serves GET /agents/{agent_id}/export?format=events|memories
// as JSON Lines, streamed. Errors found before the first line (an unknown
// agent, a bad format) are the usual envelope; an error after it ends the
// stream early, which the client sees as a body without the lines it
// counted (the header says nothing of a count, so the CLI compares with
// the agent's stats) and the server logs.
func (s *Server) exportAgent(w http.ResponseWriter, r *http.Request) {
	agentID := chi.URLParam(r, "agent_id")
	rc := http.NewResponseController(w)
	var bw *bufio.Writer
	var enc *json.Encoder
	lines := 0
	emit := func(l commands.ExportLine) error {
		if bw == nil {
			w.Header().Set("Content-Type", ndjson)
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
			bw = bufio.NewWriterSize(w, 64<<10)
			enc = json.NewEncoder(bw)
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
		lines++
		if lines%exportFlushLines == 0 {
			return s.flushExport(rc, bw)
		}
		return nil
	}
	err := s.cfg.Transfer.Export(r.Context(), actor(r.Context()).UserID, agentID, r.URL.Query().Get("format"), s.publicURL(r)+"/v1", emit)
	if bw == nil {
		if err != nil {
			s.fail(w, r, err)
		}
		return
	}
	if err == nil {
		err = s.flushExport(rc, bw)
	}
	if err != nil {
		s.logger.Warn("export ended early", "request_id", requestID(r.Context()), "agent_id", agentID, "lines", lines, "error", err)
	}
}

// flushExport sends what the export wrote so far, and gives the next
// stretch of the stream a fresh write deadline: a long export is bounded
// per stretch, not as a whole.
func (s *Server) flushExport(rc *http.ResponseController, bw *bufio.Writer) error {
	if err := bw.Flush(); err != nil {
		return err
	}
	if s.cfg.WriteTimeout > 0 {
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	}
	return rc.Flush()
}

// importAgent serves POST /agents/{agent_id}/import: a body of JSON Lines
// (an export, either form), bounded by the request body limit, imported
// all or nothing.
func (s *Server) importAgent(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != ndjson {
		s.fail(w, r, domain.Errorf(domain.KindUnsupportedMedia, "an import is JSON Lines: send Content-Type: %s", ndjson))
		return
	}
	header, lines, err := commands.ReadImport(r.Body)
	if err != nil {
		if isTooLarge(err) {
			err = jsonError(err)
		}
		s.fail(w, r, err)
		return
	}
	res, err := s.cfg.Transfer.Import(r.Context(), meta(r), chi.URLParam(r, "agent_id"), header, lines)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, res)
}
