package pgfetch

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

var (
	// ErrChecksum is wrapped when a tarball's SHA-512 is not the lock's.
	ErrChecksum = errors.New("SHA-512 does not match the lock")
	// ErrUnsafe is wrapped when a tarball holds an entry or asks for a
	// link that could write outside its directory, or anything but files
	// and directories.
	ErrUnsafe = errors.New("unsafe package")
	// ErrNotFetched is wrapped by [Fetcher.BinDir] when the pin is not in
	// the cache and fetching was not allowed.
	ErrNotFetched = errors.New("PostgreSQL not fetched")
)

// An Error is a fetch that failed: what was being done, for which
// package version from which URL, and why.
type Error struct {
	Op  string // "download", "check", "unpack"
	Pin Pin
	URL string
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s from %s: %v", e.Op, e.Pin, e.URL, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

const (
	// maxTarball bounds a download: the packages are 20 to 30 MB.
	maxTarball = 512 << 20
	// maxUnpacked bounds what a tarball may unpack to: about 80 MB.
	maxUnpacked = 2 << 30
	// defaultTimeout bounds a whole fetch, download and unpacking, as
	// .ci/postgres-majors' curl --max-time does.
	defaultTimeout = 10 * time.Minute
	// integrityName is the file in an unpacked directory that records the
	// integrity it was checked against.
	integrityName = ".sfgen-integrity"
)

// A Fetcher fetches pinned packages into a cache directory.
type Fetcher struct {
	// Dir is the cache directory; DefaultDir() when empty.
	Dir string
	// Registry is the npm registry's base URL; Registry when empty.
	Registry string
	// Client makes the request; one with a 20-second connect timeout when
	// nil.
	Client *http.Client
	// Timeout bounds a fetch, from waiting for another process's to
	// unpacking; 10 minutes when zero.
	Timeout time.Duration
	// Log, when not nil, is told what is fetched, from where and to where,
	// before the download, and what came of it after.
	Log io.Writer
}

// DirEnv names the environment variable that, when set, is the cache
// directory in place of DefaultDir's own choice.
const DirEnv = "SFGEN_PG_FETCH_DIR"

// DefaultDir is the cache directory: $SFGEN_PG_FETCH_DIR when set, else
// os.UserCacheDir()/sfgen/postgres, or /var/cache/sfgen/postgres when
// running as root (whose server runs as the OS user postgres, which must
// read the binaries and cannot enter root's home).
func DefaultDir() (string, error) {
	if dir := os.Getenv(DirEnv); dir != "" {
		return dir, nil
	}
	if os.Geteuid() == 0 {
		return "/var/cache/sfgen/postgres", nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for PostgreSQL: %w", err)
	}
	return filepath.Join(dir, "sfgen", "postgres"), nil
}

func (f *Fetcher) dir() (string, error) {
	if f.Dir != "" {
		return f.Dir, nil
	}
	return DefaultDir()
}

// Target is where pin's server binaries are, or will be, in the cache.
func (f *Fetcher) Target(pin Pin) (string, error) {
	dir, err := f.dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, pin.Platform+"-"+pin.Version), nil
}

// Cached returns the bin directory of pin's server when the cache holds
// it, unpacked from a tarball that matched pin's integrity, and "" when not.
func (f *Fetcher) Cached(pin Pin) string {
	root, err := f.Target(pin)
	if err != nil {
		return ""
	}
	return cached(root, pin)
}

func cached(root string, pin Pin) string {
	got, err := os.ReadFile(filepath.Join(root, integrityName))
	if err != nil || strings.TrimSpace(string(got)) != pin.Integrity {
		return ""
	}
	bin := filepath.Join(root, "native", "bin")
	for _, name := range []string{"initdb", "postgres"} {
		if fi, err := os.Stat(filepath.Join(bin, name)); err != nil || !fi.Mode().IsRegular() {
			return ""
		}
	}
	return bin
}

// BinDir returns the bin directory of pin's server: the cache's, or, when
// the cache does not hold it and fetch is true, one fetched now. With
// fetch false and nothing cached, its error wraps [ErrNotFetched].
func (f *Fetcher) BinDir(ctx context.Context, pin Pin, fetch bool) (string, error) {
	if bin := f.Cached(pin); bin != "" {
		return bin, nil
	}
	if !fetch {
		root, err := f.Target(pin)
		if err != nil {
			return "", err
		}
		return "", fmt.Errorf("%w: %s is not in %s", ErrNotFetched, pin, root)
	}
	return f.Fetch(ctx, pin)
}

// Fetch returns the bin directory of pin's server, from the cache when it
// is there and otherwise downloaded, checked and unpacked into it first.
func (f *Fetcher) Fetch(ctx context.Context, pin Pin) (string, error) {
	url := pin.URL(f.Registry)
	root, err := f.Target(pin)
	if err != nil {
		return "", err
	}
	if bin := cached(root, pin); bin != "" {
		return bin, nil
	}
	timeout := f.Timeout
	if timeout == 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	dir := filepath.Dir(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", &Error{"create the cache for", pin, url, err}
	}
	if f.Dir == "" && os.Getenv(DirEnv) == "" && os.Geteuid() == 0 {
		// The server runs as postgres and must pass through, whatever
		// the umask made of it.
		os.Chmod(dir, 0o755)
		os.Chmod(filepath.Dir(dir), 0o755)
	}
	unlock, err := lockDir(ctx, dir)
	if err != nil {
		return "", &Error{"wait for another process fetching", pin, url, err}
	}
	defer unlock()
	if bin := cached(root, pin); bin != "" { // another process's
		return bin, nil
	}

	if f.Log != nil {
		fmt.Fprintf(f.Log, "fetching %s for %s from %s (about 25 MB), SHA-512 checked against internal/pgfetch/postgres.lock, into %s\n",
			pin, pin.Platform, url, root)
	}
	began := time.Now()
	tgz, err := f.download(ctx, dir, url)
	if err != nil {
		return "", &Error{"download", pin, url, err}
	}
	defer os.Remove(tgz)
	if err := checkSum(tgz, pin); err != nil {
		return "", &Error{"check", pin, url, err}
	}
	if err := unpackInto(ctx, tgz, root, pin); err != nil {
		return "", &Error{"unpack", pin, url, err}
	}
	if f.Log != nil {
		fmt.Fprintf(f.Log, "fetched %s in %s: server binaries in %s\n", pin, time.Since(began).Round(100*time.Millisecond), filepath.Join(root, "native", "bin"))
	}
	return filepath.Join(root, "native", "bin"), nil
}

func (f *Fetcher) client() *http.Client {
	if f.Client != nil {
		return f.Client
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 20 * time.Second}).DialContext
	t.ResponseHeaderTimeout = 60 * time.Second
	return &http.Client{Transport: t}
}

// download fetches url into a temporary file in dir and returns its name.
func (f *Fetcher) download(ctx context.Context, dir, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := f.client().Do(req)
	if err != nil {
		return "", fmt.Errorf("%w (is the npm registry reachable from here? a proxy is taken from HTTPS_PROXY)", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the registry answered %s", resp.Status)
	}
	out, err := os.CreateTemp(dir, ".download-*.tgz")
	if err != nil {
		return "", err
	}
	n, err := io.Copy(out, io.LimitReader(resp.Body, maxTarball+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > maxTarball {
		err = fmt.Errorf("the tarball is larger than %d MB", maxTarball>>20)
	}
	if err != nil {
		os.Remove(out.Name())
		return "", err
	}
	return out.Name(), nil
}

// checkSum checks the SHA-512 of file tgz against pin's integrity.
func checkSum(tgz string, pin Pin) error {
	want, err := pin.Sum()
	if err != nil {
		return err
	}
	fh, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer fh.Close()
	h := sha512.New()
	if _, err := io.Copy(h, fh); err != nil {
		return err
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		return fmt.Errorf("%w: got %s, the lock has %s; nothing was unpacked (a changed package or a proxy rewriting it: refetch, and if it persists report it)",
			ErrChecksum, hex.EncodeToString(got)[:16]+"…", hex.EncodeToString(want)[:16]+"…")
	}
	return nil
}

// unpackInto unpacks tgz into a fresh temporary directory beside root,
// completes and checks it, and renames it to root.
func unpackInto(ctx context.Context, tgz, root string, pin Pin) error {
	tmp, err := os.MkdirTemp(filepath.Dir(root), ".unpack-"+filepath.Base(root)+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op after the rename
	if err := untar(tgz, tmp); err != nil {
		return err
	}
	if err := makeLinks(tmp); err != nil {
		return err
	}
	if err := checkServer(ctx, filepath.Join(tmp, "native", "bin"), pin.Major); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, integrityName), []byte(pin.Integrity+"\n"), 0o644); err != nil {
		return err
	}
	// Every directory readable by all (MkdirTemp's is 0700, and the umask
	// may have narrowed the others): the server may run as another user.
	err = filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(p, 0o755)
		}
		return err
	})
	if err != nil {
		return err
	}
	// A directory left under root's name without a matching integrity
	// (an older lock's, or one damaged) is replaced.
	if _, err := os.Lstat(root); err == nil {
		if err := os.RemoveAll(root); err != nil {
			return fmt.Errorf("remove the stale %s: %w", root, err)
		}
	}
	return os.Rename(tmp, root)
}

// entryName returns the path of a tarball entry under package/, checked
// to be a plain relative path, or an error wrapping ErrUnsafe.
func entryName(name string) (string, error) {
	rel, ok := strings.CutPrefix(name, "package/")
	if !ok || rel == "" || strings.Contains(rel, "\\") {
		return "", fmt.Errorf("%w: entry %q is not under package/", ErrUnsafe, name)
	}
	rel = strings.TrimSuffix(rel, "/")
	if !fs.ValidPath(rel) { // no "..", ".", empty elements or leading /
		return "", fmt.Errorf("%w: entry %q is not a plain relative path", ErrUnsafe, name)
	}
	return rel, nil
}

// untar writes tgz's regular files and directories under dst.
func untar(tgz, dst string) error {
	fh, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		return fmt.Errorf("not a gzip file: %w", err)
	}
	tr := tar.NewReader(zr)
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the tarball: %w", err)
		}
		rel, err := entryName(h.Name)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(rel))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			total += h.Size
			if total > maxUnpacked {
				return fmt.Errorf("%w: unpacks to more than %d MB", ErrUnsafe, maxUnpacked>>20)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if h.Mode&0o111 != 0 {
				mode = 0o755
			}
			// O_EXCL: a second entry of the same name is refused, not
			// written through whatever the first made.
			out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, io.LimitReader(tr, h.Size))
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			if err := os.Chmod(target, mode); err != nil { // past the umask
				return err
			}
		default:
			return fmt.Errorf("%w: entry %q is a %s, not a file or directory", ErrUnsafe, h.Name, typeName(h.Typeflag))
		}
	}
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "FIFO"
	}
	return fmt.Sprintf("entry of type %q", t)
}

var linkPathRE = regexp.MustCompile(`^native/[A-Za-z0-9._+-]+(/[A-Za-z0-9._+-]+)*$`)

// makeLinks creates the links native/pg-symlinks.json lists, as the
// package's own postinstall script does: each target a relative link to
// its source, both plain paths inside native/, the source a file of the
// package and the target new.
func makeLinks(root string) error {
	b, err := os.ReadFile(filepath.Join(root, "native", "pg-symlinks.json"))
	if err != nil {
		return fmt.Errorf("the package has no native/pg-symlinks.json: %w", err)
	}
	var links []struct{ Source, Target string }
	if err := json.Unmarshal(b, &links); err != nil {
		return fmt.Errorf("native/pg-symlinks.json: %w", err)
	}
	for _, l := range links {
		for _, p := range []string{l.Source, l.Target} {
			if !linkPathRE.MatchString(p) || !fs.ValidPath(p) {
				return fmt.Errorf("%w: native/pg-symlinks.json: link path %q is not a plain path inside native/", ErrUnsafe, p)
			}
		}
		src := filepath.Join(root, filepath.FromSlash(l.Source))
		dst := filepath.Join(root, filepath.FromSlash(l.Target))
		if fi, err := os.Lstat(src); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("%w: native/pg-symlinks.json: link source %s is not a file of the package", ErrUnsafe, l.Source)
		}
		if _, err := os.Lstat(dst); err == nil {
			return fmt.Errorf("%w: native/pg-symlinks.json: link target %s already exists", ErrUnsafe, l.Target)
		}
		rel, err := filepath.Rel(filepath.Dir(dst), src)
		if err != nil {
			return err
		}
		if err := os.Symlink(rel, dst); err != nil {
			return err
		}
	}
	return nil
}

var versionOutRE = regexp.MustCompile(`\(PostgreSQL\) ([0-9]+)\.`)

// checkServer runs bin/postgres --version and checks its major.
func checkServer(ctx context.Context, bin string, major int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "postgres"), "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("the unpacked %s does not run on this machine: %w: %s", path.Join("native", "bin", "postgres"), err, bytes.TrimSpace(out))
	}
	m := versionOutRE.FindSubmatch(out)
	if m == nil || string(m[1]) != fmt.Sprint(major) {
		return fmt.Errorf("the unpacked postgres says %q, not PostgreSQL %d", bytes.TrimSpace(out), major)
	}
	return nil
}
