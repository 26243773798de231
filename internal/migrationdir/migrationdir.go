// Package migrationdir writes sfgen's migration into an application's goose
// migrations directory: under the next version goose expects, whole or not
// at all, and never over an existing file.
package migrationdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Suffix ends the name of every migration file sfgen writes.
const Suffix = "_sfgen_snowflake.sql"

// ErrExists is returned by Write when the directory already holds an sfgen
// migration or a migration with the version Write would use.
var ErrExists = errors.New("migration already exists")

// ErrNotDir is returned by Write when the directory is missing or is not a
// directory.
var ErrNotDir = errors.New("not a directory")

// Versioning chooses how Write numbers the new migration.
type Versioning int

const (
	// Timestamp versions are the UTC time as YYYYMMDDhhmmss, as `goose
	// create` writes by default.
	Timestamp Versioning = iota
	// Sequential versions are one more than the highest version in the
	// directory, written with at least five digits, as `goose create -s`.
	Sequential
)

// goose reads a migration's version from the digits before the first
// underscore of a .sql or .go file's name.
var migrationName = regexp.MustCompile(`^(\d+)_.+\.(sql|go)$`)

// Write writes content as a new migration in dir and returns its path. The
// file appears whole or not at all: it is written to a temporary file in
// dir, synced, and then linked into place, which fails rather than replace
// a file of the same name. now is the clock for Timestamp versions.
func Write(dir string, content []byte, v Versioning, now time.Time) (string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("migrations directory %s: %w", dir, ErrNotDir)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("migrations directory %s: %w", dir, ErrNotDir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("read migrations directory: %w", err)
	}
	var highest int64
	versions := map[int64]string{}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), Suffix) {
			return "", fmt.Errorf("%s already holds sfgen's migration %s: %w", dir, e.Name(), ErrExists)
		}
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			continue // more digits than goose can read; not ours to judge
		}
		versions[n] = e.Name()
		highest = max(highest, n)
	}

	var version string
	switch v {
	case Sequential:
		version = fmt.Sprintf("%05d", highest+1)
	default:
		version = now.UTC().Format("20060102150405")
	}
	n, _ := strconv.ParseInt(version, 10, 64)
	if other, ok := versions[n]; ok {
		return "", fmt.Errorf("version %s is taken by %s: %w", version, other, ErrExists)
	}
	path := filepath.Join(dir, version+Suffix)
	if err := writeNew(path, content); err != nil {
		return "", err
	}
	return path, nil
}

// writeNew creates path with content, whole or not at all, failing with
// ErrExists if path exists.
func writeNew(path string, content []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".sfgen-*.tmp")
	if err != nil {
		return fmt.Errorf("write migration: %w", err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	if _, err := tmp.Write(content); err != nil {
		return fmt.Errorf("write migration: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write migration: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write migration: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write migration: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", path, ErrExists)
		}
		return fmt.Errorf("write migration: %w", err)
	}
	return nil
}
