package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/migrationdir"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// TestMigrationNativeFormats is TestMigrationNative with golang-migrate,
// dbmate and tern, each the real tool: 'sfgen migration --format F
// --native' writes the install and the native switch in F's layout; up
// makes snowflake_next_id() the C function of the library 'sfgen
// build-native' built; down puts the SQL generator back, node and state
// kept, and drops the C functions; up switches again; --native=false
// writes the switch back, which up and down apply. Then a switch to a
// library the server cannot load: up fails with SF301, leaving the SQL
// generator, no C function, and the tool's version table at the install
// (golang-migrate: the switch's version, dirty, its word for "failed
// here").
func TestMigrationNativeFormats(t *testing.T) {
	nativeHere(t)
	libDir := serverReadableDir(t)
	code, out, errOut := sfgen(t, "build-native", "--native-dir", libDir)
	if code != 0 || !strings.HasPrefix(out, libDir+"/sfgen-") {
		t.Fatalf("build-native = %d, %q, %q", code, out, errOut)
	}
	lib := strings.TrimSpace(out)
	missing := serverReadableDir(t) // nothing built in it
	ctx := context.Background()
	for _, tool := range migrationTools() {
		if tool.format == migrationdir.Goose {
			continue // TestMigrationNative
		}
		t.Run(string(tool.format), func(t *testing.T) {
			dsn := pgtest.DSN(t)
			db := testDB(t, dsn)
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			dir := t.TempDir()
			code, out, errOut := sfgen(t, "migration", "--dir", dir, "--format", string(tool.format), "--sequential", "--native", "--native-dir", libDir)
			names := writtenFiles(t, out)
			if code != 0 || len(names) < 2 || !strings.Contains(names[len(names)-1], "_sfgen_native.") {
				t.Fatalf("migration --format %s --native = %d, %q, %q; want the install and the native switch", tool.format, code, out, errOut)
			}
			found, err := migrationdir.Find(dir)
			if err != nil || len(found) != 2 || found[1].Generator != "native" || found[1].Library != lib || found[1].Format != tool.format {
				t.Fatalf("Find = %+v, %v; want the native switch naming %s, in %s's format", found, err, lib, tool.format)
			}
			if err := tool.up(t, dir, dsn); err != nil {
				t.Fatalf("up: %v", err)
			}
			if lang := generatorLanguage(t, db); lang != "c" {
				t.Fatalf("after up, snowflake_next_id() is %s, want the C one", lang)
			}
			var probin string
			if err := db.QueryRow(`SELECT probin FROM pg_proc WHERE oid = 'public.snowflake_next_id_c(integer)'::regprocedure`).Scan(&probin); err != nil || probin != lib {
				t.Fatalf("snowflake_next_id_c(integer)'s library: %q, %v; want %s", probin, err, lib)
			}
			switched := tool.recorded(t, conn)
			if code, out, errOut := sfgen(t, "node", "--dsn", dsn, "--datacenter", "5", "--machine", "6"); code != 0 {
				t.Fatalf("node = %d, %q, %q", code, out, errOut)
			}
			var id int64
			if err := db.QueryRow(`SELECT public.snowflake_next_id()`).Scan(&id); err != nil {
				t.Fatal(err)
			}
			if parts, err := snowflake.Decompose(snowflake.ID(id)); err != nil || parts.Datacenter != 5 || parts.Machine != 6 {
				t.Fatalf("native ID %d = %+v, %v; want node 5/6", id, parts, err)
			}

			if err := tool.down(t, dir, dsn); err != nil {
				t.Fatalf("down: %v", err)
			}
			if lang := generatorLanguage(t, db); lang != "sql" {
				t.Fatalf("after down of the native switch, snowflake_next_id() is %s, want the SQL one", lang)
			}
			var left int
			if err := db.QueryRow(`SELECT count(*) FROM pg_proc WHERE proname = 'snowflake_next_id_c'`).Scan(&left); err != nil || left != 0 {
				t.Fatalf("after down, %d snowflake_next_id_c() functions (%v); want none", left, err)
			}
			var next int64
			if err := db.QueryRow(`SELECT public.snowflake_next_id()`).Scan(&next); err != nil || next <= id {
				t.Fatalf("the SQL generator after down: %d, %v; want an ID above %d", next, err, id)
			}
			if parts, _ := snowflake.Decompose(snowflake.ID(next)); parts.Datacenter != 5 || parts.Machine != 6 {
				t.Fatalf("SQL ID after down %d = %+v; want node 5/6", next, parts)
			}
			if err := tool.up(t, dir, dsn); err != nil || generatorLanguage(t, db) != "c" || tool.recorded(t, conn) != switched {
				t.Fatalf("up again: %v, %s, recorded %q; want the C generator, %q", err, generatorLanguage(t, db), tool.recorded(t, conn), switched)
			}

			if code, out, errOut := sfgen(t, "migration", "--dir", dir, "--sequential", "--native", "--native-dir", libDir); code != 0 || out != "" || !strings.Contains(errOut, "up to date") {
				t.Errorf("migration --native again = %d, %q, %q; want nothing written", code, out, errOut)
			}
			code, out, errOut = sfgen(t, "migration", "--dir", dir, "--sequential", "--native=false")
			if names := writtenFiles(t, out); code != 0 || len(names) == 0 || !strings.Contains(names[0], "_sfgen_sql_generator.") {
				t.Fatalf("migration --native=false = %d, %q, %q", code, out, errOut)
			}
			if err := tool.up(t, dir, dsn); err != nil || generatorLanguage(t, db) != "sql" {
				t.Fatalf("up of the switch back: %v, %s; want the SQL generator", err, generatorLanguage(t, db))
			}
			if err := tool.down(t, dir, dsn); err != nil || generatorLanguage(t, db) != "c" {
				t.Fatalf("down of the switch back: %v, %s; want the C generator", err, generatorLanguage(t, db))
			}
		})
		t.Run(string(tool.format)+"/not here", func(t *testing.T) {
			dsn := pgtest.DSN(t)
			db := testDB(t, dsn)
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			dir := t.TempDir()
			if code, _, errOut := sfgen(t, "migration", "--dir", dir, "--format", string(tool.format), "--sequential"); code != 0 {
				t.Fatalf("migration: %d %s", code, errOut)
			}
			if err := tool.up(t, dir, dsn); err != nil {
				t.Fatalf("up of the install: %v", err)
			}
			installed := tool.recorded(t, conn)
			code, out, errOut := sfgen(t, "migration", "--dir", dir, "--sequential", "--native", "--native-dir", missing)
			if names := writtenFiles(t, out); code != 0 || len(names) == 0 || !strings.Contains(names[0], "_sfgen_native.") {
				t.Fatalf("migration --native = %d, %q, %q", code, out, errOut)
			}
			err = tool.up(t, dir, dsn)
			if err == nil || !strings.Contains(err.Error(), "cannot load "+missing+"/sfgen-") || !strings.Contains(err.Error(), "sfgen build-native --native-dir "+missing) {
				t.Fatalf("up of a switch to a library not built here = %v; want SF301's message naming the library and the build", err)
			}
			if lang := generatorLanguage(t, db); lang != "sql" {
				t.Errorf("after the failed switch, snowflake_next_id() is %s, want the SQL one", lang)
			}
			var left int
			if err := db.QueryRow(`SELECT count(*) FROM pg_proc WHERE proname = 'snowflake_next_id_c'`).Scan(&left); err != nil || left != 0 {
				t.Errorf("after the failed switch, %d snowflake_next_id_c() functions (%v); want none", left, err)
			}
			want := installed
			if tool.format == migrationdir.GolangMigrate {
				want = "2 dirty"
			}
			if got := tool.recorded(t, conn); got != want {
				t.Errorf("after the failed switch the tool records %q; want %q", got, want)
			}
		})
	}
}
