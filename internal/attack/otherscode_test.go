package attack

import (
	"context"
	"errors"
	"strings"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/audit"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/convert"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// plantEscalation makes, as role mallory, a table in a schema of its own
// that references public.parent (REFERENCES and SELECT are all it was
// granted, as applications grant them) with a CHECK that makes mallory a
// superuser when a superuser evaluates it: a rewrite of mallory's table
// by a superuser (ALTER COLUMN ... TYPE re-checks every row) runs it.
func plantEscalation(e *env, mallory string) {
	e.t.Helper()
	e.exec("CREATE TABLE public.parent (id integer PRIMARY KEY); INSERT INTO public.parent SELECT g FROM generate_series(1, 100) g")
	e.exec("GRANT REFERENCES, SELECT ON public.parent TO " + mallory + "; CREATE SCHEMA m AUTHORIZATION " + mallory)
	s := e.connect(mallory)
	s.exec(e.t, `CREATE FUNCTION m.evil(bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE `+mallory+` SUPERUSER';
    END IF;
    RETURN true;
END $$`)
	s.exec(e.t, "CREATE TABLE m.child (pid integer REFERENCES public.parent (id), CHECK (m.evil(pid)))")
	s.exec(e.t, "INSERT INTO m.child VALUES (1)")
}

// TestConvertRunsNoOtherRolesCode: a superuser's `sfgen convert --rewrite`
// of public.parent would widen mallory's m.child and so run mallory's
// CHECK as a superuser. The plant works (the control below, the very
// ALTER convert ran, makes mallory a superuser); convert refuses the
// conversion, naming the table and its owner, changes nothing, and
// mallory stays as it was. Its script, run later by another role than
// the tables' owner (a goose migration of --dry-run's, say), refuses too.
func TestConvertRunsNoOtherRolesCode(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	mallory := e.role("mallory")
	plantEscalation(e, mallory)
	e.mustInstall(sqlgen.Latest, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1})

	// The control: what convert --rewrite ran, run by the superuser.
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "ALTER TABLE m.child ALTER COLUMN pid TYPE bigint"); err != nil {
		t.Fatalf("the control's ALTER: %v", err)
	}
	escalated := false
	tx.QueryRowContext(ctx, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", mallory).Scan(&escalated)
	tx.Rollback()
	if !escalated {
		t.Fatal("the plant did not work: a superuser's rewrite of m.child left mallory without SUPERUSER, so this test cannot tell")
	}

	_, err = convert.Prepare(ctx, e.db, convert.Options{Sfgen: "ids", TableSchema: "public", Table: "parent", Rewrite: true})
	if !errors.Is(err, convert.ErrRefused) || !strings.Contains(err.Error(), "m.child is owned by role "+mallory) {
		t.Errorf("convert --rewrite of public.parent as a superuser = %v; want a refusal naming m.child and its owner %s", err, mallory)
	}
	if e.isSuperuser(mallory) {
		t.Fatal("convert made mallory a superuser")
	}
	var parentType, childType string
	e.db.QueryRow("SELECT atttypid::regtype::text FROM pg_attribute WHERE attrelid = 'public.parent'::regclass AND attname = 'id'").Scan(&parentType)
	e.db.QueryRow("SELECT atttypid::regtype::text FROM pg_attribute WHERE attrelid = 'm.child'::regclass AND attname = 'pid'").Scan(&childType)
	if parentType != "integer" || childType != "integer" {
		t.Errorf("after the refusal: parent.id %s, m.child.pid %s; want both integer (nothing changed)", parentType, childType)
	}

	// The script: planned by the owner of both tables, run by the
	// superuser, it refuses before it alters anything.
	owner := e.role("owner")
	e.exec("CREATE TABLE public.own_parent (id integer PRIMARY KEY); CREATE TABLE public.own_child (pid integer REFERENCES public.own_parent (id))")
	e.exec("ALTER TABLE public.own_parent OWNER TO " + owner + "; ALTER TABLE public.own_child OWNER TO " + owner)
	e.exec("DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO " + owner + "', current_database()); END $$")
	ownerDB := e.openDB(owner)
	if err := installGoose(ctx, ownerDB, sqlgen.Latest, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "own", Datacenter: 2, Machine: 2}); err != nil {
		t.Fatalf("install as %s: %v", owner, err)
	}
	p, err := convert.Prepare(ctx, ownerDB, convert.Options{Sfgen: "own", TableSchema: "public", Table: "own_parent", Rewrite: true})
	if err != nil {
		t.Fatalf("convert planned by the tables' owner: %v", err)
	}
	tx, err = e.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, p.SQL)
	if err == nil || !strings.Contains(err.Error(), "would be altered by role") || !strings.Contains(err.Error(), "(owner "+owner+")") {
		t.Errorf("convert's script run by the superuser over %s's tables = %v; want the refusal naming them", owner, err)
	}
}

// TestAuditRunsNoOtherRolesCode: a superuser's `sfgen audit` of mallory's
// view would run the view's function as the superuser; audit refuses
// the view, naming its owner, and mallory stays as it was. A table with a
// row security policy whose expression is mallory's function, audited
// by a role the policy applies to, is refused before the read, naming
// the policy's function (the read itself, under row_security off, would
// fail rather than run the policy). The plants work (the controls read them as
// an ordinary query would, and mallory's function runs).
func TestAuditRunsNoOtherRolesCode(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	mallory := e.role("mallory")
	plantEscalation(e, mallory)
	s := e.connect(mallory)
	s.exec(t, "CREATE TABLE m.ids (id bigint)")
	s.exec(t, "INSERT INTO m.ids SELECT 4194439168 + g FROM generate_series(1, 10) g")
	s.exec(t, "CREATE VIEW m.v AS SELECT id FROM m.ids WHERE m.evil(id)")
	s.exec(t, "GRANT USAGE ON SCHEMA m TO PUBLIC; GRANT SELECT ON m.ids, m.v TO PUBLIC")

	// The control: a superuser's plain read of the view escalates.
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	tx.QueryRowContext(ctx, "SELECT count(*) FROM m.v").Scan(&n)
	escalated := false
	tx.QueryRowContext(ctx, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", mallory).Scan(&escalated)
	tx.Rollback()
	if !escalated || n != 10 {
		t.Fatalf("the plant did not work (%d rows, escalated %v): this test cannot tell", n, escalated)
	}

	_, err = audit.Run(ctx, e.db, audit.Options{Schema: "m", Table: "v", Column: "id", Layout: snowflake.Twitter()})
	if !errors.Is(err, audit.ErrOthersCode) || !strings.Contains(err.Error(), "view of role "+mallory) {
		t.Errorf("a superuser's audit of mallory's view = %v; want it refused, naming the owner", err)
	}
	if e.isSuperuser(mallory) {
		t.Fatal("audit made mallory a superuser")
	}

	// A policy: mallory's function in it, applying to the auditor.
	auditor := e.role("auditor")
	s.exec(t, "CREATE POLICY p ON m.ids FOR SELECT USING (m.evil(id)); ALTER TABLE m.ids ENABLE ROW LEVEL SECURITY")
	e.exec("GRANT USAGE ON SCHEMA m TO " + auditor)
	adb := e.openDB(auditor)
	var ran int
	if err := adb.QueryRowContext(ctx, "SELECT count(*) FROM m.ids").Scan(&ran); err != nil || ran != 10 {
		t.Fatalf("the policy's control read = %d, %v: this test cannot tell", ran, err)
	}
	_, err = audit.Run(ctx, adb, audit.Options{Schema: "m", Table: "ids", Column: "id", Layout: snowflake.Twitter()})
	if !errors.Is(err, audit.ErrOthersCode) || !strings.Contains(err.Error(), "m.ids's policy p calls m.evil(bigint), a function of role "+mallory) {
		t.Errorf("an audit the policy applies to = %v; want it refused before the read, naming the policy's function", err)
	}
}

// TestInspectRunsNoOtherRolesCode: role mallory, which may create schemas,
// installs sfgen into a schema of its own and replaces the functions that
// say its release, layout and node with ones that make mallory a
// superuser when a superuser calls them (and still answer as before). The
// plant works (the control: a superuser's call escalates). catalog.Inspect,
// which sfgen install, node, verify and sfgenpg.Check start with, reads
// the release, layout and node as a superuser and leaves mallory as it
// was: it calls none of them.
func TestInspectRunsNoOtherRolesCode(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	mallory := e.role("mallory")
	var db string
	if err := e.db.QueryRowContext(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	e.exec("GRANT CREATE ON DATABASE " + pgident.Quote(db) + " TO " + mallory)
	s := e.connect(mallory)
	script, err := releaseScript(sqlgen.Latest, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "m", Datacenter: 1, Machine: 2})
	if err != nil {
		t.Fatal(err)
	}
	s.exec(t, script)
	escalate := `IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE ` + mallory + ` SUPERUSER';
    END IF;`
	s.exec(t, `CREATE OR REPLACE FUNCTION m.snowflake_layout() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    `+escalate+`
    RETURN 'epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12';
END $$`)
	s.exec(t, `CREATE OR REPLACE FUNCTION m.snowflake_release() RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    `+escalate+`
    RETURN 8;
END $$`)
	s.exec(t, `CREATE OR REPLACE FUNCTION m.snowflake_node(OUT datacenter_id integer, OUT machine_id integer) LANGUAGE plpgsql AS $$
BEGIN
    `+escalate+`
    datacenter_id := 1;
    machine_id := 2;
END $$`)

	// The control.
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	escalated := false
	if _, err := tx.ExecContext(ctx, "SELECT m.snowflake_release()"); err != nil {
		t.Fatalf("the control's call: %v", err)
	}
	tx.QueryRowContext(ctx, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", mallory).Scan(&escalated)
	tx.Rollback()
	if !escalated {
		t.Fatal("the control: a superuser's call of m.snowflake_release() did not make mallory a superuser, so this test cannot tell")
	}

	schema, err := catalog.ParseSchema("m")
	if err != nil {
		t.Fatal(err)
	}
	in, err := catalog.Inspect(ctx, catalog.DB(e.db), schema)
	t.Logf("Inspect as the superuser: release %d, layout %s, node %s, error %v", in.Release, in.Layout, in.Node, err)
	if e.isSuperuser(mallory) {
		t.Errorf("catalog.Inspect as a superuser ran mallory's code: mallory is a superuser now")
	}
}
