package attack

import (
	"context"
	"errors"
	"strings"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/audit"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/resume"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// armEvilReadOnly replaces, as mallory, m.evil with one that, called by a
// superuser, runs a shell command on the server (COPY TO PROGRAM, which a
// read-only transaction allows: ALTER ROLE it would not) and then says so
// in an error, which fails the statement that ran it.
func armEvilReadOnly(t *testing.T, s *session) {
	t.Helper()
	s.exec(t, `CREATE OR REPLACE FUNCTION m.evil(bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'COPY (SELECT 1) TO PROGRAM ''cat >/dev/null''';
        RAISE EXCEPTION 'mallory''s code ran as superuser %, and ran a shell command', current_user;
    END IF;
    RETURN true;
END $$`)
}

// TestResumeRunsNoOtherRolesCode: the superuser owns public.orders, whose
// key defaults to sfgen's generator, with an index whose predicate (or
// expression) calls mallory's immutable function on constants: planning
// any read of the table folds it, so it runs as whoever reads. The
// control: a superuser's read, as resume reads (read-only, row security
// off), runs it (a shell command on the server). sfgen resume as the
// superuser refuses, naming the table, the index, the function and its
// owner, and reads nothing: mallory's code never ran. A table of role
// app whose index calls app's own function (which calls mallory's) is
// read as app: the code runs, but not as a superuser.
func TestResumeRunsNoOtherRolesCode(t *testing.T) {
	for _, tc := range []struct {
		name, plant, object, fn string
	}{
		{"index predicate", "CREATE INDEX evil_pred ON public.orders (n) WHERE m.evil_imm(0)", "public.orders's index evil_pred", "m.evil_imm(bigint)"},
		{"index expression", "CREATE INDEX evil_expr ON public.orders ((n + m.evil_imm_id(0)))", "public.orders's index evil_expr", "m.evil_imm_id(bigint)"},
		{"extended statistics", "CREATE STATISTICS evil_stats ON (m.evil_imm_id(0) + n), id FROM public.orders", "public.orders's statistics evil_stats", "m.evil_imm_id(bigint)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			mallory := e.role("mallory")
			s := plantFunctions(e, mallory)
			e.mustInstall(sqlgen.Latest, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1})
			e.exec("CREATE TABLE public.orders (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), n bigint); INSERT INTO public.orders (n) VALUES (1)")
			e.exec(tc.plant)
			armEvilReadOnly(t, s)

			// The control: a read as resume reads it.
			tx, err := e.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tx.ExecContext(ctx, "SET TRANSACTION READ ONLY; SET LOCAL row_security = off; SET LOCAL search_path = pg_catalog, pg_temp")
			if err == nil {
				var id int64
				err = tx.QueryRowContext(ctx, "SELECT id FROM public.orders WHERE id IS NOT NULL ORDER BY id DESC LIMIT 1").Scan(&id)
			}
			tx.Rollback()
			if err == nil || !strings.Contains(err.Error(), "mallory's code ran as superuser") {
				t.Fatalf("the control: a superuser's read of public.orders = %v; want mallory's code run, or this test cannot tell", err)
			}

			schema, _ := catalog.ParseSchema("ids")
			_, err = resume.Run(ctx, e.db, resume.Options{Schema: schema})
			want := tc.object + " calls " + tc.fn + ", a function of role " + mallory
			var oc *resume.OthersCodeError
			if !errors.Is(err, resume.ErrOthersCode) || !errors.As(err, &oc) || !strings.Contains(err.Error(), want) {
				t.Errorf("resume as a superuser = %v; want a refusal saying %q", err, want)
			}
			if err != nil && strings.Contains(err.Error(), "mallory's code ran") {
				t.Errorf("resume ran mallory's code: %v", err)
			}
		})
	}

	t.Run("the owner's function, read as the owner", func(t *testing.T) {
		ctx := context.Background()
		e := newEnv(t)
		mallory := e.role("mallory")
		app := e.role("app")
		s := plantFunctions(e, mallory)
		e.mustInstall(sqlgen.Latest, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1})
		e.exec(`CREATE SCHEMA app AUTHORIZATION ` + app + `;
CREATE TABLE app.orders (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), n bigint);
INSERT INTO app.orders (n) VALUES (1);
CREATE FUNCTION app.mine(x bigint) RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS $$ BEGIN PERFORM m.evil(x); RETURN true; END $$;
CREATE INDEX mine_pred ON app.orders (n) WHERE app.mine(0);
ALTER TABLE app.orders OWNER TO ` + app + `; ALTER FUNCTION app.mine(bigint) OWNER TO ` + app)
		armEvilReadOnly(t, s)
		schema, _ := catalog.ParseSchema("ids")
		r, err := resume.Run(ctx, e.db, resume.Options{Schema: schema})
		if err != nil {
			t.Fatalf("resume as a superuser over %s's table, which calls %s's function = %v; want it read as %s", app, app, err, app)
		}
		if len(r.Columns) != 1 || r.Columns[0].Max == 0 {
			t.Errorf("resume read %+v; want app.orders.id and its ID", r.Columns)
		}
	})
}

// TestAuditRunsNoDependedOnCode: a superuser's sfgen audit of a table
// (the superuser's) whose index predicate, or extended statistics, call
// mallory's immutable function on constants: planning the read would run
// it. The control: a superuser's read, as audit reads (read-only, row
// security off), runs it. Audit refuses, naming the table, the object,
// the function and its owner; mallory's code never ran. A table whose
// index calls a superuser's function is audited.
func TestAuditRunsNoDependedOnCode(t *testing.T) {
	for _, tc := range []struct {
		name, plant, object, fn string
	}{
		{"index predicate", "CREATE INDEX evil_pred ON public.ids (n) WHERE m.evil_imm(0)", "public.ids's index evil_pred", "m.evil_imm(bigint)"},
		{"extended statistics", "CREATE STATISTICS evil_stats ON (m.evil_imm_id(0) + n), id FROM public.ids", "public.ids's statistics evil_stats", "m.evil_imm_id(bigint)"},
		{"a superuser's function", "CREATE FUNCTION public.admins(bigint) RETURNS boolean IMMUTABLE LANGUAGE sql RETURN true; CREATE INDEX admins_pred ON public.ids (n) WHERE public.admins(0)", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			mallory := e.role("mallory")
			s := plantFunctions(e, mallory)
			e.exec("CREATE TABLE public.ids (id bigint, n bigint); INSERT INTO public.ids SELECT 4194439168 + g, g FROM generate_series(1, 10) g")
			e.exec(tc.plant)
			armEvilReadOnly(t, s)
			o := audit.Options{Schema: "public", Table: "ids", Column: "id", Layout: snowflake.Twitter()}
			if tc.fn == "" {
				if _, err := audit.Run(ctx, e.db, o); err != nil {
					t.Errorf("audit of a table whose index calls a superuser's function = %v; want it audited", err)
				}
				return
			}

			// The control: a read as audit reads it.
			tx, err := e.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tx.ExecContext(ctx, "SET TRANSACTION READ ONLY; SET LOCAL row_security = off; SET LOCAL search_path = pg_catalog, pg_temp")
			if err == nil {
				var n int64
				err = tx.QueryRowContext(ctx, "SELECT pg_catalog.count(id) FROM public.ids").Scan(&n)
			}
			tx.Rollback()
			if err == nil || !strings.Contains(err.Error(), "mallory's code ran as superuser") {
				t.Fatalf("the control: a superuser's read of public.ids = %v; want mallory's code run, or this test cannot tell", err)
			}

			_, err = audit.Run(ctx, e.db, o)
			want := tc.object + " calls " + tc.fn + ", a function of role " + mallory
			if !errors.Is(err, audit.ErrOthersCode) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "mallory's code ran") {
				t.Errorf("audit as a superuser = %v; want a refusal saying %q", err, want)
			}
		})
	}
}
