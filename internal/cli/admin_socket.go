package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/projections"
)

// The admin channel: `engram serve` listens on a Unix socket in its data
// dir, reachable only by the data dir's owner (the socket is 0600 and the
// data dir 0700), so `engram projections rebuild NAME` beside a live
// server asks the server to rebuild the projection instead of being
// refused by the data dir lock. HTTP over the socket, the API's envelope.

// adminSocketName is the admin channel's file in the data dir.
const adminSocketName = "admin.sock"

// maxSocketPath is the longest path a Unix socket can be bound to on
// Linux (sun_path is 108 bytes with its terminating NUL).
const maxSocketPath = 107

// rebuildResult is what a live rebuild answers.
type rebuildResult struct {
	Projection string  `json:"projection"`
	Events     uint64  `json:"events"`
	Seconds    float64 `json:"seconds"`
}

// serveAdminSocket listens on the data dir's admin socket until stop. The
// socket is bound under a temporary name and renamed into place once it
// is 0600, so it is never reachable with looser permissions. A socket
// file left by a server that died is replaced: the caller holds the data
// dir's lock, so no live server owns it.
func serveAdminSocket(dataDir string, st *app.Core, logger *slog.Logger) (stop func(), err error) {
	path := filepath.Join(dataDir, adminSocketName)
	tmp := filepath.Join(dataDir, "."+adminSocketName+".new")
	if len(tmp) > maxSocketPath {
		// The server runs without it: `engram projections rebuild` then
		// needs the server stopped, as before.
		logger.Warn("no admin socket: the data dir's path is too long for a Unix socket; live projection rebuilds are unavailable", "path", path, "max_bytes", maxSocketPath)
		return func() {}, nil
	}
	_ = os.Remove(tmp)
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // it is removed by its final name
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /projections/{name}/rebuild", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		start := time.Now()
		logger.Info("live rebuild started", "projection", name)
		events, err := st.LiveRebuild(r.Context(), name)
		if err != nil {
			logger.Warn("live rebuild failed", "projection", name, "error", err)
			writeAdminError(w, err)
			return
		}
		res := rebuildResult{Projection: name, Events: events, Seconds: time.Since(start).Seconds()}
		logger.Info("live rebuild done", "projection", name, "events", events, "seconds", res.Seconds)
		writeAdminJSON(w, http.StatusOK, map[string]any{"success": true, "data": res})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("admin socket stopped", "error", err)
		}
	}()
	return func() {
		srv.Close() // a rebuild under way is cancelled; it is redone by the next request
		<-done
		os.Remove(path)
	}, nil
}

// writeAdminError maps a live rebuild's error to the API's codes.
func writeAdminError(w http.ResponseWriter, err error) {
	status, code, msg := http.StatusInternalServerError, "internal", err.Error()
	switch {
	case errors.Is(err, projections.ErrUnknownProjection):
		status, code = http.StatusNotFound, "not_found"
	case errors.Is(err, app.ErrNotLiveRebuildable), errors.Is(err, projections.ErrRebuilding):
		status, code = http.StatusConflict, "conflict"
	}
	writeAdminJSON(w, status, map[string]any{"success": false, "error": map[string]string{
		"code": code, "message": msg, "request_id": uuid.NewString(),
	}})
}

func writeAdminJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// liveServerOn reports whether a server listens on dataDir's admin
// socket.
func liveServerOn(dataDir string) bool {
	conn, err := net.Dial("unix", filepath.Join(dataDir, adminSocketName))
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// rebuildLive asks the server live on dataDir to rebuild name.
func rebuildLive(ctx context.Context, dataDir, name string) (rebuildResult, error) {
	path := filepath.Join(dataDir, adminSocketName)
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://engram-admin/projections/"+url.PathEscape(name)+"/rebuild", nil)
	if err != nil {
		return rebuildResult{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return rebuildResult{}, fmt.Errorf("live rebuild of %s: %w", name, err)
	}
	defer resp.Body.Close()
	var body struct {
		Data  rebuildResult `json:"data"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return rebuildResult{}, fmt.Errorf("live rebuild of %s: answer: %w", name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return rebuildResult{}, fmt.Errorf("live rebuild of %s: %s", name, body.Error.Message)
	}
	return body.Data, nil
}
