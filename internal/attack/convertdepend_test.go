package attack

import (
	"context"
	"errors"
	"strings"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/convert"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// A dependPlant is code of role mallory's attached, by the superuser who
// owns them, to public.parent (an integer key) or public.child (an
// integer foreign key to it): tables convert --rewrite of public.parent
// alters.
type dependPlant struct {
	name   string
	plant  string // run by the superuser once mallory's functions exist, still harmless
	object string // what convert's refusal names: "public.child's CHECK constraint c"
	fn     string // the function it names, as regprocedure writes it
	// runs: PostgreSQL (15 here) runs the plant in the very ALTER TABLEs
	// convert runs, so the control escalates. The others (triggers, rules,
	// policies, defaults, a column's domain) are not run by a type change
	// today, and convert refuses them all the same: the control then only
	// says what it saw.
	runs bool
}

// dependPlants is every kind of object through which a table convert
// alters can call a function.
var dependPlants = []dependPlant{
	{"CHECK constraint", "ALTER TABLE public.child ADD CONSTRAINT evil_check CHECK (m.evil(pid))",
		"public.child's CHECK constraint evil_check", "m.evil(bigint)", true},
	{"CHECK through a SQL-standard body", `CREATE FUNCTION public.wrap(bigint) RETURNS boolean LANGUAGE sql BEGIN ATOMIC SELECT m.evil($1); END;
		ALTER TABLE public.child ADD CONSTRAINT wrap_check CHECK (public.wrap(pid))`,
		"public.child's CHECK constraint wrap_check", "m.evil(bigint)", true},
	{"CHECK through a domain", "ALTER TABLE public.child ADD CONSTRAINT domain_check CHECK ((pid::m.positive) IS NOT NULL)",
		"public.child's CHECK constraint domain_check", "m.evil(bigint)", true},
	{"index expression", "CREATE INDEX evil_expr ON public.parent ((m.evil_imm_id(id)))",
		"public.parent's index evil_expr", "m.evil_imm_id(bigint)", true},
	{"index predicate", "CREATE INDEX evil_pred ON public.parent (n) WHERE m.evil_imm(id)",
		"public.parent's index evil_pred", "m.evil_imm(bigint)", true},
	// Constant, so folded (called) whenever a query on the table is
	// planned, by whoever plans it: convert's own reads of the table too.
	{"index predicate of constants", "CREATE INDEX evil_const ON public.parent (n) WHERE m.evil_imm(0)",
		"public.parent's index evil_const", "m.evil_imm(bigint)", true},
	// On a referencing table already bigint, which convert does not
	// alter: PostgreSQL checks its foreign key again, with a query over
	// it, whose planning folds the predicate.
	{"index predicate of constants on a referencing table it does not alter", "CREATE INDEX evil_child8 ON public.child8 (pid) WHERE m.evil_imm(0)",
		"public.child8's index evil_child8", "m.evil_imm(bigint)", true},
	{"extended statistics of constants", "CREATE STATISTICS evil_stats ON (m.evil_imm_id(0) + n), id FROM public.parent",
		"public.parent's statistics evil_stats", "m.evil_imm_id(bigint)", true},
	{"operator class", `CREATE OPERATOR CLASS public.evil_ops FOR TYPE bigint USING btree AS
		OPERATOR 1 pg_catalog.<, OPERATOR 2 pg_catalog.<=, OPERATOR 3 pg_catalog.=, OPERATOR 4 pg_catalog.>=, OPERATOR 5 pg_catalog.>,
		FUNCTION 1 m.evil_cmp(bigint, bigint);
		CREATE INDEX evil_ops ON public.child (other public.evil_ops)`,
		"public.child's index evil_ops", "m.evil_cmp(bigint, bigint)", true},
	{"domain of a column", "ALTER TABLE public.child ADD d m.positive",
		"public.child's column d (type m.positive)", "m.evil(bigint)", false},
	{"column default", "ALTER TABLE public.child ALTER other SET DEFAULT m.evil_id(1)",
		"public.child's default of column other", "m.evil_id(bigint)", false},
	{"generated column", "ALTER TABLE public.child ADD g bigint GENERATED ALWAYS AS (m.evil_imm_id(other)) STORED",
		"public.child's generated column g", "m.evil_imm_id(bigint)", false},
	{"trigger", "CREATE TRIGGER evil_trigger BEFORE INSERT OR UPDATE ON public.child FOR EACH ROW EXECUTE FUNCTION m.evil_trigger()",
		"public.child's trigger evil_trigger", "m.evil_trigger()", false},
	{"rule", "CREATE RULE evil_rule AS ON UPDATE TO public.child DO ALSO SELECT m.evil(1)",
		"public.child's rule evil_rule", "m.evil(bigint)", false},
	{"row security policy", "ALTER TABLE public.child ENABLE ROW LEVEL SECURITY; CREATE POLICY evil_policy ON public.child USING (m.evil(other))",
		"public.child's policy evil_policy", "m.evil(bigint)", false},
}

// plantFunctions makes, as mallory, the functions of schema m the plants
// call, all harmless (m.evil returns true), and a domain m.positive whose
// CHECK calls m.evil.
func plantFunctions(e *env, mallory string) *session {
	e.t.Helper()
	e.exec("CREATE SCHEMA m AUTHORIZATION " + mallory)
	s := e.connect(mallory)
	s.exec(e.t, `CREATE FUNCTION m.evil(bigint) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RETURN true; END $$;
CREATE FUNCTION m.evil_imm(x bigint) RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS $$ BEGIN PERFORM m.evil(x); RETURN true; END $$;
CREATE FUNCTION m.evil_id(x bigint) RETURNS bigint LANGUAGE plpgsql AS $$ BEGIN PERFORM m.evil(x); RETURN x; END $$;
CREATE FUNCTION m.evil_imm_id(x bigint) RETURNS bigint IMMUTABLE LANGUAGE plpgsql AS $$ BEGIN PERFORM m.evil(x); RETURN x; END $$;
CREATE FUNCTION m.evil_cmp(a bigint, b bigint) RETURNS integer IMMUTABLE LANGUAGE plpgsql AS $$ BEGIN PERFORM m.evil(a); RETURN pg_catalog.btint8cmp(a, b); END $$;
CREATE FUNCTION m.evil_trigger() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM m.evil(0); RETURN NEW; END $$;
CREATE DOMAIN m.positive AS bigint CHECK (m.evil(VALUE));
GRANT USAGE ON SCHEMA m TO PUBLIC`)
	return s
}

// armEvil replaces, as mallory, m.evil with one that makes mallory a
// superuser when a superuser calls it: what the owner of a function may
// do at any time.
func armEvil(t *testing.T, s *session, mallory string) {
	t.Helper()
	s.exec(t, `CREATE OR REPLACE FUNCTION m.evil(bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE `+mallory+` SUPERUSER';
    END IF;
    RETURN true;
END $$`)
}

// dependEnv is a database where the superuser owns public.parent (id
// integer, 100 rows), public.child (pid integer referencing it, 3 rows),
// public.child8 (pid bigint referencing it, 1 row) and sfgen in schema
// ids, and mallory owns schema m and the
// functions of plantFunctions.
func dependEnv(t *testing.T) (e *env, mallory string, s *session) {
	e = newEnv(t)
	mallory = e.role("mallory")
	s = plantFunctions(e, mallory)
	e.exec(`CREATE TABLE public.parent (id integer PRIMARY KEY, n integer);
INSERT INTO public.parent SELECT g, g FROM generate_series(1, 100) g;
CREATE TABLE public.child (pid integer REFERENCES public.parent (id), other bigint);
INSERT INTO public.child VALUES (1, 1), (2, 2), (3, 3);
CREATE TABLE public.child8 (pid bigint REFERENCES public.parent (id));
INSERT INTO public.child8 VALUES (1)`)
	e.mustInstall(sqlgen.Latest, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1})
	return e, mallory, s
}

// rewriteEscalates runs, as the superuser in a transaction it rolls back,
// the ALTER TABLEs convert --rewrite of public.parent runs, and tells
// whether they made mallory a superuser (rolled back too).
func rewriteEscalates(t *testing.T, e *env, mallory string) bool {
	t.Helper()
	ctx := context.Background()
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "ALTER TABLE public.child ALTER COLUMN pid TYPE bigint; ALTER TABLE public.parent ALTER COLUMN id TYPE bigint"); err != nil {
		t.Fatalf("the control's ALTERs: %v", err)
	}
	escalated := false
	if err := tx.QueryRowContext(ctx, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", mallory).Scan(&escalated); err != nil {
		t.Fatal(err)
	}
	return escalated
}

// keyTypes is the types of public.parent.id and public.child.pid.
func keyTypes(t *testing.T, e *env) string {
	t.Helper()
	var s string
	if err := e.db.QueryRow(`SELECT string_agg(attrelid::regclass || '.' || attname || ' ' || atttypid::regtype, ', ' ORDER BY attrelid::regclass::text)
		FROM pg_attribute WHERE (attrelid, attname) IN (('public.parent'::regclass, 'id'), ('public.child'::regclass, 'pid'))`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConvertRunsNoDependedOnCode: for each kind of object through which
// a table can call a function (dependPlants), the superuser owns both
// tables and attaches mallory's function to one of them, then mallory
// makes the function escalate. The control: the ALTER TABLEs convert
// --rewrite runs, run directly, make mallory a superuser (for the kinds
// PostgreSQL runs in a type change). convert, planning as the superuser
// (what --dry-run and a conversion do first), refuses with
// ErrOthersCode naming the table, the object, the function and its
// owner; mallory stays as it was and nothing changed. A plan made before
// the plant refuses too: Apply's look under the locks, and its script
// run directly (a --dry-run migration run later).
func TestConvertRunsNoDependedOnCode(t *testing.T) {
	for _, tc := range dependPlants {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e, mallory, s := dependEnv(t)
			o := convert.Options{Sfgen: "ids", TableSchema: "public", Table: "parent", Rewrite: true}
			early, err := convert.Prepare(ctx, e.db, o)
			if err != nil {
				t.Fatalf("convert before the plant: %v", err)
			}
			e.exec(tc.plant)
			armEvil(t, s, mallory)
			before := keyTypes(t, e)

			escalated := rewriteEscalates(t, e, mallory)
			switch {
			case tc.runs && !escalated:
				t.Fatal("the plant did not work: a superuser's ALTER TABLEs left mallory without SUPERUSER, so this test cannot tell")
			case !tc.runs:
				t.Logf("the control: a superuser's ALTER TABLEs ran the %s's function: %v (convert refuses it either way)", tc.name, escalated)
			}

			_, err = convert.Prepare(ctx, e.db, o)
			want := tc.object + " calls " + tc.fn + ", a function of role " + mallory
			var oc *convert.OthersCodeError
			if !errors.Is(err, convert.ErrOthersCode) || !errors.Is(err, convert.ErrRefused) || !errors.As(err, &oc) || !strings.Contains(err.Error(), want) {
				t.Errorf("convert --rewrite of public.parent as a superuser = %v; want a refusal saying %q", err, want)
			}
			if _, err := early.Apply(ctx, e.db); !errors.Is(err, convert.ErrOthersCode) {
				t.Errorf("a plan made before the plant, applied after = %v; want it refused under the locks", err)
			}
			tx, err := e.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tx.ExecContext(ctx, early.SQL)
			tx.Rollback()
			if err == nil || !strings.Contains(err.Error(), "would run functions of other roles") || !strings.Contains(err.Error(), tc.fn+", "+mallory) {
				t.Errorf("the script of a plan made before the plant = %v; want it refused, naming %s and %s", err, tc.fn, mallory)
			}
			if e.isSuperuser(mallory) {
				t.Fatal("convert made mallory a superuser")
			}
			if got := keyTypes(t, e); got != before {
				t.Errorf("after the refusal: %s; want %s (nothing changed)", got, before)
			}
		})
	}
}

// TestConvertRunsOwnersAndSuperusersCode: functions of the tables' owner
// and of superusers are no refusal. Role app owns both tables, a CHECK
// that calls a function of its own and an index over a superuser's;
// convert --rewrite as app converts.
func TestConvertRunsOwnersAndSuperusersCode(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	app := e.role("app")
	var db string
	if err := e.db.QueryRow("SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	e.exec(`CREATE FUNCTION public.admins(bigint) RETURNS bigint IMMUTABLE LANGUAGE sql RETURN $1;
GRANT CREATE ON DATABASE "` + db + `" TO ` + app)
	s := e.connect(app)
	s.exec(t, `CREATE SCHEMA app;
CREATE FUNCTION app.mine(bigint) RETURNS boolean LANGUAGE sql RETURN $1 > 0;
CREATE TABLE app.parent (id integer PRIMARY KEY CHECK (app.mine(id)));
CREATE TABLE app.child (pid integer REFERENCES app.parent (id));
CREATE INDEX ON app.child ((public.admins(pid)));
INSERT INTO app.parent SELECT g FROM generate_series(1, 10) g;
INSERT INTO app.child VALUES (1)`)
	adb := e.openDB(app)
	if err := installGoose(ctx, adb, sqlgen.Latest, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 3, Machine: 3}); err != nil {
		t.Fatal(err)
	}
	p, err := convert.Prepare(ctx, adb, convert.Options{Sfgen: "ids", TableSchema: "app", Table: "parent", Rewrite: true})
	if err != nil {
		t.Fatalf("convert as the tables' owner: %v", err)
	}
	if _, err := p.Apply(ctx, adb); err != nil {
		t.Fatalf("convert as the tables' owner: %v", err)
	}
}
