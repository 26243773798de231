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
	o := othersInstall(t)
	dsn, admin, mallory, m, other, otherDSN := o.dsn, o.admin, o.mallory, o.m, o.other, o.otherDSN
	if _, err := m.Exec(ctx, `CREATE OR REPLACE FUNCTION m.snowflake_timestamp(id bigint) RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE `+mallory+` SUPERUSER';
    END IF;
    RETURN pg_catalog.to_timestamp(((id >> 22) + 1288834974657) / 1000.0);
END $$`); err != nil {
		t.Fatal(err)
	}
	// The control.
	escalationControl(t, admin, mallory, "SELECT m.snowflake_timestamp(4194439168)")

	code, _, errOut := sfgen(t, "verify", "--dsn", dsn, "--schema", "m", "--count", "20")
	if isSuperuser(t, admin, mallory) {
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
	o := othersInstall(t)
	dsn, admin, mallory, m, otherDSN := o.dsn, o.admin, o.mallory, o.m, o.otherDSN
	if _, err := m.Exec(ctx, `CREATE SEQUENCE m.mal; CREATE OR REPLACE FUNCTION m.snowflake_next_id() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE `+mallory+` SUPERUSER';
    END IF;
    RETURN pg_catalog.nextval('m.mal') + 4194439168;
END $$`); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := sfgen(t, "bench", "--dsn", dsn, "--schema", "m", "--clients", "1", "--duration", "200ms", "--statement-rows", "0")
	if isSuperuser(t, admin, mallory) {
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
	o := othersInstall(t)
	dsn, mallory, otherDSN := o.dsn, o.mallory, o.otherDSN
	code, out, errOut := sfgen(t, "next", "--dsn", dsn, "--schema", "m", "--count", "2")
	if code != exitOK || strings.Count(out, "\n") != 2 || !strings.Contains(errOut, "SET ROLE") || !strings.Contains(errOut, mallory) {
		t.Errorf("next as a superuser on mallory's schema: exit %d, %q, %q; want two IDs, leased as %s", code, out, errOut, mallory)
	}
	code, out, errOut = sfgen(t, "next", "--dsn", otherDSN, "--schema", "m", "--count", "2")
	if code != exitFail || out != "" || !strings.Contains(errOut, "cannot act as it") {
		t.Errorf("next as a role that cannot act as %s: exit %d, %q, %q; want 1 and the refusal", mallory, code, out, errOut)
	}
}

// An othersDB is a database where role mallory (which may create schemas
// there) has installed sfgen into schema m, which every role may use.
type othersDB struct {
	dsn, mallory, other, otherDSN string
	admin, m                      *pgx.Conn // the superuser's and mallory's
}

// othersInstall makes an othersDB; other is a login role that cannot act
// as mallory.
func othersInstall(t *testing.T) othersDB {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	mallory, malloryDSN := pgtest.LoginRole(t, dsn, "mallory", "")
	other, otherDSN := pgtest.LoginRole(t, dsn, "other", "")
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
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
	t.Cleanup(func() { m.Close(context.Background()) })
	if _, err := m.Exec(ctx, "GRANT USAGE ON SCHEMA m TO PUBLIC"); err != nil {
		t.Fatal(err)
	}
	return othersDB{dsn: dsn, mallory: mallory, other: other, otherDSN: otherDSN, admin: admin, m: m}
}

// escalationControl is the control of the tests above: call, run by
// admin (a superuser) in a transaction rolled back after, makes mallory a
// superuser, so that a test that sees no escalation from a command can
// tell.
func escalationControl(t *testing.T, admin *pgx.Conn, mallory, call string) {
	t.Helper()
	ctx := context.Background()
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, call); err != nil {
		t.Fatal(err)
	}
	var escalated bool
	if err := tx.QueryRow(ctx, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", mallory).Scan(&escalated); err != nil {
		t.Fatal(err)
	}
	if !escalated {
		t.Fatal("the control: a superuser's call did not escalate, so this test cannot tell")
	}
}

// isSuperuser tells whether role is a superuser now, read on q.
func isSuperuser(t *testing.T, q *pgx.Conn, role string) bool {
	t.Helper()
	var super bool
	if err := q.QueryRow(context.Background(), "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", role).Scan(&super); err != nil {
		t.Fatal(err)
	}
	return super
}

// TestNodeSetsAsTheOwner: sfgen node, run by a superuser, calls
// snowflake_set_node() as the owner of the schema's functions, so that
// mallory's replacement, which makes her a superuser when a superuser
// calls it, does not (the control shows it does, called directly); a
// role that cannot act as her is refused, naming both.
func TestNodeSetsAsTheOwner(t *testing.T) {
	ctx := context.Background()
	o := othersInstall(t)
	dsn, admin, mallory, m, otherDSN := o.dsn, o.admin, o.mallory, o.m, o.otherDSN
	if _, err := m.Exec(ctx, `CREATE OR REPLACE FUNCTION m.snowflake_set_node(datacenter_id integer, machine_id integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE `+mallory+` SUPERUSER';
    END IF;
END $$`); err != nil {
		t.Fatal(err)
	}
	escalationControl(t, admin, mallory, "SELECT m.snowflake_set_node(1, 2)")

	code, _, errOut := sfgen(t, "node", "--dsn", dsn, "--schema", "m", "--datacenter", "1", "--machine", "2")
	if isSuperuser(t, admin, mallory) {
		t.Fatalf("sfgen node as a superuser ran mallory's snowflake_set_node(): mallory is a superuser now (exit %d, %s)", code, errOut)
	}
	if !strings.Contains(errOut, "SET ROLE") || !strings.Contains(errOut, mallory) {
		t.Errorf("node's stderr %q; want it to say it runs as %s", errOut, mallory)
	}
	code, out, errOut := sfgen(t, "node", "--dsn", otherDSN, "--schema", "m", "--datacenter", "1", "--machine", "2")
	if code != exitFail || !strings.Contains(errOut, mallory) || !strings.Contains(errOut, o.other) {
		t.Errorf("node as %s, who cannot act as %s: exit %d, %q, %q; want 1, naming both", o.other, mallory, code, out, errOut)
	}
}
