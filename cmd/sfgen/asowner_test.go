package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/pgident"
)

// TestVerifyRunsNoOtherRolesCode: role mallory installs sfgen into a
// schema of its own and replaces snowflake_timestamp() with a function
// that makes mallory a superuser when a superuser calls it (the control
// shows it does). sfgen verify, run by a superuser on that schema, calls
// it as mallory (SET ROLE, said on stderr), and mallory stays as it was;
// a role that cannot act as mallory is refused, naming both roles.
func TestVerifyRunsNoOtherRolesCode(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	mallory, malloryDSN := pgtest.LoginRole(t, dsn, "mallory", "")
	other, otherDSN := pgtest.LoginRole(t, dsn, "other", "")
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "GRANT CREATE ON DATABASE "+pgident.Quote(admin.Config().Database)+" TO "+mallory); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := sfgen(t, "install", "--dsn", malloryDSN, "--schema", "m", "--datacenter", "1", "--machine", "1"); code != exitOK {
		t.Fatalf("install as mallory: exit %d, %s", code, errOut)
	}
	m, err := pgx.Connect(ctx, malloryDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if _, err := m.Exec(ctx, `CREATE OR REPLACE FUNCTION m.snowflake_timestamp(id bigint) RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE `+mallory+` SUPERUSER';
    END IF;
    RETURN pg_catalog.to_timestamp(((id >> 22) + 1288834974657) / 1000.0);
END $$; GRANT USAGE ON SCHEMA m TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	isSuper := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) bool {
		var super bool
		if err := q.QueryRow(ctx, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", mallory).Scan(&super); err != nil {
			t.Fatal(err)
		}
		return super
	}
	// The control.
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT m.snowflake_timestamp(4194439168)"); err != nil {
		t.Fatal(err)
	}
	escalated := isSuper(tx)
	tx.Rollback(ctx)
	if !escalated {
		t.Fatal("the control: a superuser's call did not escalate, so this test cannot tell")
	}

	code, _, errOut := sfgen(t, "verify", "--dsn", dsn, "--schema", "m", "--count", "20")
	if isSuper(admin) {
		t.Errorf("sfgen verify as a superuser ran mallory's snowflake_timestamp(): mallory is a superuser now (exit %d, %s)", code, errOut)
	}
	if !strings.Contains(errOut, "SET ROLE") || !strings.Contains(errOut, mallory) {
		t.Errorf("verify's stderr %q; want it to say it runs as %s", errOut, mallory)
	}
	code, out, errOut := sfgen(t, "verify", "--dsn", otherDSN, "--schema", "m", "--count", "20")
	if code != exitFail || out != "" || !strings.Contains(errOut, mallory) || !strings.Contains(errOut, other) {
		t.Errorf("verify as %s, who cannot act as %s: exit %d, %q, %q; want 1, naming both", other, mallory, code, out, errOut)
	}
}

// TestBenchRunsNoOtherRolesCode: as TestVerifyRunsNoOtherRolesCode, for
// sfgen bench, whose scratch tables default to the schema's
// snowflake_next_id(), which mallory replaced with a function that makes
// her a superuser when a superuser calls it.
func TestBenchRunsNoOtherRolesCode(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	mallory, malloryDSN := pgtest.LoginRole(t, dsn, "mallory", "")
	_, otherDSN := pgtest.LoginRole(t, dsn, "other", "")
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "GRANT CREATE ON DATABASE "+pgident.Quote(admin.Config().Database)+" TO "+mallory); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := sfgen(t, "install", "--dsn", malloryDSN, "--schema", "m", "--datacenter", "1", "--machine", "1"); code != exitOK {
		t.Fatalf("install as mallory: exit %d, %s", code, errOut)
	}
	m, err := pgx.Connect(ctx, malloryDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if _, err := m.Exec(ctx, `CREATE SEQUENCE m.mal; CREATE OR REPLACE FUNCTION m.snowflake_next_id() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE `+mallory+` SUPERUSER';
    END IF;
    RETURN pg_catalog.nextval('m.mal') + 4194439168;
END $$; GRANT USAGE ON SCHEMA m TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	isSuper := func() bool {
		var super bool
		if err := admin.QueryRow(ctx, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", mallory).Scan(&super); err != nil {
			t.Fatal(err)
		}
		return super
	}
	code, _, errOut := sfgen(t, "bench", "--dsn", dsn, "--schema", "m", "--clients", "1", "--duration", "200ms", "--statement-rows", "0")
	if isSuper() {
		t.Errorf("sfgen bench as a superuser ran mallory's snowflake_next_id(): mallory is a superuser now (exit %d, %s)", code, errOut)
	}
	if !strings.Contains(errOut, "SET ROLE") || !strings.Contains(errOut, mallory) {
		t.Errorf("bench's stderr %q; want it to say it runs as %s", errOut, mallory)
	}
	code, out, errOut := sfgen(t, "bench", "--dsn", otherDSN, "--schema", "m", "--clients", "1", "--duration", "200ms", "--statement-rows", "0")
	if code != exitFail || out != "" || !strings.Contains(errOut, "cannot act as it") {
		t.Errorf("bench as a role that cannot act as %s: exit %d, %q, %q; want 1 and the refusal", mallory, code, out, errOut)
	}
}

// TestNextLeasesAsTheOwner: sfgen next --dsn, run by a superuser on a
// schema whose sfgen functions mallory owns, calls the lease functions as
// mallory (SET ROLE, said on stderr) and leases; a role that cannot act
// as mallory is refused before it calls any.
func TestNextLeasesAsTheOwner(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	mallory, malloryDSN := pgtest.LoginRole(t, dsn, "mallory", "")
	_, otherDSN := pgtest.LoginRole(t, dsn, "other", "")
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "GRANT CREATE ON DATABASE "+pgident.Quote(admin.Config().Database)+" TO "+mallory); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := sfgen(t, "install", "--dsn", malloryDSN, "--schema", "m", "--datacenter", "1", "--machine", "1"); code != exitOK {
		t.Fatalf("install as mallory: exit %d, %s", code, errOut)
	}
	if _, err := admin.Exec(ctx, "GRANT USAGE ON SCHEMA m TO PUBLIC"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sfgen(t, "next", "--dsn", dsn, "--schema", "m", "--count", "2")
	if code != exitOK || strings.Count(out, "\n") != 2 || !strings.Contains(errOut, "SET ROLE") || !strings.Contains(errOut, mallory) {
		t.Errorf("next as a superuser on mallory's schema: exit %d, %q, %q; want two IDs, leased as %s", code, out, errOut, mallory)
	}
	code, out, errOut = sfgen(t, "next", "--dsn", otherDSN, "--schema", "m", "--count", "2")
	if code != exitFail || out != "" || !strings.Contains(errOut, "cannot act as it") {
		t.Errorf("next as a role that cannot act as %s: exit %d, %q, %q; want 1 and the refusal", mallory, code, out, errOut)
	}
}
