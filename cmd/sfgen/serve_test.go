package main

import (
	"bufio"
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/serve"
)

// TestServeAPIMatchesCLI runs the CLI's run() and serve's handler on the
// same inputs: for every input the API answers with what
// 'sfgen compose --json' or 'sfgen decompose --json' prints (status 200),
// or, where the CLI refuses the input (exit 2), with status 400 and the
// CLI's message.
func TestServeAPIMatchesCLI(t *testing.T) {
	type kv = [][2]string
	composes := []kv{
		{{"timestamp", "1288834975657"}, {"datacenter", "1"}, {"machine", "1"}, {"sequence", "0"}}, // the worked example
		{{"timestamp", "1288834974657"}},
		{{"timestamp", "3487858230208"}, {"datacenter", "31"}, {"machine", "31"}, {"sequence", "4095"}},
		{{"timestamp", "1700000000000"}, {"datacenter", "3"}, {"machine", "7"}, {"sequence", "42"}},
		{{"timestamp", "1462015105796"}, {"datacenter", "1"}, {"sequence", "7"}},
		{{"timestamp", "1600000000000"}, {"datacenter", "15"}, {"machine", "63"}},
		{{"timestamp", "+01288834975657"}, {"datacenter", "-0"}},
		{{"timestamp", "1288834974656"}},
		{{"timestamp", "3487858230209"}},
		{{"timestamp", "1599999999999"}},
		{{"timestamp", "-1"}},
		{{"timestamp", "99999999999999999999999999"}},
		{{"timestamp", "2023-11-14T22:13:20Z"}},
		{{"timestamp", "1288834975657"}, {"datacenter", "32"}},
		{{"timestamp", "1288834975657"}, {"datacenter", "16"}},
		{{"timestamp", "1288834975657"}, {"machine", "-1"}},
		{{"timestamp", "1288834975657"}, {"machine", "64"}},
		{{"timestamp", "1288834975657"}, {"sequence", "4096"}},
		{{"timestamp", "1288834975657"}, {"sequence", "abc"}},
		{{"timestamp", "1288834975657"}, {"sequence", "1.5"}},
		{{"timestamp", "1288834975657"}, {"sequence", " 1"}},
		{{"timestamp", "1288834975657"}, {"sequence", "0x10"}},
		{{"timestamp", "1"}, {"datacenter", "32"}, {"machine", "x"}}, // the first bad value counts
		{{"timestamp", `"><script>alert(1)</script>`}},
	}
	ids := []string{"4194439168", "0", "9223372036854775807", "1724551110456668202", "175928847299117063", "+42", "007",
		"-5", "-9223372036854775809", "9223372036854775808", "abc", "1e3", " 1", `"><script>alert(1)</script>`}
	for _, layout := range []string{"twitter", "discord", "epoch=1600000000000 timestamp=41 datacenter=4 machine=6 sequence=12"} {
		l, err := snowflake.ParseLayout(layout)
		if err != nil {
			t.Fatal(err)
		}
		h := serve.Handler(serve.Options{Layout: l})
		for _, in := range composes {
			args := []string{"compose", "--layout", layout, "--json"}
			q := url.Values{}
			for _, p := range in {
				args = append(args, "--"+p[0], p[1])
				q.Set(p[0], p[1])
			}
			compareCLI(t, h, args, "/api/compose?"+q.Encode(), in[len(in)-1][0])
		}
		for _, id := range ids {
			compareCLI(t, h, []string{"decompose", "--layout", layout, "--json", "--", id}, "/api/decompose?id="+url.QueryEscape(id), "id")
		}
		compareCLI(t, h, []string{"decompose", "--layout", layout, "--json"}, "/api/decompose", "id")
	}
}

// compareCLI checks that the API's answer to target is the CLI's to args;
// field is the parameter an error must name.
func compareCLI(t *testing.T, h http.Handler, args []string, target, field string) {
	t.Helper()
	code, out, errOut := sfgen(t, args...)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
	body := rec.Body.String()
	switch code {
	case exitOK:
		if rec.Code != http.StatusOK || body != out {
			t.Errorf("%s: %d %s\nsfgen %q prints %s", target, rec.Code, body, args, out)
		}
	case exitUsage:
		var e struct{ Error, Field string }
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatalf("%s: %v: %s", target, err, body)
		}
		msg := strings.TrimSuffix(strings.TrimPrefix(errOut, "sfgen "+args[0]+": "), "\n")
		if rec.Code != http.StatusBadRequest || e.Error != msg || out != "" {
			t.Errorf("%s: %d %q\nsfgen %q says %q", target, rec.Code, e.Error, args, msg)
		}
		if !strings.HasPrefix(msg, field+" ") && !strings.HasPrefix(msg, "missing ID") {
			// The field at fault is the first one the message names.
			field = strings.Fields(msg)[0]
		}
		if e.Field != field {
			t.Errorf("%s: field %q, want %q (%s)", target, e.Field, field, msg)
		}
	default:
		t.Errorf("sfgen %q: exit %d, stderr %q", args, code, errOut)
	}
	comparePage(t, h, code, out, errOut, args, target)
}

var (
	pageIDRE    = regexp.MustCompile(`<output id="id-value"[^>]*>([^<]*)</output>`)
	pageErrorRE = regexp.MustCompile(`<p class="error" id="([a-z]+)-error"[^>]*>([^<]*)</p>`)
)

// comparePage checks that the page, given the API call's query, shows the
// ID the CLI printed, or the CLI's message next to the field at fault;
// the page marks every bad field (the CLI stops at the first), so each
// other field it marks must carry the message the CLI gives for that flag
// alone (args without the others' flags). The page reads more than the
// CLI (spaces around a value), so inputs the CLI refuses for those are
// left out.
func comparePage(t *testing.T, h http.Handler, code int, out, errOut string, args []string, target string) {
	t.Helper()
	cmd := args[0]
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if cmd == "decompose" && !q.Has("id") {
		return // the page without an id composes
	}
	for _, vs := range q {
		if v := vs[0]; strings.TrimSpace(v) != v {
			return
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/?"+u.RawQuery, nil))
	page := rec.Body.String()
	errs := map[string]string{}
	for _, m := range pageErrorRE.FindAllStringSubmatch(page, -1) {
		if m[2] != "" {
			errs[m[1]] = html.UnescapeString(m[2])
		}
	}
	if code == exitOK {
		var v struct{ ID string }
		json.Unmarshal([]byte(out), &v)
		if m := pageIDRE.FindStringSubmatch(page); rec.Code != 200 || m == nil || m[1] != v.ID || len(errs) > 0 {
			t.Errorf("the page for %s: status %d, ID %q, errors %q; want the CLI's ID %s", u.RawQuery, rec.Code, m, errs, v.ID)
		}
		return
	}
	msg := strings.TrimSuffix(strings.TrimPrefix(errOut, "sfgen "+cmd+": "), "\n")
	field := strings.Fields(msg)[0]
	if strings.HasPrefix(msg, "missing ID") {
		field = "id"
	}
	if rec.Code != http.StatusBadRequest || errs[field] != msg || pageIDRE.MatchString(page) {
		t.Errorf("the page for %s: status %d, errors %q; want %q next to %s", u.RawQuery, rec.Code, errs, msg, field)
	}
	for other, got := range errs {
		if other == field {
			continue
		}
		alone := []string{cmd, "--layout", flagValue(args, "--layout"), "--" + other, q.Get(other)}
		code, _, errOut := sfgen(t, alone...)
		if want := strings.TrimSuffix(strings.TrimPrefix(errOut, "sfgen "+cmd+": "), "\n"); code != exitUsage || got != want {
			t.Errorf("the page for %s: %q next to %s; sfgen %q says %q (exit %d)", u.RawQuery, got, other, alone, want, code)
		}
	}
}

// flagValue returns the value after flag in args, "" when it is not there.
func flagValue(args []string, flag string) string {
	for i, a := range args[:len(args)-1] {
		if a == flag {
			return args[i+1]
		}
	}
	return ""
}

// TestServeAPINowMatchesCLI compares a composition without a timestamp:
// both read the clock, so the API's timestamp lies between two CLI runs'.
func TestServeAPINowMatchesCLI(t *testing.T) {
	h := serve.Handler(serve.Options{Layout: snowflake.Twitter()})
	type idJSONFields struct {
		ID          string `json:"id"`
		TimestampMS int64  `json:"timestamp_ms"`
		Datacenter  int64  `json:"datacenter_id"`
		Machine     int64  `json:"machine_id"`
		Sequence    int64  `json:"sequence"`
		Layout      string `json:"layout"`
	}
	decode := func(s string) idJSONFields {
		var v idJSONFields
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("%v: %s", err, s)
		}
		return v
	}
	_, before, _ := sfgen(t, "compose", "--datacenter", "3", "--machine", "4", "--sequence", "5", "--json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/compose?datacenter=3&machine=4&sequence=5", nil))
	_, after, _ := sfgen(t, "compose", "--datacenter", "3", "--machine", "4", "--sequence", "5", "--json")
	b, a, got := decode(before), decode(after), decode(rec.Body.String())
	if got.TimestampMS < b.TimestampMS || got.TimestampMS > a.TimestampMS {
		t.Errorf("API timestamp %d, not between the CLI's %d and %d", got.TimestampMS, b.TimestampMS, a.TimestampMS)
	}
	b.ID, b.TimestampMS, got.ID, got.TimestampMS = "", 0, "", 0
	if got != b {
		t.Errorf("API %+v, CLI %+v", got, b)
	}
}

// lineWriter collects what run writes, safely for the server's goroutines,
// and hands over its first line.
type lineWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	first chan string
	sent  bool
}

func newLineWriter() *lineWriter { return &lineWriter{first: make(chan string, 1)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if s := w.buf.String(); !w.sent && strings.Contains(s, "\n") {
		w.first <- s[:strings.Index(s, "\n")]
		w.sent = true
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startServe runs 'sfgen serve' with args and --addr 127.0.0.1:0 until
// the test ends, and returns its URL (its first line on stdout) and its
// stderr.
func startServe(t *testing.T, args ...string) (string, *lineWriter, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := newLineWriter(), newLineWriter()
	done := make(chan int, 1)
	go func() { done <- runServe(ctx, append([]string{"--addr", "127.0.0.1:0"}, args...), stdout, stderr) }()
	var u string
	select {
	case u = <-stdout.first:
	case code := <-done:
		t.Fatalf("sfgen serve exited %d before it listened: %s", code, stderr.String())
	}
	var once sync.Once
	code := -1
	stop := func() int {
		once.Do(func() {
			cancel()
			code = <-done
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return u, stderr, stop
}

func TestServeCommand(t *testing.T) {
	u, stderr, stop := startServe(t, "--layout", "discord")
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != "http" || pu.Path != "/" || !strings.HasPrefix(pu.Host, "127.0.0.1:") || pu.Port() == "0" {
		t.Fatalf("sfgen serve printed %q, want http://127.0.0.1:PORT/ with the port it chose", u)
	}
	res, err := http.Get(u + "api/decompose?id=175928847299117063")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	_, want, _ := sfgen(t, "decompose", "--layout", "discord", "--json", "175928847299117063")
	if string(body) != want {
		t.Errorf("the API in the discord layout: %s, want %s", body, want)
	}
	if code := stop(); code != exitOK {
		t.Errorf("exit %d after the context was cancelled, want 0", code)
	}
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "sfgen serve: layout discord (epoch=1420070400000") ||
		!strings.Contains(lines[1], `"GET /api/decompose?id=175928847299117063" 200 `) || lines[2] != "sfgen serve: stopped" {
		t.Errorf("stderr:\n%s\nwant the layout, one access log line and stopped", stderr.String())
	}
	if _, err := http.Get(u); err == nil {
		t.Error("the server still answers after sfgen serve returned")
	}
}

func TestServeNotLoopbackWarns(t *testing.T) {
	var stdout, stderr strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // serve stops as soon as it has listened
	code := runServe(ctx, []string{"--addr", "0.0.0.0:0"}, &stdout, &stderr)
	if code != exitOK || !regexp.MustCompile(`^sfgen serve: listening on 0\.0\.0\.0:[1-9][0-9]* \(every address of this machine\), not only loopback: anyone who can reach it can use the page\n`).MatchString(stderr.String()) {
		t.Errorf("exit %d, stderr %q; want a warning naming 0.0.0.0 and the port", code, stderr.String())
	}
	code = runServe(ctx, []string{"--addr", "127.0.0.1:0"}, &stdout, &stderr)
	if code != exitOK || strings.Count(stderr.String(), "not only loopback") != 1 {
		t.Errorf("exit %d, stderr %q; want no warning for loopback", code, stderr.String())
	}
}

func TestServeUsage(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := runServe(context.Background(), []string{"--help"}, &stdout, &stderr); code != exitOK ||
		!strings.Contains(stdout.String(), "Examples:\n  sfgen serve\n  sfgen serve --addr 127.0.0.1:0\n") ||
		!strings.Contains(stdout.String(), "--addr HOST:PORT\n      listen on HOST:PORT; port 0 picks a free one (default 127.0.0.1:8080)") {
		t.Errorf("--help: exit %d:\n%s", code, stdout.String())
	}
	// Hold a port, so that listening on it fails.
	busy := httptest.NewServer(http.NotFoundHandler())
	defer busy.Close()
	busyAddr := strings.TrimPrefix(busy.URL, "http://")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--addr", "8080"}, exitUsage, `sfgen serve: addr "8080" is not HOST:PORT: address 8080: missing port in address; want an address such as 127.0.0.1:8080` + "\n"},
		{[]string{"--addr", "127.0.0.1:http"}, exitUsage, `sfgen serve: addr "127.0.0.1:http": port "http" is not a number from 0 to 65535` + "\n"},
		{[]string{"--addr", "127.0.0.1:65536"}, exitUsage, `sfgen serve: addr "127.0.0.1:65536": port "65536" is not a number from 0 to 65535` + "\n"},
		{[]string{"--layout", "discrod"}, exitUsage, "sfgen serve: --layout: invalid layout \"discrod\": spec: not a preset name or a spec; want a preset (twitter, discord) or a spec such as \"epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12\"\n"},
		{[]string{"extra"}, exitUsage, "sfgen serve: unexpected argument \"extra\"; serve takes only flags\n"},
		{[]string{"--port", "1"}, exitUsage, "sfgen serve: unknown flag --port; see 'sfgen serve --help'\n"},
		{[]string{"--allow-host", "http://sfgen.example.com/"}, exitUsage, `sfgen serve: --allow-host "http://sfgen.example.com/": a URL or a path, not a host; want a host name, an IPv4 address or an IPv6 address in brackets, with or without :PORT, such as sfgen.example.com, sfgen.example.com:8443 or [2001:db8::1]` + "\n"},
		{[]string{"--allow-host", "ok.example", "--allow-host", "bad..example"}, exitUsage, `sfgen serve: --allow-host "bad..example": an empty label (two dots, or a dot at an end); want a host name, an IPv4 address or an IPv6 address in brackets, with or without :PORT, such as sfgen.example.com, sfgen.example.com:8443 or [2001:db8::1]` + "\n"},
		{[]string{"--allow-host", "x.example:0"}, exitUsage, `sfgen serve: --allow-host "x.example:0": port "0" is not a number from 1 to 65535; want a host name, an IPv4 address or an IPv6 address in brackets, with or without :PORT, such as sfgen.example.com, sfgen.example.com:8443 or [2001:db8::1]` + "\n"},
		{[]string{"--addr", busyAddr}, exitFail, "sfgen serve: listen tcp " + busyAddr + ": bind: address already in use\n"},
	} {
		var stdout, stderr strings.Builder
		code := runServe(context.Background(), tc.args, &stdout, &stderr)
		if code != tc.code || stderr.String() != tc.msg || stdout.String() != "" {
			t.Errorf("sfgen serve %q: exit %d, stdout %q, stderr %q; want %d, %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.msg)
		}
	}
}

// TestServeCommandHosts: sfgen serve answers its own address, the
// loopback names and the --allow-host names, and gives any other Host 421
// with a line that names it and --allow-host.
func TestServeCommandHosts(t *testing.T) {
	u, _, _ := startServe(t, "--allow-host", "sfgen.example.com", "--allow-host", "proxy.example:8443")
	pu, _ := url.Parse(u)
	for _, c := range []struct {
		host   string
		status int
	}{
		{pu.Host, 200}, {"localhost", 200}, {"LocalHost:" + pu.Port(), 200}, {"[::1]:" + pu.Port(), 200},
		{"sfgen.example.com", 200}, {"SFGEN.EXAMPLE.COM:443", 200}, {"proxy.example:8443", 200},
		{"evil.example", 421}, {"evil.example:" + pu.Port(), 421}, {"proxy.example", 421}, {"localhost.evil.example", 421}, {"evil-localhost", 421},
	} {
		req, _ := http.NewRequest("GET", u+"api/decompose?id=1", nil)
		req.Host = c.host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.status {
			t.Errorf("Host %s: %d %s; want %d", c.host, res.StatusCode, b, c.status)
		}
		if c.status == 421 && !strings.Contains(string(b), "refused Host \""+c.host+"\"") || c.status == 421 && !strings.Contains(string(b), "--allow-host") {
			t.Errorf("Host %s: %s; want a line that names the Host and --allow-host", c.host, b)
		}
	}
}
