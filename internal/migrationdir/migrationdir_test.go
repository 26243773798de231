package migrationdir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 30, 19, 30, 5, 0, time.FixedZone("x", 3600))

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing []string
		v        Versioning
		want     string
	}{
		{"timestamp in utc", nil, Timestamp, "20261130183005_sfgen_snowflake.sql"},
		{"sequential in empty dir", nil, Sequential, "00001_sfgen_snowflake.sql"},
		{"sequential after others", []string{"00001_init.sql", "00007_users.go", "readme.md", "00100_notes.txt"}, Sequential, "00008_sfgen_snowflake.sql"},
		{"sequential after timestamps", []string{"20240101000000_init.sql"}, Sequential, "20240101000001_sfgen_snowflake.sql"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.existing {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			path, err := Write(dir, []byte("-- sql\n"), tc.v, now)
			if err != nil {
				t.Fatal(err)
			}
			if path != filepath.Join(dir, tc.want) {
				t.Errorf("path = %s, want %s", path, tc.want)
			}
			b, err := os.ReadFile(path)
			if err != nil || string(b) != "-- sql\n" {
				t.Errorf("content = %q, %v", b, err)
			}
			st, _ := os.Stat(path)
			if st.Mode().Perm() != 0o644 {
				t.Errorf("mode = %v, want 0644", st.Mode().Perm())
			}
			assertNoTemp(t, dir)
		})
	}
}

func TestWriteRefuses(t *testing.T) {
	t.Run("second sfgen migration", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := Write(dir, []byte("a"), Sequential, now); err != nil {
			t.Fatal(err)
		}
		if _, err := Write(dir, []byte("b"), Sequential, now); !errors.Is(err, ErrExists) {
			t.Fatalf("second Write error = %v, want ErrExists", err)
		}
		assertNoTemp(t, dir)
	})
	t.Run("version taken", func(t *testing.T) {
		dir := t.TempDir()
		taken := filepath.Join(dir, "20261130183005_users.sql")
		os.WriteFile(taken, []byte("keep"), 0o644)
		if _, err := Write(dir, []byte("new"), Timestamp, now); !errors.Is(err, ErrExists) {
			t.Fatalf("Write error = %v, want ErrExists", err)
		}
		if b, _ := os.ReadFile(taken); string(b) != "keep" {
			t.Errorf("existing migration changed to %q", b)
		}
	})
	t.Run("never overwrites", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "00001"+Suffix)
		os.WriteFile(path, []byte("keep"), 0o644)
		if err := writeNew(path, []byte("new")); !errors.Is(err, ErrExists) {
			t.Fatalf("writeNew error = %v, want ErrExists", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "keep" {
			t.Errorf("file overwritten: %q", b)
		}
		assertNoTemp(t, dir)
	})
	t.Run("missing dir", func(t *testing.T) {
		if _, err := Write(filepath.Join(t.TempDir(), "nope"), nil, Timestamp, now); !errors.Is(err, ErrNotDir) {
			t.Fatalf("error = %v, want ErrNotDir", err)
		}
	})
	t.Run("file not dir", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "f")
		os.WriteFile(f, nil, 0o644)
		if _, err := Write(f, nil, Timestamp, now); !errors.Is(err, ErrNotDir) {
			t.Fatalf("error = %v, want ErrNotDir", err)
		}
	})
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, ".sfgen-*"))
	if len(m) > 0 {
		t.Errorf("temporary files left behind: %v", m)
	}
}
