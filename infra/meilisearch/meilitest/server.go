// Package meilitest runs an in-process HTTP server that speaks the part of
// Meilisearch's REST API the adapter in infra/meilisearch uses, so its
// tests exercise real HTTP through meilisearch-go: no Meilisearch server
// can be installed on these machines (issue 8 §3).
//
// It follows Meilisearch's documented semantics where the adapter depends
// on them:
//   - writes are asynchronous: a write answers 202 with an enqueued task,
//     and a worker runs tasks one at a time, in order; each stays
//     enqueued, then processing, for Options.TaskDelay, and its changes
//     show when GET /tasks/{uid} says succeeded (or failed: then none);
//   - API-key auth (Authorization: Bearer), /health open to all;
//   - filters: = != > >= < <= on numbers and strings (an array field
//     matches when one element does), IN [...], AND, OR, NOT, parentheses,
//     only on filterable attributes;
//   - search (also as /multi-search without federation) over the
//     searchable attributes ("*" = every string field),
//     at most the first 10 query words, "-word" excludes, matching
//     strategies last, all and frequency, rankingScoreThreshold,
//     _rankingScore in [0, 1];
//   - custom ranking rules ("attr:asc", "attr:desc") order documents of
//     equal score, without changing it;
//   - errors as {message, code, type, link}.
//
// The ranking is NOT Meilisearch's (no typo tolerance, prefixes,
// proximity or exactness): a document scores the share of query words it
// contains, a little less the further its matched words stand from the
// start of their attribute, and less when its first match is in a later
// searchable attribute; equal scores follow the custom ranking rules,
// then insertion order.
package meilitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options configure a Server.
type Options struct {
	// APIKey, when set, is required as "Authorization: Bearer <key>" on
	// every route but /health.
	APIKey string
	// Version is the pkgVersion GET /version reports (default "1.12.0").
	Version string
	// TaskDelay is how long a task stays enqueued, and then processing,
	// before its changes show (default 10ms each), so a client that does
	// not wait for its tasks reads stale data.
	TaskDelay time.Duration
	// PayloadLimit is the largest request body accepted, in bytes
	// (DefaultPayloadLimit when 0); a larger one is refused whole with 413
	// payload_too_large.
	PayloadLimit int64
}

// DefaultPayloadLimit is Meilisearch's --http-payload-size-limit default,
// "100 MB" (100,000,000 bytes; docs: configuration, "Payload limit size").
const DefaultPayloadLimit = 100_000_000

// Server is a running test server.
type Server struct {
	// URL is the base URL, http://127.0.0.1:port.
	URL string

	http *httptest.Server
	opts Options

	mu      sync.Mutex
	indexes map[string]*index
	tasks   []*task // tasks[i].UID == i
	pending []*task // enqueued, in order
	held    bool
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// New starts a server; it is closed when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Version == "" {
		opts.Version = "1.12.0"
	}
	if opts.PayloadLimit <= 0 {
		opts.PayloadLimit = DefaultPayloadLimit
	}
	if opts.TaskDelay <= 0 {
		opts.TaskDelay = 10 * time.Millisecond
	}
	s := &Server{opts: opts, indexes: map[string]*index{}, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	s.http = httptest.NewServer(s.routes())
	s.URL = s.http.URL
	go s.work()
	t.Cleanup(s.Close)
	return s
}

// Close stops the worker and the HTTP server; later requests fail to
// connect, as with a server that went down.
func (s *Server) Close() {
	select {
	case <-s.stop:
		return
	default:
	}
	close(s.stop)
	<-s.done
	s.http.Close()
}

// HoldTasks stops (true) or resumes (false) the worker: held tasks stay
// enqueued, as on a server busy with a long task.
func (s *Server) HoldTasks(hold bool) {
	s.mu.Lock()
	s.held = hold
	s.mu.Unlock()
	s.poke()
}

// Document returns the stored document with that id in the index (its
// fields as JSON), for tests that check what the adapter wrote.
func (s *Server) Document(indexUID, id string) (map[string]json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix := s.indexes[indexUID]
	if ix == nil {
		return nil, false
	}
	d, ok := ix.docs[id]
	if !ok {
		return nil, false
	}
	out := make(map[string]json.RawMessage, len(d.fields))
	for k, v := range d.fields {
		out[k] = v
	}
	return out, true
}

// Documents returns every stored document of the index by id (their
// fields as JSON), for tests that compare whole indexes.
func (s *Server) Documents(indexUID string) map[string]map[string]json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]map[string]json.RawMessage{}
	if ix := s.indexes[indexUID]; ix != nil {
		for id, d := range ix.docs {
			out[id] = maps.Clone(d.fields)
		}
	}
	return out
}

// Settings returns the index's filterable and searchable attributes.
func (s *Server) Settings(indexUID string) (filterable, searchable []string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix := s.indexes[indexUID]
	if ix == nil {
		return nil, nil, false
	}
	return append([]string(nil), ix.filterable...), append([]string(nil), ix.searchable...), true
}

// index is one Meilisearch index.
type index struct {
	uid        string
	primaryKey string
	docs       map[string]*doc
	nextSeq    int
	filterable []string
	searchable []string // ["*"]: every string field
	// customRules are the "attr:asc|desc" ranking rules, in order; they
	// order documents of equal score.
	customRules []customRule
	createdAt   time.Time
	// maxTotalHits is the pagination setting: no search returns hits
	// past it (offset + limit are cut to it), default 1000.
	maxTotalHits int
}

// defaultMaxTotalHits is Meilisearch's DEFAULT_PAGINATION_MAX_TOTAL_HITS.
const defaultMaxTotalHits = 1000

// doc is a stored document; seq is its insertion order (Meilisearch's
// internal document id, which breaks ranking ties). fields are the JSON
// as sent (returned as is); values are the same decoded, for filters and
// ranking.
type doc struct {
	seq    int
	fields map[string]json.RawMessage
	values map[string]any
}

// decodeValues sets d.values from d.fields; numbers stay json.Number.
func (d *doc) decodeValues() {
	d.values = make(map[string]any, len(d.fields))
	for k, raw := range d.fields {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			d.values[k] = v
		}
	}
}

func newIndex(uid, primaryKey string) *index {
	return &index{uid: uid, primaryKey: primaryKey, docs: map[string]*doc{}, searchable: []string{"*"}, createdAt: time.Now().UTC(), maxTotalHits: defaultMaxTotalHits}
}

func (ix *index) isFilterable(attr string) bool {
	for _, a := range ix.filterable {
		if a == attr {
			return true
		}
	}
	return false
}

// apiError is Meilisearch's error body.
type apiError struct {
	Message string `json:"message"`
	Code    string `json:"code"`
	Type    string `json:"type"`
	Link    string `json:"link"`
}

func newAPIError(code, typ, format string, args ...any) *apiError {
	return &apiError{Message: fmt.Sprintf(format, args...), Code: code, Type: typ, Link: "https://docs.meilisearch.com/errors#" + code}
}

func writeError(w http.ResponseWriter, status int, e *apiError) {
	writeJSON(w, status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "available"})
	})
	mux.HandleFunc("GET /version", s.auth(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"pkgVersion": s.opts.Version, "commitSha": "meilitest", "commitDate": "2026-01-01T00:00:00Z"})
	}))
	mux.HandleFunc("POST /indexes", s.auth(s.createIndex))
	mux.HandleFunc("DELETE /indexes/{uid}", s.auth(s.deleteIndex))
	mux.HandleFunc("PATCH /indexes/{uid}/settings", s.auth(s.updateSettings))
	mux.HandleFunc("POST /indexes/{uid}/documents", s.auth(s.addDocuments(false)))
	mux.HandleFunc("PUT /indexes/{uid}/documents", s.auth(s.addDocuments(true)))
	mux.HandleFunc("GET /indexes/{uid}/documents/{id}", s.auth(s.getDocument))
	mux.HandleFunc("POST /indexes/{uid}/documents/delete", s.auth(s.deleteByFilter))
	mux.HandleFunc("DELETE /indexes/{uid}/documents", s.auth(s.deleteAll))
	mux.HandleFunc("POST /indexes/{uid}/search", s.auth(s.search))
	mux.HandleFunc("POST /multi-search", s.auth(s.multiSearch))
	mux.HandleFunc("GET /tasks/{uid}", s.auth(s.getTask))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, newAPIError("not_found", "invalid_request", "route %s %s is not served by the test server", r.Method, r.URL.Path))
	})
	return mux
}

func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.APIKey != "" {
			got := r.Header.Get("Authorization")
			if got == "" {
				writeError(w, http.StatusUnauthorized, newAPIError("missing_authorization_header", "auth", "The Authorization header is missing. It must use the bearer authorization method."))
				return
			}
			if got != "Bearer "+s.opts.APIKey {
				writeError(w, http.StatusForbidden, newAPIError("invalid_api_key", "auth", "The provided API key is invalid."))
				return
			}
		}
		// Meilisearch refuses a body over the payload limit before
		// reading it as JSON: 413, code payload_too_large
		// (crates/meilisearch-types/src/error.rs, PayloadTooLarge).
		if r.ContentLength > s.opts.PayloadLimit {
			writeError(w, http.StatusRequestEntityTooLarge, newAPIError("payload_too_large", "invalid_request", "The provided payload reached the size limit. The maximum accepted payload size is %d bytes.", s.opts.PayloadLimit))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.PayloadLimit)
		h(w, r)
	}
}

// decodeBody reads a JSON body into v, answering 400 bad_request if it is
// not valid JSON of the right shape.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, newAPIError("payload_too_large", "invalid_request", "The provided payload reached the size limit. The maximum accepted payload size is %d bytes.", mbe.Limit))
			return false
		}
		writeError(w, http.StatusBadRequest, newAPIError("bad_request", "invalid_request", "The request body is not valid: %v", err))
		return false
	}
	return true
}

// validUID is Meilisearch's rule for index uids (max 400) and document
// ids (max 511): ASCII letters, digits, '-' and '_'.
func validUID(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func (s *Server) createIndex(w http.ResponseWriter, r *http.Request) {
	var body struct {
		UID        string `json:"uid"`
		PrimaryKey string `json:"primaryKey"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if !validUID(body.UID, 400) {
		writeError(w, http.StatusBadRequest, newAPIError("invalid_index_uid", "invalid_request", "`%s` is not a valid index uid.", body.UID))
		return
	}
	s.enqueue(w, body.UID, "indexCreation", func() *apiError {
		if s.indexes[body.UID] != nil {
			return newAPIError("index_already_exists", "invalid_request", "Index `%s` already exists.", body.UID)
		}
		s.indexes[body.UID] = newIndex(body.UID, body.PrimaryKey)
		return nil
	})
}

func (s *Server) deleteIndex(w http.ResponseWriter, r *http.Request) {
	uid := r.PathValue("uid")
	s.enqueue(w, uid, "indexDeletion", func() *apiError {
		if s.indexes[uid] == nil {
			return newAPIError("index_not_found", "invalid_request", "Index `%s` not found.", uid)
		}
		delete(s.indexes, uid)
		return nil
	})
}

func (s *Server) updateSettings(w http.ResponseWriter, r *http.Request) {
	uid := r.PathValue("uid")
	var body struct {
		FilterableAttributes *[]string `json:"filterableAttributes"`
		SearchableAttributes *[]string `json:"searchableAttributes"`
		RankingRules         *[]string `json:"rankingRules"`
		Pagination           *struct {
			MaxTotalHits int `json:"maxTotalHits"`
		} `json:"pagination"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	var custom []customRule
	if body.RankingRules != nil {
		var e *apiError
		if custom, e = parseRankingRules(*body.RankingRules); e != nil {
			writeError(w, http.StatusBadRequest, e)
			return
		}
	}
	s.enqueue(w, uid, "settingsUpdate", func() *apiError {
		ix := s.indexOrCreate(uid, "")
		if body.FilterableAttributes != nil {
			ix.filterable = append([]string(nil), *body.FilterableAttributes...)
		}
		if body.SearchableAttributes != nil {
			ix.searchable = append([]string(nil), *body.SearchableAttributes...)
		}
		if body.RankingRules != nil {
			ix.customRules = custom
		}
		if body.Pagination != nil {
			ix.maxTotalHits = body.Pagination.MaxTotalHits
		}
		return nil
	})
}

// indexOrCreate returns the index, creating it as a write to an absent
// index does — with default settings (no filterable attributes, every
// field searchable, maxTotalHits 1000), as Meilisearch's "add or replace
// documents" does ("If the provided index does not exist, it will be
// created", docs: reference/api/documents). Called with s.mu held.
func (s *Server) indexOrCreate(uid, primaryKey string) *index {
	ix := s.indexes[uid]
	if ix == nil {
		ix = newIndex(uid, primaryKey)
		s.indexes[uid] = ix
	}
	return ix
}

// addDocuments adds (replace) or updates (merge: PUT) documents.
func (s *Server) addDocuments(merge bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		uid := r.PathValue("uid")
		var docs []map[string]json.RawMessage
		if !decodeBody(w, r, &docs) {
			return
		}
		pkParam := r.URL.Query().Get("primaryKey")
		s.enqueue(w, uid, "documentAdditionOrUpdate", func() *apiError {
			ix := s.indexOrCreate(uid, pkParam)
			if ix.primaryKey == "" {
				if pkParam == "" {
					return newAPIError("index_primary_key_no_candidate_found", "invalid_request", "The primary key inference failed: the test server does not infer primary keys.")
				}
				ix.primaryKey = pkParam
			} else if pkParam != "" && pkParam != ix.primaryKey && len(ix.docs) > 0 {
				return newAPIError("index_primary_key_already_exists", "invalid_request", "Index `%s`: primary key is already present (`%s`).", uid, ix.primaryKey)
			}
			ids := make([]string, len(docs))
			for i, d := range docs {
				id, e := documentID(d, ix.primaryKey)
				if e != nil {
					return e // the whole task fails, nothing is stored
				}
				ids[i] = id
			}
			for i, d := range docs {
				cur := ix.docs[ids[i]]
				if cur == nil {
					cur = &doc{seq: ix.nextSeq}
					ix.nextSeq++
					ix.docs[ids[i]] = cur
				}
				if !merge || cur.fields == nil {
					cur.fields = map[string]json.RawMessage{}
				}
				for k, v := range d {
					cur.fields[k] = v
				}
				cur.decodeValues()
			}
			return nil
		})
	}
}

// documentID is the document's primary key value, a string of valid id
// characters or an integer, as Meilisearch requires.
func documentID(d map[string]json.RawMessage, primaryKey string) (string, *apiError) {
	raw, ok := d[primaryKey]
	if !ok {
		return "", newAPIError("missing_document_id", "invalid_request", "Document doesn't have a `%s` attribute.", primaryKey)
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		if !validUID(str, 511) {
			return "", newAPIError("invalid_document_id", "invalid_request", "Document identifier `%s` is invalid. A document identifier can be of type integer or string, only composed of alphanumeric characters (a-z A-Z 0-9), hyphens (-) and underscores (_), and can not be more than 511 bytes.", str)
		}
		return str, nil
	}
	var n int64
	if json.Unmarshal(raw, &n) == nil && n >= 0 {
		return strconv.FormatInt(n, 10), nil
	}
	return "", newAPIError("invalid_document_id", "invalid_request", "Document identifier `%s` is invalid.", raw)
}

func (s *Server) getDocument(w http.ResponseWriter, r *http.Request) {
	uid, id := r.PathValue("uid"), r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	ix := s.indexes[uid]
	if ix == nil {
		writeError(w, http.StatusNotFound, newAPIError("index_not_found", "invalid_request", "Index `%s` not found.", uid))
		return
	}
	d := ix.docs[id]
	if d == nil {
		writeError(w, http.StatusNotFound, newAPIError("document_not_found", "invalid_request", "Document `%s` not found.", id))
		return
	}
	writeJSON(w, http.StatusOK, pick(d.fields, splitFields(r.URL.Query().Get("fields"))))
}

func splitFields(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// pick returns the named fields of a document (all when names is empty or
// holds "*").
func pick(fields map[string]json.RawMessage, names []string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, n := range names {
		if n == "*" {
			names = nil
			break
		}
	}
	if len(names) == 0 {
		for k, v := range fields {
			out[k] = v
		}
		return out
	}
	for _, n := range names {
		if v, ok := fields[n]; ok {
			out[n] = v
		}
	}
	return out
}

func (s *Server) deleteByFilter(w http.ResponseWriter, r *http.Request) {
	uid := r.PathValue("uid")
	var body struct {
		Filter json.RawMessage `json:"filter"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	expr, perr := parseFilterJSON(body.Filter)
	if perr != nil || expr == nil {
		msg := "filter is missing"
		if perr != nil {
			msg = perr.Error()
		}
		writeError(w, http.StatusBadRequest, newAPIError("invalid_document_filter", "invalid_request", "%s", msg))
		return
	}
	s.enqueue(w, uid, "documentDeletion", func() *apiError {
		ix := s.indexes[uid]
		if ix == nil {
			return newAPIError("index_not_found", "invalid_request", "Index `%s` not found.", uid)
		}
		if e := checkFilterable(ix, expr, "invalid_document_filter"); e != nil {
			return e
		}
		for id, d := range ix.docs {
			if expr.match(d.values) {
				delete(ix.docs, id)
			}
		}
		return nil
	})
}

func (s *Server) deleteAll(w http.ResponseWriter, r *http.Request) {
	uid := r.PathValue("uid")
	s.enqueue(w, uid, "documentDeletion", func() *apiError {
		ix := s.indexes[uid]
		if ix == nil {
			return newAPIError("index_not_found", "invalid_request", "Index `%s` not found.", uid)
		}
		ix.docs = map[string]*doc{}
		return nil
	})
}
