package dashboard

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// get asks the UI handler for path.
func get(t *testing.T, h http.Handler, method, path string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func TestUIServesTheEmbeddedFilesAndNothingElse(t *testing.T) {
	h := uiHandler()
	cases := []struct {
		path        string
		status      int
		contentType string
		contains    string
	}{
		{"/", http.StatusOK, "text/html; charset=utf-8", `<script src="/app.js" defer></script>`},
		{"/app.js", http.StatusOK, "text/javascript; charset=utf-8", "function refresh()"},
		{"/app.css", http.StatusOK, "text/css; charset=utf-8", "prefers-color-scheme: dark"},
		{"/favicon.svg", http.StatusOK, "image/svg+xml", "<svg"},
		{"/index.html", http.StatusNotFound, "application/json; charset=utf-8", ""},
		{"/ui/app.js", http.StatusNotFound, "application/json; charset=utf-8", ""},
		{"/app.js.map", http.StatusNotFound, "application/json; charset=utf-8", ""},
		{"/../go.mod", http.StatusNotFound, "application/json; charset=utf-8", ""},
	}
	for _, c := range cases {
		res := get(t, h, http.MethodGet, c.path)
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != c.status || res.Header.Get("Content-Type") != c.contentType || !strings.Contains(string(body), c.contains) {
			t.Errorf("GET %s = %d %q, want %d %q containing %q", c.path, res.StatusCode, res.Header.Get("Content-Type"), c.status, c.contentType, c.contains)
		}
	}
}

func TestUIAnswersHEADWithoutABody(t *testing.T) {
	res := get(t, uiHandler(), http.MethodHead, "/")
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || len(body) != 0 || res.Header.Get("Content-Length") == "0" {
		t.Errorf("HEAD / = %d with %d body bytes and Content-Length %q, want 200, no body, the page's length", res.StatusCode, len(body), res.Header.Get("Content-Length"))
	}
}

// TestUIPageHoldsUnderTheContentSecurityPolicy: the page has no inline
// script, inline style or event-handler attribute (default-src 'self'
// would block them), loads nothing from another origin (it must work
// offline), and every file it names is served.
func TestUIPageHoldsUnderTheContentSecurityPolicy(t *testing.T) {
	h := uiHandler()
	doc, err := html.Parse(get(t, h, http.MethodGet, "/").Body)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			hasSrc := false
			for _, a := range n.Attr {
				switch {
				case a.Key == "style" || strings.HasPrefix(a.Key, "on"):
					t.Errorf("<%s %s=%q>: inline code or style", n.Data, a.Key, a.Val)
				case a.Key == "src" || a.Key == "href":
					hasSrc = hasSrc || a.Key == "src"
					if !strings.HasPrefix(a.Val, "/") && !strings.HasPrefix(a.Val, "#") || strings.HasPrefix(a.Val, "//") {
						t.Errorf("<%s %s=%q>: not a file of the dashboard", n.Data, a.Key, a.Val)
					} else if strings.HasPrefix(a.Val, "/") {
						refs = append(refs, a.Val)
					}
				}
			}
			if n.Data == "style" || n.Data == "script" && !hasSrc {
				t.Errorf("inline <%s> element", n.Data)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if len(refs) < 3 {
		t.Fatalf("the page names %v, want its script, style sheet and icon", refs)
	}
	for _, ref := range refs {
		if res := get(t, h, http.MethodGet, ref); res.StatusCode != http.StatusOK {
			t.Errorf("the page names %s, which answers %d", ref, res.StatusCode)
		}
	}
}

// TestUICodeNeverTurnsDataIntoMarkup: the script builds the page with
// DOM calls and textContent only; these are the ways stored text could
// become markup or code, or the page could reach another origin.
func TestUICodeNeverTurnsDataIntoMarkup(t *testing.T) {
	forbidden := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\("style"|\.style\b|https?://|@import|url\(`)
	err := fs.WalkDir(uiFiles, "ui", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(name, ".js") || strings.HasSuffix(name, ".css")) {
			return err
		}
		body, err := uiFiles.ReadFile(name)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(body), "\n") {
			if m := forbidden.FindString(line); m != "" {
				t.Errorf("%s:%d uses %s: %s", name, i+1, m, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
