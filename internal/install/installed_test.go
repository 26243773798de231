package install

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/snowflake"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestInstalledLayout: InstalledRelease reads the layout snowflake_layout()
// names, in release 1 (which has it, without snowflake_release()) and in
// release 2, for a preset and a custom layout; it is the zero Layout where
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
			_, err := Apply(ctx, db, sqlgen.Options{Schema: schema, Layout: custom})
			return err
		}, 2, custom, ""},
		{"release 2, twitter", func(schema string) error {
			_, err := Apply(ctx, db, sqlgen.Options{Schema: schema, Layout: snowflake.Twitter})
			return err
		}, 2, snowflake.Twitter, ""},
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
