package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// execAll runs each statement on db, failing t on the first error.
func execAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestMessagesSayWhatToDo: issue 43, item 7. Each error says what is
// wrong and what to do, in one line with the exit status of its kind:
// a command pointed at a schema without sfgen names the schema that has
// it; audit refused SELECT says so alone (no "failed to connect ...
// context canceled" from the chunks it stopped); install refused USAGE on
// the schema names the schema's owner (not "native: ..." when nothing
// native was asked); another database's URL names its scheme; a schema
// name's character outside ASCII is named whole.
func TestMessagesSayWhatToDo(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	dsn := pgtest.DSN(t)
	db := testDB(t, dsn)
	if code, _, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "ids", "--datacenter", "1", "--machine", "1"); code != exitOK {
		t.Fatalf("install: exit %d: %s", code, errOut)
	}
	var owner string
	if err := db.QueryRow("SELECT current_user").Scan(&owner); err != nil {
		t.Fatal(err)
	}
	// A table large enough that audit reads it in chunks on several
	// connections at once (8 MB and more), which the role may not read;
	// and a schema the role may not use.
	execAll(t, db,
		"CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), item text)",
		"INSERT INTO orders (id, item) SELECT g, 'item ' || g FROM pg_catalog.generate_series(1, 250000) g",
		"CREATE SCHEMA locked")
	role, roleDSN := pgtest.LoginRole(t, dsn, "newcomer", "")

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // the one line on stderr
	}{
		{"verify, sfgen in another schema", []string{"verify", "--dsn", dsn, "--count", "10"}, exitFail,
			"sfgen verify: sfgen is not installed in schema public; it is in schema ids: give --schema ids"},
		{"node, sfgen in another schema", []string{"node", "--dsn", dsn}, exitFail,
			"sfgen node: sfgen's snowflake_next_id() is not installed in schema public; it is in schema ids: give --schema ids"},
		{"next, sfgen in another schema", []string{"next", "--dsn", dsn}, exitFail,
			"sfgen next: take a node lease: sfgen is not installed in schema public; it is in schema ids: give --schema ids"},
		{"audit without SELECT", []string{"audit", "--dsn", roleDSN, "--table", "orders", "--workers", "4"}, exitFail,
			"sfgen audit: audit public.orders: ERROR: permission denied for table orders (SQLSTATE 42501); audit reads every row: the role needs SELECT on public.orders"},
		{"install without USAGE", []string{"install", "--dsn", roleDSN, "--schema", "locked"}, exitFail,
			"sfgen install: schema locked is owned by role " + owner + ", and role " + role + " may not use it (no USAGE privilege on it): install as " + owner + ", or into a schema of your own"},
		{"install into another role's sfgen", []string{"install", "--dsn", roleDSN, "--schema", "ids"}, exitFail,
			"sfgen install: schema ids is owned by role " + owner + ", and role " + role + " may not use it (no USAGE privilege on it): install as " + owner + ", or into a schema of your own"},
		{"a MySQL URL", []string{"install", "--dsn", "mysql://app:Hunter2@db.example/app"}, exitUsage,
			"sfgen install: cannot parse the connection string (URL form): the scheme mysql:// is not PostgreSQL's: want postgres:// or postgresql://, or keyword=value pairs"},
		{"a MySQL URL from DATABASE_URL", []string{"audit", "--table", "orders"}, exitUsage,
			"sfgen audit: cannot parse the connection string (URL form): the scheme mysql:// is not PostgreSQL's: want postgres:// or postgresql://, or keyword=value pairs"},
		{"a schema name outside ASCII", []string{"install", "--dsn", dsn, "--schema", "ïds"}, exitUsage,
			`sfgen install: schema "ïds" has 'ï' at byte 0; want 1 to 63 lower-case letters, digits and underscores, not starting with a digit or pg_, and not a reserved keyword`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", "")
			if tc.name == "a MySQL URL from DATABASE_URL" {
				t.Setenv("DATABASE_URL", "mysql://app:Hunter2@db.example/app")
			}
			code, out, errOut := sfgen(t, tc.args...)
			if code != tc.code || out != "" || errOut != tc.want+"\n" {
				t.Errorf("sfgen %s = exit %d, stdout %q, stderr\n%s\nwant exit %d and\n%s", strings.Join(tc.args, " "), code, out, errOut, tc.code, tc.want)
			}
		})
	}
}
