package migrations_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	snowflake "github.com/sfgen/sfgen"

	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
	"github.com/sfgen/sfgen/migrations"
)

var update = flag.Bool("update", false, "write the migrations and sql/snowflake.sql the generator renders now (never a released file)")

// pinned holds the SHA-256 of every released migration. A released file
// never changes: databases have applied it, and goose never applies it
// again. Add a release's file here when it ships.
var pinned = map[string]string{
	"00001_sfgen_snowflake.sql": "623f5d9e0036b15a8c3495864623aca7b1b3881e70b5f06538ab3713fe1088d8", // release 1, commit 76049d7
	"00002_sfgen_release_2.sql": "3c941e023923e0a0351435306e5f0a07582baa1a30f8203b9b2350ef058e005f", // release 2
	"00003_sfgen_release_3.sql": "aea246b3434d5cbd482cbb01c8bc6ab776bb9d6b29a5b7912966e798d48f02fb", // release 3: no node nobody chose, node leases
	"00004_sfgen_release_4.sql": "7a0974236ff1433a660a1f5126ec9e659a3cf39357adde0de2526f2200ad1ed5", // release 4: trusted schemas, one node registry, private lease state
	"00005_sfgen_release_5.sql": "1530cf91dd930f49152c94369ccffec1b62cb95cdd16de1775a53f8455f931c1", // release 5: no node nobody chose on the goose route, the catch-up reaches the clock in narrow layouts
	"00006_sfgen_release_6.sql": "8b07c8b6f0d0c4152118da851debe07e572f4b275a68477097c30523d6f5b2e8", // release 6: exact first_id and last_id at any time, a fast path with four calls fewer
	"00007_sfgen_release_7.sql": "d7e053dd4c7f69930ffaea31ee80633b2728f3e7a9e628a5600b6e92328aa298", // release 7: the catch-up takes turns (no subtransaction), node-local generators on Citus
}

// TestReleasedFilesNeverChange fails when a released migration's bytes
// differ from what was released, or a released file is missing.
func TestReleasedFilesNeverChange(t *testing.T) {
	for name, want := range pinned {
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

// TestCommittedFilesAreCurrent fails when the committed files differ from
// what renders them: releases 1 to released.Last from their frozen
// templates (so those render what shipped, for the tests that install
// them), a later release's file from the current tree (sqlgen.Upgrade),
// and the plain script from the current tree; or when a file is not in
// sfgen's release line.
func TestCommittedFilesAreCurrent(t *testing.T) {
	o := sqlgen.Options{Layout: snowflake.Twitter()}
	frozen, err := released.Migrations(o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, f := range frozen {
		want[f.Name] = f.SQL
	}
	// The plain script leaves the node to each database (UnsetNode), as
	// `sfgen sql` without node flags does.
	script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true})
	if err != nil {
		t.Fatal(err)
	}
	committed, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range committed {
		if _, ok := want[name]; !ok {
			t.Errorf("migrations/%s is not in sfgen's release line (releases 1 to %d)", name, sqlgen.Latest)
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
				t.Errorf("the frozen templates render %s differently from its released bytes: package released must render every release as it shipped", path)
				return
			}
			t.Errorf("%s is not what the generator renders now; run: go test ./migrations ./internal/sqlgen -update, and review the diff", path)
		}
	}
	for name, sql := range want {
		_, frozen := pinned[name]
		check(name, func() ([]byte, error) { return migrations.FS.ReadFile(name) }, sql, frozen)
	}
	path := filepath.Join("..", "sql", "snowflake.sql")
	check(path, func() ([]byte, error) { return os.ReadFile(path) }, script, false)
}

// TestLatestUpIsTheLastReleased: while the latest release is the last one
// frozen, the current tree's Up is that release's, byte for byte: the
// tree renders what shipped.
func TestLatestUpIsTheLastReleased(t *testing.T) {
	if sqlgen.Latest != released.Last {
		t.Skipf("release %d is not frozen yet (package released ends at %d); this check runs again once it ships", sqlgen.Latest, released.Last)
	}
	for _, o := range []sqlgen.Options{
		{Layout: snowflake.Twitter()},
		{Layout: snowflake.Discord(), Schema: "ids"},
	} {
		current, err := sqlgen.Upgrade(o)
		if err != nil {
			t.Fatal(err)
		}
		shipped, err := released.Upgrade(o, released.Last)
		if err != nil {
			t.Fatal(err)
		}
		if c, s := (sqlgen.File{SQL: current}).Up(), (sqlgen.File{SQL: shipped}).Up(); c != s {
			t.Errorf("%+v: the current tree's Up differs from release %d's as it shipped", o, released.Last)
		}
		for _, unset := range []bool{false, true} {
			o := o
			o.UnsetNode = unset
			if !unset {
				o.Datacenter, o.Machine = 3, 7
			}
			current, err := sqlgen.Script(o)
			if err != nil {
				t.Fatal(err)
			}
			shipped, err := released.Script(o, released.Last)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(current, shipped) {
				t.Errorf("%+v: the current tree's plain script differs from release %d's as it shipped", o, released.Last)
			}
		}
	}
}
