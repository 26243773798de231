// Package serve is the web page and the HTTP API of "sfgen serve": a
// Snowflake ID composed from its timestamp, datacenter, machine and
// sequence, or an ID decoded into them, with its 64 bits drawn segment by
// segment, in one layout.
//
// Handler serves the page at "/", the API at "/api/compose" and
// "/api/decompose" (the JSON that "sfgen compose --json" and "sfgen
// decompose --json" print, and their error messages), and the page's
// assets, all embedded in the binary. The page is rendered on the server
// from a GET form, so it works without JavaScript; its script only fetches
// the same page as you type and swaps in the result. Every response
// carries a Content-Security-Policy that allows the page's own assets and
// nothing else. Serve runs a Handler on a listener with timeouts, a limit
// on the request's size, an access log and a graceful shutdown.
package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/idkit"
)

// Options are a Handler's settings.
type Options struct {
	// Layout is the layout of the IDs. It must not be the zero Layout,
	// which describes none: Handler panics on it, as on any other
	// programming error.
	Layout snowflake.Layout
	// Now is the clock a composition without a timestamp reads;
	// nil means time.Now.
	Now func() time.Time
}

// csp is the Content-Security-Policy of every response: the page's own
// script, style sheet, icon and API, no inline script or style, no
// framing, forms submitted only to itself.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// maxBody is the most a request's body may hold. No route reads one.
const maxBody = 1 << 10

// Handler returns the handler of the page, the API and the assets.
func Handler(o Options) http.Handler {
	if o.Layout.IsZero() {
		panic("serve: " + snowflake.ErrZeroLayout.Error())
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &server{layout: o.Layout, now: o.Now}
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", s.page)
	mux.HandleFunc("/api/compose", s.apiCompose)
	mux.HandleFunc("/api/decompose", s.apiDecompose)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, http.StatusNotFound, apiError{Error: "no such endpoint " + r.URL.Path + "; the API has /api/compose and /api/decompose"})
	})
	mux.HandleFunc("/assets/{name}", serveAsset)
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/assets/icon.svg", http.StatusMovedPermanently)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			msg := "method " + r.Method + " not allowed; use GET or HEAD"
			if isAPI(r.URL.Path) {
				writeAPIError(w, http.StatusMethodNotAllowed, apiError{Error: msg})
			} else {
				http.Error(w, msg, http.StatusMethodNotAllowed)
			}
			return
		}
		if r.ContentLength > maxBody {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		mux.ServeHTTP(w, r)
	})
}

func isAPI(path string) bool { return path == "/api" || len(path) >= 5 && path[:5] == "/api/" }

type server struct {
	layout snowflake.Layout
	now    func() time.Time
}

// apiError is the body of an API error: the command line's message and,
// for bad input, the parameter at fault.
type apiError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func (s *server) apiCompose(w http.ResponseWriter, r *http.Request) {
	names := make([]string, len(composeFields))
	for i, f := range composeFields {
		names[i] = f.String()
	}
	q, err := apiQuery(r.URL.Path, r.URL.Query(), names...)
	if err != nil {
		writeInputError(w, err)
		return
	}
	var c composition
	for i, n := range names {
		c.texts[i] = q[n]
	}
	id, err := compose(s.layout, c, s.now())
	if err != nil {
		writeInputError(w, err)
		return
	}
	s.writeID(w, id)
}

func (s *server) apiDecompose(w http.ResponseWriter, r *http.Request) {
	q, err := apiQuery(r.URL.Path, r.URL.Query(), "id", "form")
	if err != nil {
		writeInputError(w, err)
		return
	}
	id, err := parseID(q["id"], q["form"])
	if err != nil {
		writeInputError(w, err)
		return
	}
	s.writeID(w, id)
}

// writeID writes the JSON of id as the command line prints it, with its
// newline.
func (s *server) writeID(w http.ResponseWriter, id snowflake.ID) {
	p, err := s.layout.Decompose(id)
	if err != nil {
		writeInputError(w, &InputError{"id", id.String(), err.Error(), err})
		return
	}
	writeJSON(w, http.StatusOK, idkit.NewBreakdown(s.layout, id, p))
}

func writeInputError(w http.ResponseWriter, err error) {
	e := apiError{Error: err.Error()}
	if ie := (*InputError)(nil); errors.As(err, &ie) {
		e.Field = ie.Field
	}
	writeAPIError(w, http.StatusBadRequest, e)
}

func writeAPIError(w http.ResponseWriter, status int, e apiError) { writeJSON(w, status, e) }

// writeJSON writes v as one line of JSON, as the command line's --json does.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
