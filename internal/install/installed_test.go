package install

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/snowflake"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestInstalledLayout: InstalledRelease reads the layout snowflake_layout()
// names, in release 1 (which has it, without snowflake_release()), in
// release 2 and in the latest, for a preset and a custom layout, with and
// without a node; it is the zero Layout where
// sfgen is not installed, and an error naming the text where
// snowflake_layout() returns no layout this sfgen reads.
func TestInstalledLayout(t *testing.T) {
	custom, err := snowflake.ParseLayout("epoch=1600000000000 timestamp=41 datacenter=4 machine=6 sequence=12")
	if err != nil {
		t.Fatal(err)
	}
	db, base := database(t)
	ctx := context.Background()
	query := func(ctx context.Context, q string, args ...any) interface{ Scan(...any) error } {
		return db.QueryRowContext(ctx, q, args...)
	}
	for _, tc := range []struct {
		name    string
		install func(schema string) error
		release int
		layout  snowflake.Layout
		err     string
	}{
		{"none", func(string) error { return nil }, 0, snowflake.Layout{}, ""},
		{"release 1, discord", func(schema string) error {
			script, err := sqlgen.ScriptAt(sqlgen.Options{Schema: schema, Layout: snowflake.Discord}, 1)
			if err != nil {
				return err
			}
			_, err = db.Exec(string(script))
			return err
		}, 1, snowflake.Discord, ""},
		{"release 2, custom", func(schema string) error {
			script, err := sqlgen.ScriptAt(sqlgen.Options{Schema: schema, Layout: custom}, 2)
			if err != nil {
				return err
			}
			_, err = db.Exec(string(script))
			return err
		}, 2, custom, ""},
		{"latest, custom", func(schema string) error {
			_, err := Apply(ctx, db, sqlgen.Options{Schema: schema, Layout: custom})
			return err
		}, sqlgen.Latest, custom, ""},
		{"latest, twitter", func(schema string) error {
			_, err := Apply(ctx, db, sqlgen.Options{Schema: schema, Layout: snowflake.Twitter})
			return err
		}, sqlgen.Latest, snowflake.Twitter, ""},
		{"latest, no node", func(schema string) error {
			_, err := Apply(ctx, db, sqlgen.Options{Schema: schema, UnsetNode: true})
			return err
		}, sqlgen.Latest, snowflake.Twitter, ""},
		{"unreadable layout", func(schema string) error {
			_, err := db.Exec("CREATE SCHEMA " + schema + "; CREATE FUNCTION " + schema + ".snowflake_layout() RETURNS text LANGUAGE sql AS $$SELECT 'epoch=1 timestamp=41'$$")
			return err
		}, 0, snowflake.Layout{}, `snowflake_layout() returns "epoch=1 timestamp=41", not a layout this sfgen reads: invalid layout "epoch=1 timestamp=41": datacenter: missing`},
	} {
		schema := base + "_" + strings.NewReplacer(" ", "_", ",", "").Replace(tc.name)
		t.Cleanup(func() { db.Exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE") })
		if err := tc.install(schema); err != nil {
			t.Fatalf("%s: install: %v", tc.name, err)
		}
		in, err := InstalledRelease(ctx, query, schema)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, snowflake.ErrInvalidLayout) {
				t.Errorf("%s: InstalledRelease = %+v, %v; want an error with %q", tc.name, in, err, tc.err)
			}
			continue
		}
		if err != nil || in.Release != tc.release || in.Layout != tc.layout {
			t.Errorf("%s: InstalledRelease = release %d, layout %v, %v; want release %d, layout %v", tc.name, in.Release, in.Layout, err, tc.release, tc.layout)
		}
	}
}

// TestInstalledStale: InstalledRelease lists the functions an older
// release's plain script put back over a later release (their comments
// lack the later release's marker), and Effective counts such a mix as
// release 1, as the preflight does; an install as it was made lists none.
func TestInstalledStale(t *testing.T) {
	db, base := database(t)
	ctx := context.Background()
	query := func(ctx context.Context, q string, args ...any) interface{ Scan(...any) error } {
		return db.QueryRowContext(ctx, q, args...)
	}
	run := func(schema string, r int) {
		t.Helper()
		script, err := sqlgen.ScriptAt(sqlgen.Options{Schema: schema}, r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(script)); err != nil {
			t.Fatalf("release %d's script on schema %s: %v", r, schema, err)
		}
	}
	for r := 2; r <= sqlgen.Latest; r++ {
		schema := fmt.Sprintf("%s_%d", base, r)
		t.Cleanup(func() { db.Exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE") })
		run(schema, r)
		in, err := InstalledRelease(ctx, query, schema)
		if err != nil || in.Release != r || len(in.Stale) != 0 || in.Effective() != r {
			t.Errorf("release %d: InstalledRelease = %+v (effective %d), %v; want release %d, nothing stale", r, in, in.Effective(), err, r)
		}
		// Release 1's script checks nothing and replaces what it defines.
		run(schema, 1)
		in, err = InstalledRelease(ctx, query, schema)
		if err != nil || in.Release != r || len(in.Stale) == 0 || in.Effective() != 1 {
			t.Errorf("release 1's script over release %d: InstalledRelease = %+v (effective %d), %v; want release %d, stale, effective 1", r, in, in.Effective(), err, r)
		}
		for _, f := range in.Stale {
			name, _, _ := strings.Cut(strings.TrimPrefix(f, schema+"."), "(")
			if strings.HasPrefix(name, "snowflake_lease_") {
				t.Errorf("release 1's script over release %d: %s listed stale; release 1 has no such function", r, f)
			}
		}
		for _, f := range []string{"snowflake_next_id()", "snowflake_compose(bigint,integer,integer,integer)"} {
			if !slices.Contains(in.Stale, schema+"."+f) {
				t.Errorf("release 1's script over release %d: stale %v lacks %s", r, in.Stale, f)
			}
		}
		// The latest release's script puts the release back whole.
		run(schema, sqlgen.Latest)
		in, err = InstalledRelease(ctx, query, schema)
		if err != nil || in.Release != sqlgen.Latest || len(in.Stale) != 0 {
			t.Errorf("the latest script after release 1's over release %d: InstalledRelease = %+v, %v; want release %d, nothing stale", r, in, err, sqlgen.Latest)
		}
	}
}
