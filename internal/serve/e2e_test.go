package serve

// The end-to-end test of the page in headless Chromium, driven over the
// DevTools protocol: a small client of its own over
// github.com/coder/websocket (six commands and two events are all it
// needs; chromedp would bring its generated bindings of the whole
// protocol for them).

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	snowflake "github.com/sfgen/sfgen"
)

// chromiumFlags are the flags of the browser the test starts, besides
// its profile directory and the DevTools port.
var chromiumFlags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync"}

// A browser is a headless Chromium and a DevTools session with one page
// of it.
type browser struct {
	t       *testing.T
	ctx     context.Context
	conn    *websocket.Conn
	session string

	mu       sync.Mutex
	nextID   int64
	pending  map[int64]chan cdpMessage
	problems []string // console errors, exceptions: what the page must not have
}

type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startBrowser starts Chromium with a profile of its own for t, connects
// to it over the DevTools protocol and opens a page. Without chromium on
// PATH it fails t under CI (CI=true) and skips it elsewhere.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the page's end-to-end test needs chromium on PATH (.ci/run installs it): %v", err)
		}
		t.Skipf("no chromium on PATH, so the page's end-to-end test cannot run here (it fails under CI=true): %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	var stderr bytes.Buffer
	cmd := exec.Command(path, append(chromiumFlags, "--user-data-dir="+dir, "--remote-debugging-port=0", "about:blank")...)
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers too, to stop them with it
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	// Chromium writes its port and the browser's path to DevToolsActivePort
	// in the profile once it listens.
	var port, wsPath string
	for port == "" {
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if lines := strings.Split(string(b), "\n"); err == nil && len(lines) >= 2 && lines[1] != "" {
			port, wsPath = lines[0], lines[1]
			break
		}
		select {
		case <-exited:
			t.Fatalf("chromium exited before it listened: %s", stderr.String())
		case <-ctx.Done():
			t.Fatalf("chromium did not write DevToolsActivePort: %v; stderr: %s", ctx.Err(), stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	conn, _, err := websocket.Dial(ctx, "ws://127.0.0.1:"+port+wsPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(64 << 20) // screenshots
	t.Cleanup(func() { conn.CloseNow() })
	b := &browser{t: t, ctx: ctx, conn: conn, pending: map[int64]chan cdpMessage{}}
	go b.read()
	// Close the browser cleanly first, so that none of its processes
	// still writes to the profile when t.TempDir removes it; the process
	// group is killed after, should it not have exited.
	t.Cleanup(func() {
		if b.send("", "Browser.close", nil, nil) == nil {
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
			}
		}
	})

	var target struct{ TargetID string }
	b.callBrowser("Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	b.callBrowser("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	for _, domain := range []string{"Page", "Runtime", "Log"} {
		b.call(domain+".enable", nil, nil)
	}
	return b
}

// read dispatches the browser's answers and collects the page's problems.
func (b *browser) read() {
	for {
		_, data, err := b.conn.Read(b.ctx)
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		b.mu.Lock()
		if ch, ok := b.pending[m.ID]; ok && m.ID != 0 {
			ch <- m
			delete(b.pending, m.ID)
		}
		switch m.Method {
		case "Runtime.exceptionThrown":
			b.problems = append(b.problems, "exception: "+string(m.Params))
		case "Log.entryAdded":
			var e struct {
				Entry struct{ Source, Level, Text, URL string }
			}
			json.Unmarshal(m.Params, &e)
			// A fetch of the page for bad input gets status 400, which
			// the console reports; anything else is a problem.
			if e.Entry.Level == "error" && !(e.Entry.Source == "network" && strings.Contains(e.Entry.Text, "status of 400")) {
				b.problems = append(b.problems, fmt.Sprintf("console %s: %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL))
			}
		}
		b.mu.Unlock()
	}
}

func (b *browser) send(session, method string, params, result any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMessage, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	if params == nil {
		p = []byte("{}")
	}
	msg, _ := json.Marshal(cdpMessage{ID: id, Method: method, Params: p, SessionID: session})
	if err := b.conn.Write(b.ctx, websocket.MessageText, msg); err != nil {
		return err
	}
	select {
	case m, ok := <-ch:
		switch {
		case !ok:
			return errors.New("the DevTools connection closed")
		case m.Error != nil:
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		case result != nil:
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-b.ctx.Done():
		return fmt.Errorf("%s: %w", method, b.ctx.Err())
	}
}

func (b *browser) callBrowser(method string, params, result any) {
	b.t.Helper()
	if err := b.send("", method, params, result); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browser) call(method string, params, result any) {
	b.t.Helper()
	if err := b.send(b.session, method, params, result); err != nil {
		b.t.Fatal(err)
	}
}

// eval evaluates the JavaScript expression js in the page and returns its
// value as JSON; ok is false when it threw (or the page was between two
// documents).
func (b *browser) eval(js string) (value string, ok bool) {
	var r struct {
		Result           struct{ Value json.RawMessage }
		ExceptionDetails json.RawMessage
	}
	err := b.send(b.session, "Runtime.evaluate", map[string]any{"expression": js, "returnByValue": true}, &r)
	if err != nil || r.ExceptionDetails != nil {
		return "", false
	}
	return string(r.Result.Value), true
}

// await returns the JSON value of the promise the expression js gives.
func (b *browser) await(js string) string {
	b.t.Helper()
	var r struct {
		Result           struct{ Value json.RawMessage }
		ExceptionDetails json.RawMessage
	}
	b.call("Runtime.evaluate", map[string]any{"expression": js, "returnByValue": true, "awaitPromise": true}, &r)
	if r.ExceptionDetails != nil {
		b.t.Fatalf("%s threw: %s", js, r.ExceptionDetails)
	}
	return string(r.Result.Value)
}

// waitFor waits until the expression js is true in the page.
func (b *browser) waitFor(what, js string) {
	b.t.Helper()
	for {
		if v, ok := b.eval("!!(" + js + ")"); ok && v == "true" {
			return
		}
		select {
		case <-b.ctx.Done():
			b.t.Fatalf("waiting for %s: %v; the page has %s", what, b.ctx.Err(), b.state())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// state describes the page for a failure's message.
func (b *browser) state() string {
	v, _ := b.eval(`JSON.stringify({url: location.href, id: document.getElementById("id-value")?.textContent,
		errors: [...document.querySelectorAll(".error")].map(e => e.textContent).filter(Boolean)})`)
	return v
}

// navigate loads url and waits until the page has loaded, its script
// included when scripts run.
func (b *browser) navigate(url string) {
	b.t.Helper()
	b.call("Page.navigate", map[string]any{"url": url}, nil)
	b.waitFor("the page "+url, `location.href === `+strconv.Quote(url)+` && document.readyState === "complete"`)
}

// typeInto replaces the value of the input with the given id by text, as
// typing does.
func (b *browser) typeInto(id, text string) {
	b.t.Helper()
	if _, ok := b.eval(`(() => { const e = document.getElementById(` + strconv.Quote(id) + `); e.focus(); e.select(); return true })()`); !ok {
		b.t.Fatalf("no input %q; the page has %s", id, b.state())
	}
	b.call("Input.insertText", map[string]any{"text": text}, nil)
}

// click clicks the middle of the element the selector names, with the mouse.
func (b *browser) click(selector string) {
	b.t.Helper()
	v, ok := b.eval(`(() => { const e = document.querySelector(` + strconv.Quote(selector) + `); e.scrollIntoView({block: "center"});
		const r = e.getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2] })()`)
	var xy [2]float64
	if !ok || json.Unmarshal([]byte(v), &xy) != nil {
		b.t.Fatalf("no %s to click; the page has %s", selector, b.state())
	}
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		b.call("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": xy[0], "y": xy[1], "button": "left", "clickCount": 1}, nil)
	}
}

// text returns the JSON value of the expression js.
func (b *browser) text(js string) string {
	b.t.Helper()
	v, ok := b.eval(js)
	if !ok {
		b.t.Fatalf("%s threw; the page has %s", js, b.state())
	}
	return v
}

// checkNoProblems fails the test for each console error or exception the
// page has had (a script or style the Content-Security-Policy blocked,
// say).
func (b *browser) checkNoProblems() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("the page had a problem: %s", p)
	}
	b.problems = nil
}

// fits reports whether the page is as wide as the window or narrower: no
// horizontal scrolling.
func (b *browser) fits() bool {
	b.t.Helper()
	return b.text(`(e => e.scrollWidth <= e.clientWidth && e.clientWidth <= window.innerWidth)(document.documentElement)`) == "true"
}

// segmentsJS lists the segments the page shows as "name bits value".
const segmentsJS = `[...document.querySelectorAll("[data-segment]")].map(li =>
	li.dataset.segment + " " + li.querySelector(".seg-bits").textContent + " " + li.querySelector("[data-value]").textContent).join("\n")`

func TestPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a headless Chromium: long; run without -short")
	}
	b := startBrowser(t)
	// Behind the Host check, as Serve runs it: the browser's Host is the
	// server's own address.
	srv := httptest.NewUnstartedServer(nil)
	hosts, err := NewHosts(srv.Listener.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = hosts.Handler(Handler(Options{Layout: snowflake.Twitter()}))
	srv.Start()
	defer srv.Close()
	worked := strconv.Quote(strings.Join([]string{
		"sign 0 0",
		"timestamp 00000000000000000000000000000001111101000 1288834975657",
		"datacenter 00001 1",
		"machine 00001 1",
		"sequence 000000000000 0",
	}, "\n"))

	t.Run("as you type", func(t *testing.T) {
		b.t = t
		b.navigate(srv.URL + "/")
		b.waitFor("the script", `!document.getElementById("copy").hidden`)
		b.typeInto("f-timestamp", "1288834975657")
		b.typeInto("f-datacenter", "1")
		b.typeInto("f-machine", "1")
		b.typeInto("f-sequence", "0")
		// Each insertText is one input event: the page has followed the
		// last once the address has every value.
		b.waitFor("the worked example's ID", `location.search === "?timestamp=1288834975657&datacenter=1&machine=1&sequence=0" &&
			document.getElementById("id-value")?.textContent === "4194439168"`)
		if got := b.text(segmentsJS); got != worked {
			t.Errorf("segments %s, want %s", got, worked)
		}
		for js, want := range map[string]string{
			`document.getElementById("time-value").textContent`: `"2010-11-04T01:42:55.657Z"`,
			`document.getElementById("f-id").value`:             `"4194439168"`, // the decode box follows
			`location.search`:                                   `"?timestamp=1288834975657&datacenter=1&machine=1&sequence=0"`,
			`document.querySelectorAll(".bit").length`:          `64`,
		} {
			if got := b.text(js); got != want {
				t.Errorf("%s = %s, want %s", js, got, want)
			}
		}

		// The Copy button puts the ID on the clipboard.
		b.callBrowser("Browser.grantPermissions", map[string]any{"origin": srv.URL, "permissions": []string{"clipboardReadWrite", "clipboardSanitizedWrite"}}, nil)
		b.click("#copy")
		b.waitFor("the Copy button's answer", `document.getElementById("copy").textContent === "Copied"`)
		if got := b.await(`navigator.clipboard.readText()`); got != `"4194439168"` {
			t.Errorf("the clipboard has %s, want the ID", got)
		}

		b.typeInto("f-datacenter", "32")
		b.waitFor("the datacenter's error", `document.getElementById("datacenter-error").textContent === "datacenter 32 out of range [0, 31]"`)
		for js, want := range map[string]string{
			`document.getElementById("id-value") === null`:                         `true`,
			`document.getElementById("f-datacenter").getAttribute("aria-invalid")`: `"true"`,
			`document.getElementById("timestamp-error").textContent`:               `""`,
		} {
			if got := b.text(js); got != want {
				t.Errorf("%s = %s, want %s", js, got, want)
			}
		}

		b.typeInto("f-id", "1724551110456668202")
		b.waitFor("the decoded ID", `document.getElementById("time-value")?.textContent === "2023-11-14T22:13:20.000Z"`)
		if got, want := b.text(`["timestamp", "datacenter", "machine", "sequence"].map(n => document.getElementById("f-" + n).value).join(" ")`), `"1700000000000 3 7 42"`; got != want {
			t.Errorf("the compose form shows %s, want %s", got, want)
		}
		if got := b.text(`document.getElementById("datacenter-error").textContent + document.getElementById("f-datacenter").getAttribute("aria-invalid")`); got != `"null"` {
			t.Errorf("the datacenter's error is still shown: %s", got)
		}
		b.checkNoProblems()
	})

	t.Run("without JavaScript", func(t *testing.T) {
		b.t = t
		b.call("Emulation.setScriptExecutionDisabled", map[string]any{"value": true}, nil)
		defer b.call("Emulation.setScriptExecutionDisabled", map[string]any{"value": false}, nil)
		b.navigate(srv.URL + "/?timestamp=1288834975657&datacenter=1&machine=1&sequence=0")
		if got := b.text(`document.getElementById("id-value").textContent + " " + document.getElementById("copy").hidden`); got != `"4194439168 true"` {
			t.Errorf("the page without its script shows %s, want the ID and no Copy button", got)
		}
		if got := b.text(segmentsJS); got != worked {
			t.Errorf("segments %s, want %s", got, worked)
		}
		// The decode form, typed into and submitted with the mouse.
		b.typeInto("f-id", "9223372036854775807")
		b.click("#decode button")
		b.waitFor("the decoded ID", `location.search === "?id=9223372036854775807" && document.readyState === "complete"`)
		if got := b.text(`document.getElementById("time-value").textContent`); got != `"2080-07-10T17:30:30.208Z"` {
			t.Errorf("time %s", got)
		}
		b.typeInto("f-machine", "32")
		b.click("#compose button")
		b.waitFor("the error", `document.getElementById("machine-error")?.textContent === "machine 32 out of range [0, 31]"`)
		b.checkNoProblems()
	})

	dir := os.Getenv("SFGEN_SCREENSHOTS") // to look at them, or for the README's
	if dir == "" {
		dir = t.TempDir()
	}
	long := strings.Repeat("9", 300)
	for _, tc := range []struct {
		name          string
		width, height int
		mobile, dark  bool
		query         string
	}{
		{"light", 1100, 900, false, false, "?timestamp=1288834975657&datacenter=1&machine=1&sequence=0"},
		{"dark", 1100, 900, false, true, "?timestamp=1288834975657&datacenter=1&machine=1&sequence=0"},
		{"phone", 390, 844, true, false, "?id=9223372036854775807"},
		{"phone-dark", 390, 844, true, true, "?timestamp=1700000000000&datacenter=3&machine=7&sequence=42"},
		{"phone-long", 390, 844, true, false, "?timestamp=" + long},
		{"phone-long-id", 360, 740, true, true, "?id=" + long},
	} {
		t.Run("screen "+tc.name, func(t *testing.T) {
			b.t = t
			b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": tc.width, "height": tc.height, "deviceScaleFactor": 1, "mobile": tc.mobile}, nil)
			scheme := map[bool]string{false: "light", true: "dark"}[tc.dark]
			b.call("Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": scheme}}}, nil)
			b.navigate(srv.URL + "/" + tc.query)
			b.waitFor("the script", `document.getElementById("copy") === null || !document.getElementById("copy").hidden`)
			// Nothing wider than the screen, long numbers included.
			if got := b.text(`(e => [e.scrollWidth, e.clientWidth])(document.documentElement)`); !b.fits() {
				t.Errorf("the page is wider than the window: [scrollWidth, clientWidth] %s", got)
			}
			// The colour scheme the browser asks for is the one shown.
			bg := b.text(`getComputedStyle(document.body).backgroundColor`)
			if want := map[bool]string{false: `"rgb(247, 247, 245)"`, true: `"rgb(18, 20, 22)"`}[tc.dark]; bg != want {
				t.Errorf("%s background %s, want %s", scheme, bg, want)
			}
			var metrics struct{ CSSContentSize struct{ Height float64 } }
			b.call("Page.getLayoutMetrics", nil, &metrics)
			var shot struct{ Data string }
			b.call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
				"clip": map[string]any{"x": 0, "y": 0, "width": tc.width, "height": metrics.CSSContentSize.Height, "scale": 1}}, &shot)
			data, err := base64.StdEncoding.DecodeString(shot.Data)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil || img.Bounds().Dx() != tc.width {
				t.Fatalf("the screenshot: %v, %v", err, img.Bounds())
			}
			if err := os.WriteFile(filepath.Join(dir, tc.name+".png"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			b.checkNoProblems()
		})
	}
}
