package attack

import (
	"context"
	"errors"
	"fmt"
	snowflake "github.com/sfgen/sfgen"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// A squat is an object mallory creates under one of sfgen's names before
// the install, made to look like sfgen's so that the install carries on.
type squat struct {
	name   string // as sfgen names it
	create string // SQL; %[1]s is the schema
	// takeover is what mallory, still the owner after the install, does
	// with it (%[1]s is the schema); "" for nothing.
	takeover string
}

var (
	squatState = squat{"snowflake_state",
		// GRANT ALL: the install's sessions (and its SECURITY DEFINER
		// slow path, whatever its owner) can then use it as their own.
		`CREATE SEQUENCE %[1]s.snowflake_state AS bigint MINVALUE 0 START WITH 0;
GRANT ALL ON SEQUENCE %[1]s.snowflake_state TO PUBLIC`,
		`SELECT pg_catalog.setval('%[1]s.snowflake_state', 1)`}
	squatNodeBits = squat{"snowflake_node_bits()",
		`CREATE FUNCTION %[1]s.snowflake_node_bits() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT 0::bigint'`,
		// Node 31/31 in every ID from now on.
		`CREATE OR REPLACE FUNCTION %[1]s.snowflake_node_bits() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT 4190208::bigint'`}
	squatNextID = squat{"snowflake_next_id()",
		`CREATE FUNCTION %[1]s.snowflake_next_id() RETURNS bigint LANGUAGE sql VOLATILE AS 'SELECT 7::bigint'`,
		// Any body, run by every session that inserts, superusers included.
		`CREATE OR REPLACE FUNCTION %[1]s.snowflake_next_id() RETURNS bigint LANGUAGE sql VOLATILE AS 'SELECT 7::bigint'`}
)

// A squatSetup is where mallory squats and who installs.
type squatSetup struct {
	name   string
	schema string // the schema sfgen is installed into
	// appOwner: a non-superuser role with CREATE on the schema installs;
	// else the superuser.
	appOwner bool
	squats   []squat
}

// snapshot describes every object of the database's own schemas: kind,
// name, owner, privileges, body and comment, and the sequences' values,
// so that two snapshots differ when an install changed anything. Names
// are spelt out with their schema, not cast to regprocedure, whose text
// depends on the session's search_path (which install.Apply may have
// changed on a connection of the pool).
func (e *env) snapshot(t testing.TB) string {
	t.Helper()
	var s string
	err := e.db.QueryRowContext(context.Background(), `
WITH n AS (SELECT oid, nspname FROM pg_catalog.pg_namespace
           WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema')
SELECT pg_catalog.string_agg(x, E'\n' ORDER BY x) FROM (
    SELECT pg_catalog.format('schema %s owner %s acl %s', nspname, nspowner::regrole, nspacl) AS x
    FROM pg_catalog.pg_namespace WHERE oid IN (SELECT oid FROM n)
  UNION ALL
    SELECT pg_catalog.format('relation %s.%s kind %s owner %s acl %s comment %s', n.nspname, c.relname, c.relkind,
        c.relowner::regrole, c.relacl, pg_catalog.obj_description(c.oid, 'pg_class'))
    FROM pg_catalog.pg_class c JOIN n ON n.oid = c.relnamespace
  UNION ALL
    SELECT pg_catalog.format('function %s.%s(%s) owner %s acl %s definer %s config %s body %s comment %s',
        n.nspname, p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid),
        p.proowner::regrole, p.proacl, p.prosecdef, p.proconfig, p.prosrc, pg_catalog.obj_description(p.oid, 'pg_proc'))
    FROM pg_catalog.pg_proc p JOIN n ON n.oid = p.pronamespace
  UNION ALL
    SELECT pg_catalog.format('sequence %s.%s last_value %s', schemaname, sequencename, last_value)
    FROM pg_catalog.pg_sequences
) objects`).Scan(&s)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return s
}

// ownedBy lists the objects in schema under sfgen's names that role owns.
func (e *env) ownedBy(t testing.TB, schema, role string) []string {
	t.Helper()
	rows, err := e.db.QueryContext(context.Background(), `
SELECT pg_catalog.format('%s.%s', c.relnamespace::regnamespace, c.relname) FROM pg_catalog.pg_class c
WHERE c.relnamespace = pg_catalog.to_regnamespace($1) AND c.relname LIKE 'snowflake%' AND c.relowner = $2::regrole
UNION ALL
SELECT pg_catalog.format('%s.%s(%s)', p.pronamespace::regnamespace, p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid)) FROM pg_catalog.pg_proc p
WHERE p.pronamespace = pg_catalog.to_regnamespace($1) AND p.proname LIKE 'snowflake%' AND p.proowner = $2::regrole
ORDER BY 1`, pgident.Quote(schema), pgident.Quote(role))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// attackSquat: mallory creates objects under sfgen's names in the target
// schema, then the installer installs release with method. It succeeded
// if the install reported success while mallory still owns an object
// under sfgen's names. A refusal must be one error naming a squatted
// object and mallory, change nothing, and from install.Apply wrap
// install.ErrForeignObject; this helper fails t if it is not.
func attackSquat(t *testing.T, e *env, release int, c squatSetup, method string, f installFn) (bool, string) {
	t.Helper()
	ctx := context.Background()
	mallory := e.role("mallory")
	m := pgident.Quote(mallory)
	schema := pgident.Quote(c.schema)
	if c.schema != "public" {
		e.exec("CREATE SCHEMA " + schema) // by the DBA, shared:
	}
	e.exec(fmt.Sprintf("GRANT USAGE, CREATE ON SCHEMA %s TO %s", schema, m))
	installer, who := e.db, "the superuser"
	if c.appOwner {
		app := e.role("app")
		e.exec(fmt.Sprintf("GRANT USAGE, CREATE ON SCHEMA %s TO %s", schema, pgident.Quote(app)))
		installer, who = e.openDB(app), "app owner "+app
	}
	ms := e.connect(mallory)
	var names []string
	for _, s := range c.squats {
		ms.exec(t, fmt.Sprintf(s.create, schema))
		names = append(names, s.name)
	}
	before := e.snapshot(t)

	err := f(ctx, installer, release, sqlgen.Options{Layout: snowflake.Twitter(), Schema: c.schema})
	details := fmt.Sprintf("mallory squatted %s in %s; %s installed with %s: ", strings.Join(names, ", "), c.schema, who, method)
	if err != nil {
		details += "refused: " + err.Error()
		if release >= 2 {
			checkRefusal(t, e, err, method, mallory, c, before)
		}
		return false, details
	}
	details += "reported success"
	if release >= 2 {
		t.Errorf("release %d installed over objects mallory created instead of refusing", release)
	}
	owned := e.ownedBy(t, c.schema, mallory)
	if len(owned) == 0 {
		return false, details + "; mallory owns nothing under sfgen's names"
	}
	details += "; mallory still owns " + strings.Join(owned, ", ")
	// What mallory can do with them now.
	for _, s := range c.squats {
		if s.takeover == "" {
			continue
		}
		q := fmt.Sprintf(s.takeover, schema)
		if _, err := ms.ExecContext(ctx, q); err != nil {
			details += fmt.Sprintf("; mallory's %q: %v", q, err)
		} else {
			details += fmt.Sprintf("; mallory ran %q", q)
		}
	}
	var id int64
	if err := e.db.QueryRowContext(ctx, fmt.Sprintf("SELECT %s.snowflake_next_id()", schema)).Scan(&id); err != nil {
		details += "; then the superuser's snowflake_next_id(): " + err.Error()
	} else {
		details += fmt.Sprintf("; then the superuser's snowflake_next_id() = %d (%s)", id, describeID(id))
	}
	return true, details
}

// describeID decodes id for a message.
func describeID(id int64) string {
	if id < 1<<22 {
		return "not an ID of this century"
	}
	return fmt.Sprintf("node %d/%d, sequence %d", (id>>17)&31, (id>>12)&31, id&4095)
}

// checkRefusal fails t unless err, an install's refusal, is the clear,
// harmless one release 2 promises.
func checkRefusal(t *testing.T, e *env, err error, method, mallory string, c squatSetup, before string) {
	t.Helper()
	msg := err.Error()
	named := false
	for _, s := range c.squats {
		named = named || strings.Contains(msg, strings.TrimSuffix(s.name, "()"))
	}
	if !named || !strings.Contains(msg, mallory) {
		t.Errorf("%s's refusal does not name a squatted object and its owner %s: %v", method, mallory, err)
	}
	if method == "install.Apply" {
		if !errors.Is(err, install.ErrForeignObject) {
			t.Errorf("install.Apply's refusal does not wrap install.ErrForeignObject: %v", err)
		}
	}
	if after := e.snapshot(t); after != before {
		t.Errorf("%s refused but changed the database:\n%s", method, diffLines(before, after))
	}
	var table *string
	if err := e.db.QueryRowContext(context.Background(), "SELECT pg_catalog.to_regclass($1)::text",
		pgident.Quote(c.schema)+"."+install.VersionTable).Scan(&table); err != nil {
		t.Fatal(err)
	}
	if table != nil {
		t.Errorf("%s refused but left the version table %s", method, *table)
	}
}

// diffLines lists the lines only in a (-) and only in b (+).
func diffLines(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ina, inb := in(a), in(b)
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if !inb[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !ina[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

func TestSquattedObjects(t *testing.T) {
	t.Parallel()
	all := []squat{squatState, squatNodeBits, squatNextID}
	setups := []squatSetup{
		{name: "public/superuser", schema: "public", squats: all},
		// A non-superuser cannot replace, or COMMENT ON, what mallory
		// owns, so release 1 fails (by accident, saying only "must be
		// owner of sequence snowflake_state") on a squatted sequence or
		// snowflake_next_id(); mallory squats only what release 1 skips
		// when it exists.
		{name: "public/app_owner", schema: "public", appOwner: true, squats: []squat{squatNodeBits}},
		{name: "shared_schema/superuser", schema: "ids", squats: all},
	}
	if testing.Short() {
		setups = setups[:1] // every squat, by the superuser, in public
	}
	for _, c := range setups {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			forEachRelease(t, func(t *testing.T, release int) {
				methods := []struct {
					name string
					f    installFn
				}{{"the plain script", installScript}, {"goose (release 1's migration)", installGoose}}
				if release >= 2 {
					methods[1].name = "install.Apply"
				}
				for _, m := range methods {
					t.Run(strings.ReplaceAll(m.name, " ", "_"), func(t *testing.T) {
						t.Parallel()
						ok, details := attackSquat(t, newEnv(t), release, c, m.name, m.f)
						judge(t, release, ok, details)
					})
				}
			})
		})
	}
}
