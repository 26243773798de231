package migrations_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/migrations"
)

var update = flag.Bool("update", false, "rewrite the committed migration and sql/snowflake.sql from the generator")

// TestCommittedFilesAreCurrent fails when the committed migration or the
// plain script differ from what the generator renders now.
func TestCommittedFilesAreCurrent(t *testing.T) {
	migration, err := sqlgen.Migration(sqlgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	script, err := sqlgen.Script(sqlgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		read func() ([]byte, error)
		want []byte
	}{
		{migrations.Name, func() ([]byte, error) { return migrations.FS.ReadFile(migrations.Name) }, migration},
		{filepath.Join("..", "sql", "snowflake.sql"), func() ([]byte, error) { return os.ReadFile(filepath.Join("..", "sql", "snowflake.sql")) }, script},
	} {
		if *update {
			if err := os.WriteFile(f.path, f.want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := f.read()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.want) {
			t.Errorf("%s is not what the generator renders now; run: go test ./internal/sqlgen ./migrations -update", f.path)
		}
	}
}
