package attack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// An indexSetup is how the INSERT-only role gets its own schema searched
// before pg_catalog's operators while it inserts.
type indexSetup struct {
	name string
	// roleSetting: ALTER ROLE itself SET search_path (every session it
	// opens from then on); else sessionSet, if not "", is SET in the
	// session; else the default search_path, "$user", public, with the
	// role's schema named after the role.
	roleSetting bool
	sessionSet  bool
}

// attackIndex: the owner keeps a generated column and an expression
// index on snowflake_timestamp(id); an INSERT-only role with look-alike
// operators in a schema of its own inserts rows. It succeeded if amcheck
// (as the superuser, default search_path) finds the index corrupt or a
// stored time differs from the Go oracle.
func attackIndex(t *testing.T, e *env, release int, c indexSetup) (bool, string) {
	t.Helper()
	ctx := context.Background()
	e.mustInstall(release, sqlgen.Options{Layout: snowflake.Twitter()})
	e.exec(`CREATE TABLE public.t (
    id bigint PRIMARY KEY,
    ts timestamptz GENERATED ALWAYS AS (public.snowflake_timestamp(id)) STORED);
CREATE INDEX t_time ON public.t (public.snowflake_timestamp(id))`)

	writer := e.role("writer")
	w := pgident.Quote(writer)
	e.exec(fmt.Sprintf("CREATE SCHEMA %[1]s AUTHORIZATION %[1]s; GRANT INSERT ON public.t TO %[1]s", w))
	plantLookalikes(t, e.connect(writer), writer, writer, allLookalikes)
	hostile := w + ", pg_catalog"
	if c.roleSetting {
		e.connect(writer).exec(t, "ALTER ROLE "+w+" SET search_path = "+hostile)
	}
	ws := e.connect(writer)
	if c.sessionSet {
		ws.exec(t, "SET search_path = "+hostile)
	}
	var path string
	if err := ws.QueryRowContext(ctx, "SHOW search_path").Scan(&path); err != nil {
		t.Fatal(err)
	}

	// IDs from the Go composer, a millisecond apart, from one minute ago.
	start := time.Now().Add(-time.Minute).UnixMilli()
	var ids []string
	for i := int64(0); i < 50; i++ {
		id, err := snowflake.Compose(start+i, 1, 2, i)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, fmt.Sprintf("(%d)", id))
	}
	ws.exec(t, "INSERT INTO public.t (id) VALUES "+strings.Join(ids, ", "))
	details := fmt.Sprintf("writer's search_path %s; %s", path, hijacked(ws))

	var problems []string
	su := e.connect("")
	su.exec(t, "CREATE EXTENSION IF NOT EXISTS amcheck")
	if _, err := su.ExecContext(ctx, "SELECT public.bt_index_check('public.t_time'::regclass, heapallindexed => true)"); err != nil {
		problems = append(problems, "amcheck: "+err.Error())
	}
	rows, err := su.QueryContext(ctx, "SELECT id, ts FROM public.t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n, wrong, first := 0, 0, ""
	for rows.Next() {
		var id int64
		var ts time.Time
		if err := rows.Scan(&id, &ts); err != nil {
			t.Fatal(err)
		}
		n++
		p, err := snowflake.Decompose(snowflake.ID(id))
		if err != nil {
			t.Fatal(err)
		}
		if !ts.Equal(p.Time()) {
			if wrong++; wrong == 1 {
				first = fmt.Sprintf("id %d stored with ts %s, want %s", id, ts.UTC().Format(time.RFC3339Nano), p.Time().Format(time.RFC3339Nano))
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(ids) {
		t.Fatalf("%d rows in t, want %d", n, len(ids))
	}
	if wrong > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d stored times wrong (first: %s)", wrong, n, first))
	}
	if len(problems) == 0 {
		return false, details + "; amcheck clean and every stored time right"
	}
	return true, details + "; " + strings.Join(problems, "; ")
}

func TestIndexCorruption(t *testing.T) {
	t.Parallel()
	for _, c := range []indexSetup{
		{name: "role_search_path", roleSetting: true},
		{name: "session_search_path", sessionSet: true},
		{name: "default_search_path_user_schema"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			forEachRelease(t, func(t *testing.T, release int) {
				t.Parallel()
				ok, details := attackIndex(t, newEnv(t), release, c)
				judge(t, release, ok, details)
			})
		})
	}
}
