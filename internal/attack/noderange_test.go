package attack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/idkit"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// A nodeRangeSetup is the hostile search_path the owner calls
// snowflake_set_node() under, and how it names the function.
type nodeRangeSetup struct {
	name       string
	searchPath string // $ATTACKER: mallory's schema
	call       string
}

// attackNodeRange: mallory's schema, first on the owner's search_path,
// holds look-alike < and > on integers that are always false; the owner
// sets node 99/0 (datacenter 99 is out of range). It succeeded if
// set_node raised no error, or if 2000 calls of snowflake_next_id() (10
// ms pauses every 40 calls, for the slow path) give a repeated ID, an ID
// out of order, or one whose node or time is not the database's
// (snowflake_node(), the clock).
func attackNodeRange(t *testing.T, e *env, release int, c nodeRangeSetup) (bool, string) {
	t.Helper()
	ctx := context.Background()
	installed := [2]int64{1, 2}
	e.mustInstall(release, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: installed[0], Machine: installed[1]})
	mallory := e.role("mallory")
	e.exec(fmt.Sprintf("CREATE SCHEMA %[1]s AUTHORIZATION %[1]s", pgident.Quote(mallory)))
	var ops []lookalike
	for _, o := range exactLookalikes {
		if (o.op == "<" || o.op == ">") && o.left == "integer" && o.right == "integer" {
			ops = append(ops, o)
		}
	}
	plantLookalikes(t, e.connect(mallory), mallory, mallory, ops)

	owner := e.connect("")
	owner.exec(t, "SET search_path = "+strings.ReplaceAll(c.searchPath, "$ATTACKER", pgident.Quote(mallory)))
	_, err := owner.ExecContext(ctx, c.call)
	details := fmt.Sprintf("the owner, with search_path %s, ran %s: ", c.searchPath, c.call)
	succeeded := err == nil
	if err != nil {
		details += pgMessage(err)
		var pe *pgconn.PgError
		want := idkit.RangeMessage(snowflake.FieldDatacenter, "99", 0, 31)
		if !errors.As(err, &pe) || pe.Code != "22003" || pe.Message != want {
			t.Errorf("%s: %v; want SQLSTATE 22003 %q", c.call, err, want)
		}
	} else {
		details += "no error"
	}
	details += "; " + hijacked(owner)

	// The IDs, from a session with the default search_path.
	s := e.connect("")
	var dc, m int64
	if err := s.QueryRowContext(ctx, "SELECT * FROM public.snowflake_node()").Scan(&dc, &m); err != nil {
		t.Fatalf("snowflake_node(): %v", err)
	}
	details += fmt.Sprintf("; snowflake_node() = (%d, %d)", dc, m)
	if err != nil && (dc != installed[0] || m != installed[1]) {
		succeeded = true
		details += fmt.Sprintf(", want the installed (%d, %d)", installed[0], installed[1])
	}
	const calls = 2000
	seen := make(map[int64]bool, calls)
	var dups, backwards, wrongNode, wrongTime int
	var first []string
	note := func(n *int, format string, args ...any) {
		if *n++; *n == 1 {
			first = append(first, fmt.Sprintf(format, args...))
		}
	}
	last := int64(-1)
	for i := 0; i < calls; i++ {
		if i%40 == 39 {
			time.Sleep(10 * time.Millisecond)
		}
		var id int64
		var before, after time.Time
		if err := s.QueryRowContext(ctx, "SELECT pg_catalog.clock_timestamp(), public.snowflake_next_id(), pg_catalog.clock_timestamp()").Scan(&before, &id, &after); err != nil {
			return true, details + fmt.Sprintf("; snowflake_next_id() call %d: %s", i+1, pgMessage(err))
		}
		if seen[id] {
			note(&dups, "call %d repeats %d", i+1, id)
		}
		seen[id] = true
		if id <= last {
			note(&backwards, "call %d gave %d after %d", i+1, id, last)
		}
		last = id
		p, err := snowflake.Decompose(snowflake.ID(id))
		if err != nil {
			t.Fatal(err)
		}
		if p.Datacenter != dc || p.Machine != m {
			note(&wrongNode, "call %d: %d has node %d/%d", i+1, id, p.Datacenter, p.Machine)
		}
		if p.Timestamp > after.UnixMilli() || p.Timestamp < before.UnixMilli()-1000 {
			note(&wrongTime, "call %d: %d is dated %s, the clock said %s..%s", i+1, id,
				p.Time().Format("15:04:05.000"), before.UTC().Format("15:04:05.000"), after.UTC().Format("15:04:05.000"))
		}
	}
	details += fmt.Sprintf("; %d IDs: %d repeated, %d out of order, %d with another node, %d dated outside their call",
		calls, dups, backwards, wrongNode, wrongTime)
	if len(first) > 0 {
		details += " (first: " + strings.Join(first, "; ") + ")"
	}
	return succeeded || dups+backwards+wrongNode+wrongTime > 0, details
}

func TestNodeRangeUnderHostileSearchPath(t *testing.T) {
	t.Parallel()
	for _, c := range []nodeRangeSetup{
		{name: "attacker_public_pg_catalog", searchPath: "$ATTACKER, public, pg_catalog", call: "SELECT snowflake_set_node(99, 0)"},
		{name: "attacker_pg_catalog_qualified_call", searchPath: "$ATTACKER, pg_catalog", call: "SELECT public.snowflake_set_node(99, 0)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			forEachRelease(t, func(t *testing.T, release int) {
				t.Parallel()
				ok, details := attackNodeRange(t, newEnv(t), release, c)
				judge(t, release, ok, details)
			})
		})
	}
}
