package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sfgen/sfgen/internal/pgfetch"
)

// ErrNoServer is wrapped by the error [Start] returns when it finds no
// directory holding the PostgreSQL server binaries (initdb and postgres).
var ErrNoServer = errors.New("no PostgreSQL server binaries found")

// BinEnv names the environment variable that, when set, is the only
// directory Start looks in for initdb and postgres.
const BinEnv = "SFGEN_PG_BIN"

// SettingsEnv names the environment variable that, when set, holds server
// settings, "name=value" separated by spaces, that every cluster Start
// starts gets after the package's own (and before a WithSetting's): CI
// runs the suite on servers configured as users run them this way
// (max_connections=500, say).
const SettingsEnv = "SFGEN_PG_SETTINGS"

// envSettings returns $SFGEN_PG_SETTINGS' settings, each checked to be a
// name=value with a setting's name.
func envSettings() ([]string, error) {
	var out []string
	for _, f := range strings.Fields(os.Getenv(SettingsEnv)) {
		name, _, ok := strings.Cut(f, "=")
		if !ok || name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_.") != "" {
			return nil, fmt.Errorf("$%s: %q is not name=value with a server setting's name", SettingsEnv, f)
		}
		out = append(out, f)
	}
	return out, nil
}

// debianRoot is where Debian installs each major version's binaries, as
// debianRoot/<major>/bin.
var debianRoot = "/usr/lib/postgresql"

// FindBinDir returns the directory holding initdb and postgres, searched
// for as described in the package documentation; override, if not empty,
// is the only place looked in. Its error wraps [ErrNoServer].
func FindBinDir(override string) (string, error) {
	if override != "" {
		if hasServer(override) {
			return override, nil
		}
		return "", noServer([]string{override})
	}
	if dir := os.Getenv(BinEnv); dir != "" {
		if hasServer(dir) {
			return dir, nil
		}
		return "", noServer([]string{"$" + BinEnv + "=" + dir})
	}

	var looked []string
	if pgConfig, err := exec.LookPath("pg_config"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := exec.CommandContext(ctx, pgConfig, "--bindir").Output()
		cancel()
		if err == nil {
			dir := strings.TrimSpace(string(out))
			if hasServer(dir) {
				return dir, nil
			}
			looked = append(looked, dir+" (from pg_config --bindir)")
		}
	}

	if dir := highestDebianBin(); dir != "" {
		return dir, nil
	}
	looked = append(looked, debianRoot+"/*/bin")

	if initdb, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
			initdb = real
		}
		dir := filepath.Dir(initdb)
		if hasServer(dir) {
			return dir, nil
		}
		looked = append(looked, dir+" (initdb on PATH)")
	} else {
		looked = append(looked, "PATH")
	}

	if dir, where := fetched(); dir != "" {
		return dir, nil
	} else if where != "" {
		looked = append(looked, where)
	}
	return "", noServer(looked)
}

// fetched returns the bin directory of the server package pgfetch fetched
// into its cache earlier, when it is there, and otherwise "" and where it
// would be ("" when this platform has none pinned).
func fetched() (dir, where string) {
	pin, err := pgfetch.Default()
	if err != nil {
		return "", ""
	}
	f := &pgfetch.Fetcher{}
	if dir := f.Cached(pin); dir != "" {
		return dir, ""
	}
	target, err := f.Target(pin)
	if err != nil {
		return "", ""
	}
	return "", target + " (PostgreSQL fetched by sfgen)"
}

func noServer(looked []string) error {
	return fmt.Errorf("%w (looked in %s): install Debian's postgresql package, set %s to the directory holding initdb and postgres, or set DATABASE_URL",
		ErrNoServer, strings.Join(looked, ", "), BinEnv)
}

// highestDebianBin returns the bin directory of the highest major version
// under debianRoot that has the server binaries, or "".
func highestDebianBin() string {
	entries, err := os.ReadDir(debianRoot)
	if err != nil {
		return ""
	}
	type version struct {
		major float64
		dir   string
	}
	var versions []version
	for _, e := range entries {
		major, err := strconv.ParseFloat(e.Name(), 64) // "15", or "9.6" of old
		if err != nil {
			continue
		}
		dir := filepath.Join(debianRoot, e.Name(), "bin")
		if hasServer(dir) {
			versions = append(versions, version{major, dir})
		}
	}
	if len(versions) == 0 {
		return ""
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i].major > versions[j].major })
	return versions[0].dir
}

// hasServer reports whether dir holds executable initdb and postgres.
func hasServer(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// NoDevelopmentFiles says why no extension can be built for the server
// binaries $SFGEN_PG_BIN names, or those [FindBinDir] finds in pgfetch's
// cache, or returns "" for any other or when the directory has pg_config
// beside them. Server binaries without pg_config
// (.ci/postgres-majors' packages of other majors) come without headers
// either: a library built with another major's pg_config would not load
// into them, so the tests that build one skip with this reason.
func NoDevelopmentFiles() string {
	dir := os.Getenv(BinEnv)
	where := "$" + BinEnv + "=" + dir
	if dir == "" {
		// The same packages, fetched by sfgen where there was no server.
		d, err := FindBinDir("")
		if fd, _ := fetched(); err != nil || d != fd {
			return ""
		}
		dir, where = d, d+" (fetched by sfgen)"
	}
	if fi, err := os.Stat(filepath.Join(dir, "pg_config")); err == nil && !fi.IsDir() {
		return ""
	}
	return fmt.Sprintf("the server binaries in %s have no pg_config and no headers, so no extension can be built against them (the native generator is tested on a server with its development files, Debian's)", where)
}
