package dashboard

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strconv"
)

// uiFiles is the whole UI, compiled into the binary: the dashboard needs
// no network and no build step.
//
//go:embed ui
var uiFiles embed.FS

// uiContentTypes are the types of the UI's files, by extension: fixed
// here rather than read from the machine's MIME tables, so the answer does
// not depend on where the binary runs.
var uiContentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// uiAsset is one embedded file, ready to serve.
type uiAsset struct {
	body        []byte
	contentType string
}

// uiHandler serves the UI: index.html at /, the files beside it by name,
// and a 404 for any other path. Guard's Cache-Control: no-store applies
// to them too, so a browser never runs the UI of an older binary.
func uiHandler() http.Handler {
	assets := map[string]uiAsset{}
	err := fs.WalkDir(uiFiles, "ui", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := uiFiles.ReadFile(name)
		if err != nil {
			return err
		}
		contentType, ok := uiContentTypes[path.Ext(name)]
		if !ok {
			return fmt.Errorf("dashboard ui: no content type for %s", name)
		}
		urlPath := "/" + name[len("ui/"):]
		if urlPath == "/index.html" {
			urlPath = "/"
		}
		assets[urlPath] = uiAsset{body: body, contentType: contentType}
		return nil
	})
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := assets[r.URL.Path]
		if !ok {
			writeError(w, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", a.contentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
		if r.Method != http.MethodHead {
			_, _ = w.Write(a.body)
		}
	})
}
