package api

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
)

// verifyScript reads the token from the page's own URL and posts it to
// POST /v1/auth/verify only when the user presses the button: mail
// scanners that follow the link must not spend the token, and the API key
// must only ever be shown to the person who asked for it.
const verifyScript = `
const token = new URLSearchParams(location.search).get("token") || "";
const out = document.getElementById("out");
document.getElementById("go").addEventListener("click", async (ev) => {
  ev.target.disabled = true;
  try {
    const res = await fetch(location.pathname, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({token})});
    const body = await res.json();
    if (body.success) {
      out.textContent = "Verified. Your API key (shown only now, store it safely):\n\n" + body.data.api_key;
    } else {
      out.textContent = "Verification failed: " + body.error.message;
    }
  } catch (e) {
    out.textContent = "Verification failed: " + e;
  }
});
`

const verifyHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Verify your Engram account</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>Verify your Engram account</h1>
<p>Press the button to confirm your e-mail address. You will get your first API key.</p>
<p><button id="go">Verify and show my API key</button></p>
<pre id="out" style="white-space: pre-wrap"></pre>
<script>` + verifyScript + `</script>
</body></html>
`

// verifyPage is where the link of the verification mail leads (GET
// /v1/auth/verify?token=…). It verifies nothing by itself; see verifyScript.
// The page is static, so the token never passes through a template.
func (s *Server) verifyPage(w http.ResponseWriter, r *http.Request) {
	sum := sha256.Sum256([]byte(verifyScript))
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; connect-src 'self'; style-src 'unsafe-inline'; script-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	// The URL carries the token: keep it out of Referer headers and caches.
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(verifyHTML))
}
