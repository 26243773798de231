package migrations_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	snowflake "github.com/sfgen/sfgen"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/migrations"
)

var update = flag.Bool("update", false, "write the migrations and sql/snowflake.sql the generator renders now (never a released file)")

// released holds the SHA-256 of every released migration. A released file
// never changes: databases have applied it, and goose never applies it
// again. Add a release's file here when it ships.
var released = map[string]string{
	"00001_sfgen_snowflake.sql": "623f5d9e0036b15a8c3495864623aca7b1b3881e70b5f06538ab3713fe1088d8", // release 1, commit 76049d7
	"00002_sfgen_release_2.sql": "3c941e023923e0a0351435306e5f0a07582baa1a30f8203b9b2350ef058e005f", // release 2
	"00003_sfgen_release_3.sql": "aea246b3434d5cbd482cbb01c8bc6ab776bb9d6b29a5b7912966e798d48f02fb", // release 3: no node nobody chose, node leases
	"00004_sfgen_release_4.sql": "7a0974236ff1433a660a1f5126ec9e659a3cf39357adde0de2526f2200ad1ed5", // release 4: trusted schemas, one node registry, private lease state
	"00005_sfgen_release_5.sql": "1530cf91dd930f49152c94369ccffec1b62cb95cdd16de1775a53f8455f931c1", // release 5: no node nobody chose on the goose route, the catch-up reaches the clock in narrow layouts
	"00006_sfgen_release_6.sql": "8b07c8b6f0d0c4152118da851debe07e572f4b275a68477097c30523d6f5b2e8", // release 6: exact first_id and last_id at any time, a fast path with four calls fewer
}

// TestReleasedFilesNeverChange fails when a released migration's bytes
// differ from what was released, or a released file is missing.
func TestReleasedFilesNeverChange(t *testing.T) {
	for name, want := range released {
		b, err := migrations.FS.ReadFile(name)
		if err != nil {
			t.Errorf("released migration %s is missing: %v", name, err)
			continue
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("released migration %s changed (sha256 %s, released as %s): released files never change; put the change in a new release", name, got, want)
		}
	}
}

// TestCommittedFilesAreCurrent fails when the committed release line or
// the plain script differ from what the generator renders now: a template
// changed without a new release, or the files were not regenerated.
func TestCommittedFilesAreCurrent(t *testing.T) {
	files, err := sqlgen.Migrations(sqlgen.Options{Layout: snowflake.Twitter()})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(files); n != sqlgen.Latest || files[n-1].Release != sqlgen.Latest {
		t.Fatalf("sqlgen.Migrations renders %d files; want one per release, 1 to %d", n, sqlgen.Latest)
	}
	// The plain script leaves the node to each database (UnsetNode), as
	// `sfgen sql` without node flags does.
	script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, f := range files {
		want[f.Name] = f.SQL
	}
	committed, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range committed {
		if _, ok := want[name]; !ok {
			t.Errorf("migrations/%s is not in sfgen's release line", name)
		}
	}
	check := func(path string, got func() ([]byte, error), want []byte, frozen bool) {
		t.Helper()
		if *update && !frozen {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		b, err := got()
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		if !bytes.Equal(b, want) {
			if frozen {
				t.Errorf("the templates render %s differently from its released bytes: a change to a released release's SQL; leave release %s as it shipped and put the change in release %d", path, path, sqlgen.Latest+1)
				return
			}
			t.Errorf("%s is not what the generator renders now; run: go test ./migrations ./internal/sqlgen -update, and review the diff", path)
		}
	}
	for _, f := range files {
		_, frozen := released[f.Name]
		check(f.Name, func() ([]byte, error) { return migrations.FS.ReadFile(f.Name) }, f.SQL, frozen)
	}
	path := filepath.Join("..", "sql", "snowflake.sql")
	check(path, func() ([]byte, error) { return os.ReadFile(path) }, script, false)
}
