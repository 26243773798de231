package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
)

// fixedNow is the clock of the tests: 2023-11-14T22:13:20Z.
var fixedNow = time.UnixMilli(1700000000000)

func testHandler(t *testing.T, l snowflake.Layout) http.Handler {
	t.Helper()
	return Handler(Options{Layout: l, Now: func() time.Time { return fixedNow }})
}

// get makes one request of h and returns the response and its body.
func get(t *testing.T, h http.Handler, method, target string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// head makes a HEAD request of a real server, which drops the body the
// handler writes.
func head(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	res, err := http.Head(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// formula is the README's formula for the Twitter layout, the oracle of
// the API: id = ((t - 1288834974657) << 22) | (datacenter << 17) | (machine << 12) | sequence.
func formula(t, dc, m, seq int64) int64 {
	return (t-1288834974657)<<22 | dc<<17 | m<<12 | seq
}

func TestAPIComposeMatchesTheFormula(t *testing.T) {
	h := testHandler(t, snowflake.Twitter())
	for _, tc := range []struct {
		query         string
		t, dc, m, seq int64
	}{
		{"timestamp=1288834975657&datacenter=1&machine=1&sequence=0", 1288834975657, 1, 1, 0}, // the worked example
		{"timestamp=1288834974657", 1288834974657, 0, 0, 0},                                   // the epoch: ID 0
		{"timestamp=3487858230208&datacenter=31&machine=31&sequence=4095", 3487858230208, 31, 31, 4095},
		{"timestamp=1700000000000&datacenter=3&machine=7&sequence=42", 1700000000000, 3, 7, 42},
		{"datacenter=2", fixedNow.UnixMilli(), 2, 0, 0},                                               // no timestamp: now
		{"timestamp=&datacenter=&machine=5&sequence=", fixedNow.UnixMilli(), 0, 5, 0},                 // empty is not given
		{"timestamp=%2B1288834975657&datacenter=007", 1288834975657, 7, 0, 0},                         // a sign and leading zeros, as the CLI reads them
		{"timestamp=2010-11-04T02:42:55.6579%2B01:00&datacenter=1&machine=1", 1288834975657, 1, 1, 0}, // an RFC 3339 time, its millisecond rounded down
	} {
		t.Run(tc.query, func(t *testing.T) {
			res, body := get(t, h, "GET", "/api/compose?"+tc.query)
			if res.StatusCode != 200 {
				t.Fatalf("status %d, body %s", res.StatusCode, body)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			id := snowflake.ID(formula(tc.t, tc.dc, tc.m, tc.seq))
			want := fmt.Sprintf(`{"id":"%d","base32":"%s","base58":"%s","timestamp_ms":%d,"time":"%s","datacenter_id":%d,"machine_id":%d,"sequence":%d,"layout":"epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12"}`+"\n",
				id, id.Base32(), id.Base58(), tc.t, time.UnixMilli(tc.t).UTC().Format("2006-01-02T15:04:05.000Z"), tc.dc, tc.m, tc.seq)
			if body != want {
				t.Errorf("got  %s\nwant %s", body, want)
			}
			// Decoding the ID gives the same object back.
			var got struct{ ID string }
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatal(err)
			}
			if _, back := get(t, h, "GET", "/api/decompose?id="+got.ID); back != want {
				t.Errorf("decompose of %s: %s, want %s", got.ID, back, want)
			}
		})
	}
}

func TestAPIErrors(t *testing.T) {
	h := testHandler(t, snowflake.Twitter())
	for _, tc := range []struct {
		target, field, msg string
	}{
		{"/api/compose?datacenter=32", "datacenter", "datacenter 32 out of range [0, 31]"},
		{"/api/compose?machine=-1", "machine", "machine -1 out of range [0, 31]"},
		{"/api/compose?sequence=4096", "sequence", "sequence 4096 out of range [0, 4095]"},
		{"/api/compose?sequence=abc", "sequence", `sequence "abc" is not a whole number; want an integer in [0, 4095]`},
		{"/api/compose?timestamp=3487858230209", "timestamp", "timestamp 3487858230209 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"},
		{"/api/compose?timestamp=1288834974656", "timestamp", "timestamp 1288834974656 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"},
		{"/api/compose?timestamp=yesterday", "timestamp", `timestamp "yesterday" is not a whole number or an RFC 3339 time; want an integer in [1288834974657, 3487858230208] or a time from 2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z`},
		{"/api/compose?timestamp=1969-12-31T23:59:59.9995Z", "timestamp", "timestamp -1 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"}, // rounded down, not toward zero
		{"/api/compose?timestamp=2010-11-04T01:42:54.656999Z", "timestamp", "timestamp 1288834974656 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"},
		{"/api/compose?datacenter=99999999999999999999999", "datacenter", "datacenter 99999999999999999999999 out of range [0, 31]"},
		{"/api/compose?timestamp=1&datacenter=32", "timestamp", "timestamp 1 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"}, // the first bad field, as the CLI checks them
		{"/api/compose?worker=1", "worker", `unknown parameter "worker"; /api/compose takes timestamp, datacenter, machine and sequence`},
		{"/api/compose?datacenter=1&datacenter=2", "datacenter", "datacenter given 2 times; give it once"},
		{"/api/decompose", "id", "missing ID; want a decimal integer in [0, 9223372036854775807] or a base32 ID (13 characters)"},
		{"/api/decompose?id=", "id", "missing ID; want a decimal integer in [0, 9223372036854775807] or a base32 ID (13 characters)"},
		{"/api/decompose?id=-5", "id", "id -5 out of range [0, 9223372036854775807]"},
		{"/api/decompose?id=abc", "id", `id "abc" is not a decimal integer`},
		{"/api/decompose?id=9223372036854775808", "id", ""},
		{"/api/decompose?id=1&id=2", "id", "id given 2 times; give it once"},
		{"/api/decompose?id=7Pebdh", "id", `id "7Pebdh" is not a decimal integer`},
		{"/api/decompose?id=7Pebdh&form=hex", "form", `unknown ID form "hex": want decimal, base32, base58`},
		{"/api/decompose?id=0Pebdh&form=base58", "id", `invalid base58 ID "0Pebdh": "0" at character 1 is not in the base58 alphabet (1-9, A-Z and a-z but I, O and l)`},
		{"/api/decompose?id=000000000U000", "id", `invalid base32 ID "000000000U000": "U" at character 10 is not in Crockford's base32 alphabet (0-9 and A-Z but U, in any case; I and L read as 1, O as 0)`},
	} {
		t.Run(tc.target, func(t *testing.T) {
			res, body := get(t, h, "GET", tc.target)
			if res.StatusCode != http.StatusBadRequest {
				t.Errorf("status %d, want 400", res.StatusCode)
			}
			var e struct{ Error, Field string }
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if e.Field != tc.field || (tc.msg != "" && e.Error != tc.msg) || e.Error == "" {
				t.Errorf("got %s\nwant field %q, error %q", body, tc.field, tc.msg)
			}
		})
	}
}

func TestMethodsAndPaths(t *testing.T) {
	h := testHandler(t, snowflake.Twitter())
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, path := range []string{"/", "/api/compose", "/api/decompose?id=1", "/assets/style.css", "/nope"} {
		for _, method := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
			res, _ := get(t, h, method, path)
			if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: status %d, Allow %q; want 405 and GET, HEAD", method, path, res.StatusCode, res.Header.Get("Allow"))
			}
		}
		res, body := head(t, srv.URL+path)
		if body != "" {
			t.Errorf("HEAD %s: a body of %d bytes", path, len(body))
		}
		if want := map[bool]int{true: 404, false: 200}[path == "/nope"]; res.StatusCode != want {
			t.Errorf("HEAD %s: status %d, want %d", path, res.StatusCode, want)
		}
	}
	for _, path := range []string{"/nope", "/index.html", "/api/", "/api/nope", "/api/compose/x", "/assets/", "/assets/page.html", "/assets/nope.css", "/assets/..%2fpage.go"} {
		res, body := get(t, h, "GET", path)
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404; body %.80q", path, res.StatusCode, body)
		}
	}
	res, body := get(t, h, "GET", "/api/nope")
	if !strings.Contains(body, `"error":"no such endpoint /api/nope`) || res.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("GET /api/nope: %s %s", res.Header.Get("Content-Type"), body)
	}
	for path, typ := range map[string]string{"/assets/style.css": "text/css; charset=utf-8", "/assets/app.js": "text/javascript; charset=utf-8", "/assets/icon.svg": "image/svg+xml", "/": "text/html; charset=utf-8"} {
		if res, _ := get(t, h, "GET", path); res.StatusCode != 200 || res.Header.Get("Content-Type") != typ {
			t.Errorf("GET %s: status %d, Content-Type %q; want 200, %q", path, res.StatusCode, res.Header.Get("Content-Type"), typ)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	h := testHandler(t, snowflake.Twitter())
	for _, path := range []string{"/", "/?id=abc", "/api/compose", "/api/decompose?id=x", "/assets/app.js", "/nope"} {
		res, _ := get(t, h, "GET", path)
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: Content-Security-Policy %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") || strings.Contains(csp, "http") {
			t.Errorf("%s: Content-Security-Policy %q allows more than the page's own assets", path, csp)
		}
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
			if got := res.Header.Get(k); got != want {
				t.Errorf("%s: %s %q, want %q", path, k, got, want)
			}
		}
	}
	// The policy holds only if the page has nothing inline: no script
	// with content, no style element or attribute, no event handler, and
	// nothing from elsewhere.
	_, body := get(t, h, "GET", "/?timestamp=1288834975657&datacenter=1&machine=1")
	for _, re := range []string{`<script[^>]*>[^<]`, `<style`, `\sstyle=`, `\son[a-z]+=`, `(src|href)="(https?:)?//`} {
		if m := regexp.MustCompile(re).FindString(body); m != "" {
			t.Errorf("the page has %q, which the policy forbids or which loads from elsewhere", m)
		}
	}
}

func TestRequestSizeLimit(t *testing.T) {
	h := testHandler(t, snowflake.Twitter())
	req := httptest.NewRequest("GET", "/api/decompose?id=1", strings.NewReader(strings.Repeat("x", maxBody+1)))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body of %d bytes: status %d, want 413", maxBody+1, rec.Code)
	}
}

// elementText returns the text inside the element with the given id
// attribute, unescaped, up to its first tag.
func elementText(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no element with id %q in the page", id)
	}
	rest := page[i:]
	rest = rest[strings.Index(rest, ">")+1:]
	return html.UnescapeString(rest[:strings.Index(rest, "<")])
}

// inputValue returns the value attribute of the input with the given id.
func inputValue(t *testing.T, page, id string) string {
	t.Helper()
	m := regexp.MustCompile(`<input id="` + regexp.QuoteMeta(id) + `"[^>]* value="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no input %q in the page", id)
	}
	return html.UnescapeString(m[1])
}

var segmentRE = regexp.MustCompile(`(?s)<li class="segment seg-[a-z]+" data-segment="([a-z]+)">.*?<code class="seg-bits">([01]+)</code>\s*<span class="value" data-value>(\d+)</span>`)

// segments returns the segments the page shows, as "name bits value".
func segments(page string) []string {
	var out []string
	for _, m := range segmentRE.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1]+" "+m[2]+" "+m[3])
	}
	return out
}

func TestPage(t *testing.T) {
	h := testHandler(t, snowflake.Twitter())
	workedSegments := []string{
		"sign 0 0",
		"timestamp 00000000000000000000000000000001111101000 1288834975657",
		"datacenter 00001 1",
		"machine 00001 1",
		"sequence 000000000000 0",
	}
	for _, tc := range []struct {
		name, query string
		status      int
		id, time    string
		fields      [5]string // the inputs' values: timestamp, datacenter, machine, sequence, id
		segments    []string
	}{
		{"compose", "timestamp=1288834975657&datacenter=1&machine=1&sequence=0", 200, "4194439168", "2010-11-04T01:42:55.657Z",
			[5]string{"1288834975657", "1", "1", "0", "4194439168"}, workedSegments},
		{"decode", "id=4194439168", 200, "4194439168", "2010-11-04T01:42:55.657Z",
			[5]string{"1288834975657", "1", "1", "0", "4194439168"}, workedSegments},
		{"decode with spaces", "id=+4194439168+", 200, "4194439168", "2010-11-04T01:42:55.657Z",
			[5]string{"1288834975657", "1", "1", "0", "4194439168"}, workedSegments},
		{"decode base32", "id=0000003x04400", 200, "4194439168", "2010-11-04T01:42:55.657Z",
			[5]string{"1288834975657", "1", "1", "0", "0000003x04400"}, workedSegments},
		{"RFC 3339", "timestamp=2023-11-14T22:13:20Z&datacenter=3&machine=7&sequence=42", 200, "1724551110456668202", "2023-11-14T22:13:20.000Z",
			[5]string{"2023-11-14T22:13:20Z", "3", "7", "42", "1724551110456668202"}, nil},
		{"RFC 3339 with an offset and a fraction", "timestamp=2010-11-04T02:42:55.6579%2B01:00&datacenter=1&machine=1", 200, "4194439168", "2010-11-04T01:42:55.657Z",
			[5]string{"2010-11-04T02:42:55.6579+01:00", "1", "1", "", "4194439168"}, workedSegments},
		{"empty: now", "", 200, fmt.Sprint(formula(fixedNow.UnixMilli(), 0, 0, 0)), "2023-11-14T22:13:20.000Z",
			[5]string{"", "", "", "", fmt.Sprint(formula(fixedNow.UnixMilli(), 0, 0, 0))}, nil},
		{"largest", "id=9223372036854775807", 200, "9223372036854775807", "2080-07-10T17:30:30.208Z",
			[5]string{"3487858230208", "31", "31", "4095", "9223372036854775807"}, []string{
				"sign 0 0", "timestamp 11111111111111111111111111111111111111111 3487858230208", "datacenter 11111 31", "machine 11111 31", "sequence 111111111111 4095"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, page := get(t, h, "GET", "/?"+tc.query)
			if res.StatusCode != tc.status {
				t.Errorf("status %d, want %d", res.StatusCode, tc.status)
			}
			if got := elementText(t, page, "id-value"); got != tc.id {
				t.Errorf("ID %q, want %q", got, tc.id)
			}
			if got := elementText(t, page, "time-value"); got != tc.time {
				t.Errorf("time %q, want %q", got, tc.time)
			}
			var id snowflake.ID
			fmt.Sscan(tc.id, &id)
			if b32, b58 := elementText(t, page, "base32-value"), elementText(t, page, "base58-value"); b32 != id.Base32() || b58 != id.Base58() {
				t.Errorf("forms %q, %q; want %q, %q", b32, b58, id.Base32(), id.Base58())
			}
			for i, name := range []string{"timestamp", "datacenter", "machine", "sequence", "id"} {
				if got := inputValue(t, page, "f-"+name); got != tc.fields[i] {
					t.Errorf("input %s has %q, want %q", name, got, tc.fields[i])
				}
				if got := elementText(t, page, name+"-error"); got != "" {
					t.Errorf("%s shows the error %q", name, got)
				}
			}
			if tc.segments != nil {
				if got := segments(page); strings.Join(got, "\n") != strings.Join(tc.segments, "\n") {
					t.Errorf("segments:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.segments, "\n"))
				}
			}
			if n := strings.Count(page, `<span class="bit `); n != 64 {
				t.Errorf("the bar has %d bits, want 64", n)
			}
		})
	}
}

func TestPageErrors(t *testing.T) {
	h := testHandler(t, snowflake.Twitter())
	for _, tc := range []struct {
		query, field, msg string
	}{
		{"datacenter=32", "datacenter", "datacenter 32 out of range [0, 31]"},
		{"timestamp=1&machine=7", "timestamp", "timestamp 1 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"},
		{"timestamp=2010-11-04T01:42:54.656Z", "timestamp", "timestamp 1288834974656 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"},
		{"timestamp=yesterday", "timestamp", `timestamp "yesterday" is not a whole number or an RFC 3339 time; want an integer in [1288834974657, 3487858230208] or a time from 2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z`},
		{"machine=32", "machine", "machine 32 out of range [0, 31]"},
		{"sequence=1.5", "sequence", `sequence "1.5" is not a whole number; want an integer in [0, 4095]`},
		{"id=", "id", "missing ID; want a decimal integer in [0, 9223372036854775807] or a base32 ID (13 characters)"},
		{"id=-5", "id", "id -5 out of range [0, 9223372036854775807]"},
		{"id=12a", "id", `id "12a" is not a decimal integer`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			res, page := get(t, h, "GET", "/?"+tc.query)
			if res.StatusCode != http.StatusBadRequest {
				t.Errorf("status %d, want 400", res.StatusCode)
			}
			for _, name := range []string{"timestamp", "datacenter", "machine", "sequence", "id"} {
				want := ""
				if name == tc.field {
					want = tc.msg
				}
				if got := elementText(t, page, name+"-error"); got != want {
					t.Errorf("next to %s: %q, want %q", name, got, want)
				}
			}
			if !regexp.MustCompile(`<input id="f-` + tc.field + `"[^>]* aria-invalid="true">`).MatchString(page) {
				t.Errorf("the %s input is not marked invalid", tc.field)
			}
			if strings.Contains(page, `id="id-value"`) {
				t.Error("the page shows an ID for bad input")
			}
		})
	}
}

// hostile is reflected input that would run a script if it were not
// escaped.
const hostile = `"><script>alert(1)</script>`

func TestReflectedInputIsEscaped(t *testing.T) {
	h := testHandler(t, snowflake.Twitter())
	for _, query := range []string{
		"id=" + url.QueryEscape(hostile),
		"timestamp=" + url.QueryEscape(hostile),
		"datacenter=" + url.QueryEscape(hostile),
		"timestamp=" + url.QueryEscape(hostile) + "&machine=" + url.QueryEscape(hostile) + "&" + url.QueryEscape(hostile) + "=1",
	} {
		t.Run(query, func(t *testing.T) {
			res, page := get(t, h, "GET", "/?"+query)
			if res.StatusCode != http.StatusBadRequest {
				t.Errorf("status %d, want 400", res.StatusCode)
			}
			if strings.Contains(page, "<script>alert") || strings.Count(page, "<script") != 1 {
				t.Errorf("the hostile value reached the page unescaped:\n%s", page)
			}
			field := strings.SplitN(query, "=", 2)[0]
			if got := inputValue(t, page, "f-"+field); got != hostile {
				t.Errorf("the input shows %q, want the value as given, %q", got, hostile)
			}
			if got := elementText(t, page, field+"-error"); !strings.Contains(got, `"\"><script>alert(1)</script>"`) {
				t.Errorf("the error shows %q, want the value as given, quoted", got)
			}
		})
	}
	for _, target := range []string{"/api/compose?timestamp=" + url.QueryEscape(hostile), "/api/decompose?id=" + url.QueryEscape(hostile), "/api/compose?" + url.QueryEscape(hostile) + "=1"} {
		res, body := get(t, h, "GET", target)
		if strings.Contains(body, "<") || res.Header.Get("Content-Type") != "application/json; charset=utf-8" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %s %s", target, res.Header.Get("Content-Type"), body)
		}
		var e struct{ Error string }
		if err := json.Unmarshal([]byte(body), &e); err != nil || !strings.Contains(e.Error, hostile) {
			t.Errorf("%s: error %q does not name the value as given (%v)", target, e.Error, err)
		}
	}
}

func TestLayout(t *testing.T) {
	custom, err := snowflake.ParseLayout("epoch=1600000000000 timestamp=41 datacenter=4 machine=6 sequence=12")
	if err != nil {
		t.Fatal(err)
	}
	h := testHandler(t, custom)
	_, body := get(t, h, "GET", "/api/compose?timestamp=1600000000000&datacenter=15&machine=63")
	if want := `{"id":"4190208","base32":"000000003ZW00","base58":"NUby","timestamp_ms":1600000000000,"time":"2020-09-13T12:26:40.000Z","datacenter_id":15,"machine_id":63,"sequence":0,"layout":"epoch=1600000000000 timestamp=41 datacenter=4 machine=6 sequence=12"}` + "\n"; body != want {
		t.Errorf("got  %s\nwant %s", body, want)
	}
	for target, msg := range map[string]string{
		"/api/compose?datacenter=16":           "datacenter 16 out of range [0, 15]",
		"/api/compose?machine=64":              "machine 64 out of range [0, 63]",
		"/api/compose?timestamp=1599999999999": "timestamp 1599999999999 out of range [1600000000000, 3799023255551] (2020-09-13T12:26:40.000Z to 2090-05-21T04:14:15.551Z)",
	} {
		if _, body := get(t, h, "GET", target); !strings.Contains(body, `"error":"`+msg+`"`) {
			t.Errorf("%s: %s, want %q", target, body, msg)
		}
	}
	_, page := get(t, h, "GET", "/?timestamp=1600000000000&datacenter=15&machine=63")
	if got, want := segments(page), []string{"sign 0 0", "timestamp 00000000000000000000000000000000000000000 1600000000000", "datacenter 1111 15", "machine 111111 63", "sequence 000000000000 0"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("segments:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for class, n := range map[string]int{"seg-sign": 1, "seg-timestamp": 41, "seg-datacenter": 4, "seg-machine": 6, "seg-sequence": 12} {
		if got := strings.Count(page, `<span class="bit `+class); got != n {
			t.Errorf("the bar has %d bits of %s, want %d", got, class, n)
		}
		if !strings.Contains(page, fmt.Sprintf(`<span class="label %s span-%d">`, class, n)) {
			t.Errorf("no label for %s spanning %d bits", class, n)
		}
	}
	for _, hint := range []string{"0 to 15; blank means 0", "0 to 63; blank means 0", "1600000000000 to 3799023255551"} {
		if !strings.Contains(page, hint) {
			t.Errorf("the page lacks the hint %q", hint)
		}
	}
	if !strings.Contains(html.UnescapeString(page), "sfgen compose --layout 'epoch=1600000000000 timestamp=41 datacenter=4 machine=6 sequence=12' --timestamp 1600000000000 --datacenter 15 --machine 63 --sequence 0") {
		t.Error("the page does not show the command for the layout")
	}
	_, body = get(t, testHandler(t, snowflake.Discord()), "GET", "/api/decompose?id=175928847299117063")
	if want := `{"id":"175928847299117063","base32":"04W86BB0G4007","base58":"QgmVVkniES","timestamp_ms":1462015105796,"time":"2016-04-30T11:18:25.796Z","datacenter_id":1,"machine_id":0,"sequence":7,"layout":"epoch=1420070400000 timestamp=41 datacenter=5 machine=5 sequence=12"}` + "\n"; body != want {
		t.Errorf("discord: got  %s\nwant %s", body, want)
	}
}

func TestInputError(t *testing.T) {
	for _, tc := range []struct {
		err          error
		field, value string
		cause        error
	}{
		{func() error { _, err := parseID("-5", ""); return err }(), "id", "-5", snowflake.ErrOutOfRange},
		{func() error { _, err := parseID("x", ""); return err }(), "id", "x", snowflake.ErrSyntax},
		{func() error { _, err := parseID("", ""); return err }(), "id", "", nil},
		{func() error { _, err := value(snowflake.Twitter(), snowflake.FieldSequence, "abc"); return err }(), "sequence", "abc", snowflake.ErrSyntax},
		{func() error {
			_, err := value(snowflake.Twitter(), snowflake.FieldTimestamp, "2010-11-04T01:42:54Z")
			return err
		}(), "timestamp", "2010-11-04T01:42:54Z", snowflake.ErrOutOfRange},
		{func() error {
			_, err := compose(snowflake.Twitter(), composition{}, time.UnixMilli(0))
			return err
		}(), "timestamp", "", snowflake.ErrOutOfRange}, // a clock before the epoch
	} {
		var ie *InputError
		if !errors.As(tc.err, &ie) || ie.Field != tc.field || ie.Value != tc.value || !errors.Is(tc.err, ErrInput) {
			t.Errorf("%v: %#v, want an *InputError for %s %q wrapping ErrInput", tc.err, tc.err, tc.field, tc.value)
			continue
		}
		for _, cause := range []error{snowflake.ErrOutOfRange, snowflake.ErrSyntax} {
			if got := errors.Is(tc.err, cause); got != (cause == tc.cause) {
				t.Errorf("%v: errors.Is(%v) = %v", tc.err, cause, got)
			}
		}
	}
}

// TestHandlerRefusesTheZeroLayout: the zero Layout describes no layout;
// Handler never serves it as Twitter's.
func TestHandlerRefusesTheZeroLayout(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), snowflake.ErrZeroLayout.Error()) {
			t.Errorf("Handler of the zero Layout: recovered %v; want a panic naming %v", r, snowflake.ErrZeroLayout)
		}
	}()
	Handler(Options{})
}

// TestPageMarksEveryBadField: the page marks every field it refuses, each
// with the message the command line gives for it alone, and says which
// in its summary; the API, as the command line, names the first.
func TestPageMarksEveryBadField(t *testing.T) {
	h := testHandler(t, snowflake.Twitter())
	res, page := get(t, h, "GET", "/?timestamp=yesterday&datacenter=32&sequence=abc")
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want 400", res.StatusCode)
	}
	want := map[string]string{
		"timestamp":  `timestamp "yesterday" is not a whole number or an RFC 3339 time; want an integer in [1288834974657, 3487858230208] or a time from 2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z`,
		"datacenter": "datacenter 32 out of range [0, 31]",
		"machine":    "",
		"sequence":   `sequence "abc" is not a whole number; want an integer in [0, 4095]`,
	}
	for name, msg := range want {
		if got := elementText(t, page, name+"-error"); got != msg {
			t.Errorf("next to %s: %q, want %q", name, got, msg)
		}
		marked := regexp.MustCompile(`<input id="f-` + name + `"[^>]* aria-invalid="true">`).MatchString(page)
		if marked != (msg != "") {
			t.Errorf("the %s input marked invalid: %v", name, marked)
		}
	}
	if !strings.Contains(page, "No ID: the timestamp, datacenter and sequence are not valid.") {
		t.Error("the summary does not name the three fields")
	}
	_, body := get(t, h, "GET", "/api/compose?timestamp=yesterday&datacenter=32&sequence=abc")
	if !strings.Contains(body, `"field":"timestamp"`) {
		t.Errorf("the API: %s; want the first bad field, timestamp", body)
	}
}
