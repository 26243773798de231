package attack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// denied tells whether err is PostgreSQL's permission denied (42501).
func denied(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42501"
}

// sfgenSequences are the OIDs (as text) and names of every sequence of
// schema's sfgen install and its private schema.
func (e *env) sfgenSequences(schema string) map[string]string {
	e.t.Helper()
	rows, err := e.db.QueryContext(context.Background(), `SELECT c.oid::text, c.oid::regclass::text FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'S' AND n.nspname IN ($1, $2)`, schema, catalog.PrivateSchema(schema))
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	seqs := map[string]string{}
	for rows.Next() {
		var oid, name string
		if err := rows.Scan(&oid, &name); err != nil {
			e.t.Fatal(err)
		}
		seqs[oid] = name
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return seqs
}

// TestAttackStateByOID: a role with nothing but CONNECT calls nextval()
// and setval() on sfgen's sequences by OID (which needs no USAGE on their
// schema), as the reproduction of issue 39 did to move the state back
// under values already handed out. Release 7 let PUBLIC nextval() the
// state; release 8 gives no privilege of PUBLIC's on any sequence of the
// protocol, so every call is refused.
func TestAttackStateByOID(t *testing.T) {
	for _, release := range []int{7, sqlgen.Latest} {
		t.Run(fmt.Sprintf("release%d", release), func(t *testing.T) {
			e := newEnv(t)
			e.script34(release, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1})
			mallory := e.role("mallory")
			s := e.connect(mallory)
			seqs := e.sfgenSequences("ids")
			if len(seqs) < 5 {
				t.Fatalf("found %d sfgen sequences, want the state, its guards and the turn's key: %v", len(seqs), seqs)
			}
			var took []string
			for oid, name := range seqs {
				for _, call := range []string{"nextval($1::oid::regclass)", "setval($1::oid::regclass, 1)", "pg_sequence_last_value($1::oid::regclass)", "currval($1::oid::regclass)"} {
					// A read that answers NULL (PostgreSQL 18's
					// pg_sequence_last_value() without privileges) read nothing.
					var v *int64
					err := s.QueryRowContext(context.Background(), "SELECT pg_catalog."+call, oid).Scan(&v)
					switch {
					case err == nil && v == nil:
					case err == nil:
						took = append(took, strings.Replace(call, "$1::oid::regclass", name, 1))
					case !denied(err) && !strings.Contains(err.Error(), "not yet defined in this session"):
						t.Errorf("%s on %s: %v; want permission denied", call, name, err)
					}
				}
			}
			// The generator itself, and its slow path, where mallory may
			// look up names in sfgen's schema (as applications commonly may).
			e.exec("GRANT USAGE ON SCHEMA ids TO PUBLIC")
			for _, f := range []string{"snowflake_next_id()", "snowflake_next_state()", "snowflake_next_id_local()", "snowflake_next_id_slow()"} {
				if _, err := s.ExecContext(context.Background(), "SELECT ids."+f); err == nil {
					took = append(took, f)
				} else if !denied(err) {
					t.Errorf("%s: %v; want permission denied", f, err)
				}
			}
			slices.Sort(took)
			stateTaken := slices.ContainsFunc(took, func(s string) bool { return strings.HasPrefix(s, "nextval(ids.snowflake_state)") })
			judge34For(t, 7, release, stateTaken, "mallory (CONNECT only) could call: "+strings.Join(took, ", "))
			if release >= 8 && len(took) > 0 {
				t.Errorf("release %d: mallory (CONNECT only) could call %s; want none", release, strings.Join(took, ", "))
			}
		})
	}
}

// judge34For is judge34 for an attack that release before does not stop
// and the releases after it do.
func judge34For(t *testing.T, before, release int, succeeded bool, details string) {
	t.Helper()
	switch {
	case release == before && !succeeded:
		t.Errorf("release %d: the attack did not succeed, so this test cannot detect it: %s", release, details)
	case release > before && succeeded:
		t.Errorf("release %d: the attack succeeded: %s", release, details)
	default:
		t.Logf("release %d: succeeded %v, as it must: %s", release, succeeded, details)
	}
}

// TestGrantIDMaking: on a new install only the owner makes IDs; a role
// the owner grants ID-making to (snowflake_grant) inserts through the
// default, and still cannot setval() anything or take the catch-up's
// turn; a role that is not the owner cannot grant it; snowflake_revoke
// takes it back.
func TestGrantIDMaking(t *testing.T) {
	e := newEnv(t)
	e.script34(sqlgen.Latest, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1})
	app, other := e.role("app"), e.role("other")
	e.exec(fmt.Sprintf(`CREATE TABLE public.t (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), v int);
		GRANT INSERT, SELECT ON public.t TO %[1]s, %[2]s;
		GRANT USAGE ON SCHEMA ids TO %[1]s, %[2]s`, app, other))
	as := e.connect(app)
	insert := func(s *session) (int64, error) {
		var id int64
		err := s.QueryRowContext(context.Background(), "INSERT INTO public.t (v) VALUES (1) RETURNING id").Scan(&id)
		return id, err
	}
	if _, err := insert(as); !denied(err) {
		t.Fatalf("before the grant, app's insert: %v; want permission denied", err)
	}
	if _, err := as.ExecContext(context.Background(), fmt.Sprintf("SELECT ids.snowflake_grant(%s)", pgident.QuoteLiteral(app))); !denied(err) {
		t.Errorf("app grants itself ID-making: %v; want permission denied", err)
	}
	e.exec(fmt.Sprintf("SELECT ids.snowflake_grant(%s)", pgident.QuoteLiteral(app)))
	id, err := insert(as)
	if err != nil {
		t.Fatalf("after the grant, app's insert: %v", err)
	}
	// The README's layout: the node's bits are the ones set.
	if dc, m := (id>>17)&31, (id>>12)&31; dc != 1 || m != 1 {
		t.Errorf("app's ID %d has node %d/%d; want 1/1", id, dc, m)
	}
	for _, q := range []string{
		"SELECT pg_catalog.setval('ids.snowflake_state', 1)",
		"SELECT pg_catalog.setval('ids.snowflake_caught_up', 0)",
		"SELECT pg_catalog.nextval('ids.snowflake_caught_up')",
		"SELECT 1 FROM ids_sfgen.snowflake_catch_up_turn FOR UPDATE",
		"SELECT pg_catalog.nextval('ids_sfgen.snowflake_catch_up_key')",
		"SELECT ids.snowflake_set_node(2, 2)",
	} {
		if _, err := as.ExecContext(context.Background(), q); !denied(err) {
			t.Errorf("granted app: %s: %v; want permission denied", q, err)
		}
	}
	if _, err := insert(e.connect(other)); !denied(err) {
		t.Errorf("other (not granted), insert: %v; want permission denied", err)
	}
	makers, ok, err := catalog.IDMakers(context.Background(), catalog.DB(e.db), mustSchema(t, "ids"))
	if err != nil || !ok || !slices.Equal(makers, []string{app}) {
		t.Errorf("IDMakers: %v %v %v; want [%s]", makers, ok, err, app)
	}
	e.exec(fmt.Sprintf("SELECT ids.snowflake_revoke(%s)", pgident.QuoteLiteral(app)))
	if _, err := insert(as); !denied(err) {
		t.Errorf("after the revoke, app's insert: %v; want permission denied", err)
	}
	// An install of release 8 again keeps the owner's choices.
	e.exec(fmt.Sprintf("SELECT ids.snowflake_grant(%s)", pgident.QuoteLiteral(other)))
	e.script34(sqlgen.Latest, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1})
	if makers, _, _ := catalog.IDMakers(context.Background(), catalog.DB(e.db), mustSchema(t, "ids")); !slices.Equal(makers, []string{other}) {
		t.Errorf("after installing release %d again, ID-making is %v; want [%s] as the owner left it", sqlgen.Latest, makers, other)
	}
}

// TestUpgradeGrantsInserters: the upgrade from release 7 takes PUBLIC's
// privileges away and grants ID-making to every role that may insert
// through a default that makes IDs: a grantee of INSERT on the table, of
// INSERT on a column, the table's owner, and through
// snowflake_next_id_local(); not a role that may insert into none. It
// says whom it granted. Where PUBLIC may insert into such a table, PUBLIC
// keeps ID-making, with a warning.
func TestUpgradeGrantsInserters(t *testing.T) {
	t.Run("roles", func(t *testing.T) {
		e := newEnv(t)
		o := sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1}
		e.script34(7, o)
		tableGrantee, columnGrantee, owner, localGrantee, none := e.role("tablegrantee"), e.role("colgrantee"), e.role("owner"), e.role("localgrantee"), e.role("none")
		e.exec(fmt.Sprintf(`
			CREATE TABLE public.t1 (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), v int);
			GRANT INSERT ON public.t1 TO %[1]s;
			CREATE TABLE public.t2 (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), v int);
			GRANT INSERT (v) ON public.t2 TO %[2]s;
			CREATE TABLE public.t3 (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), v int);
			ALTER TABLE public.t3 OWNER TO %[3]s;
			CREATE TABLE public.t4 (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id_local(), v int);
			GRANT INSERT ON public.t4 TO %[4]s;
			GRANT USAGE ON SCHEMA ids TO %[4]s; -- the local generator calls ids.snowflake_next_id() by name
			CREATE TABLE public.t5 (id bigint PRIMARY KEY, v int);
			GRANT INSERT ON public.t5 TO %[5]s`, tableGrantee, columnGrantee, owner, localGrantee, none))
		inserts := map[string]string{tableGrantee: "public.t1", columnGrantee: "public.t2", owner: "public.t3", localGrantee: "public.t4"}
		for role, table := range inserts {
			if _, err := e.connect(role).ExecContext(context.Background(), "INSERT INTO "+table+" (v) VALUES (1)"); err != nil {
				t.Fatalf("release 7: %s inserts into %s: %v", role, table, err)
			}
		}
		up := e.connect("")
		script, err := releaseScript(sqlgen.Latest, o)
		if err != nil {
			t.Fatal(err)
		}
		up.exec(t, script)
		notices := strings.Join(up.takeNotices(), "\n")
		for role, table := range inserts {
			if _, err := e.connect(role).ExecContext(context.Background(), "INSERT INTO "+table+" (v) VALUES (2)"); err != nil {
				t.Errorf("after the upgrade, %s inserts into %s: %v", role, table, err)
			}
			if !strings.Contains(notices, role) {
				t.Errorf("the upgrade's notices do not name %s: %q", role, notices)
			}
		}
		if _, err := e.connect(none).ExecContext(context.Background(), "SELECT pg_catalog.nextval('ids.snowflake_state')"); !denied(err) {
			t.Errorf("after the upgrade, %s (inserts into no such table) nextval()s the state: %v; want permission denied", none, err)
		}
		makers, _, err := catalog.IDMakers(context.Background(), catalog.DB(e.db), mustSchema(t, "ids"))
		want := []string{tableGrantee, columnGrantee, owner, localGrantee}
		slices.Sort(want)
		if err != nil || !slices.Equal(makers, want) {
			t.Errorf("IDMakers after the upgrade: %v, %v; want %v", makers, err, want)
		}
	})
	t.Run("PUBLIC", func(t *testing.T) {
		e := newEnv(t)
		o := sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1}
		e.script34(7, o)
		anyone := e.role("anyone")
		e.exec(`CREATE TABLE public.t (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), v int);
			GRANT INSERT ON public.t TO PUBLIC`)
		up := e.connect("")
		script, err := releaseScript(sqlgen.Latest, o)
		if err != nil {
			t.Fatal(err)
		}
		up.exec(t, script)
		notices := strings.Join(up.takeNotices(), "\n")
		if !strings.Contains(notices, "PUBLIC") || !strings.Contains(notices, "keeps ID-making") {
			t.Errorf("the upgrade's notices: %q; want a warning that PUBLIC keeps ID-making", notices)
		}
		if _, err := e.connect(anyone).ExecContext(context.Background(), "INSERT INTO public.t (v) VALUES (1)"); err != nil {
			t.Errorf("after the upgrade, any role inserts: %v", err)
		}
		if makers, _, _ := catalog.IDMakers(context.Background(), catalog.DB(e.db), mustSchema(t, "ids")); !slices.Equal(makers, []string{catalog.PublicRole}) {
			t.Errorf("IDMakers: %v; want [PUBLIC]", makers)
		}
	})
}

func mustSchema(t *testing.T, name string) catalog.Schema {
	t.Helper()
	s, err := catalog.ParseSchema(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
