package attack

import (
	"context"
	"fmt"
	snowflake "github.com/sfgen/sfgen"
	"strings"
	"testing"
	"time"

	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// An overload is a function mallory (CREATE on sfgen's schema) adds under
// the name of one that sfgen's bodies call with no arguments: with a
// default for its only parameter, a call with none matches both, and
// PostgreSQL refuses it as "not unique".
type overload struct {
	name  string
	since int    // the first release that calls the function
	sig   string // the parameters
	body  string // a SQL function body returning bigint
}

var overloads = []overload{
	// Node 31/31: what next_id would put in its IDs if it chose mallory's.
	{name: "snowflake_node_bits", since: 1, sig: "x integer DEFAULT 0", body: "SELECT 4190208::bigint"},
	{name: "snowflake_node_bits", since: 1, sig: "x text DEFAULT ''", body: "SELECT 4190208::bigint"},
	{name: "snowflake_node_bits", since: 1, sig: "VARIADIC x integer[] DEFAULT '{}'", body: "SELECT 4190208::bigint"},
	{name: "snowflake_next_id_slow", since: 1, sig: "x integer DEFAULT 0", body: "SELECT 7::bigint"},
	{name: "snowflake_next_state", since: 2, sig: "x integer DEFAULT 0", body: "SELECT 7::bigint"},
}

// attackOverload: after install into public, mallory creates o there;
// then the superuser calls snowflake_next_id() 50 times back to back
// (the fast path) and 10 times 10 ms apart (the slow path), and
// snowflake_node(). It succeeded if a call failed or an ID or the node is
// not the database's.
func attackOverload(t *testing.T, e *env, release int, o overload) (bool, string) {
	t.Helper()
	ctx := context.Background()
	node := [2]int64{1, 2}
	e.mustInstall(release, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: node[0], Machine: node[1]})
	mallory := e.role("mallory")
	e.exec("GRANT CREATE ON SCHEMA public TO " + pgident.Quote(mallory))
	decl := fmt.Sprintf("public.%s(%s)", o.name, o.sig)
	e.connect(mallory).exec(t, fmt.Sprintf("CREATE FUNCTION %s RETURNS bigint LANGUAGE sql AS %s", decl, pgident.QuoteLiteral(o.body)))

	s := e.connect("")
	var problems []string
	calls := 0
	for i := 0; i < 60; i++ {
		if i >= 50 {
			time.Sleep(10 * time.Millisecond)
		}
		calls++
		var id int64
		var before, after time.Time
		path := "fast"
		if i >= 50 {
			path = "slow"
		}
		if err := s.QueryRowContext(ctx, "SELECT pg_catalog.clock_timestamp(), public.snowflake_next_id(), pg_catalog.clock_timestamp()").Scan(&before, &id, &after); err != nil {
			problems = append(problems, fmt.Sprintf("snowflake_next_id() call %d (%s path): %s", i+1, path, pgMessage(err)))
			if i < 50 {
				i = 49 // on to the slow path
			} else {
				break
			}
			continue
		}
		if msg := checkNewID(id, node, before, after); msg != "" {
			problems = append(problems, fmt.Sprintf("snowflake_next_id() call %d (%s path) = %d: %s", i+1, path, id, msg))
		}
	}
	var dc, m int64
	if err := s.QueryRowContext(ctx, "SELECT * FROM public.snowflake_node()").Scan(&dc, &m); err != nil {
		problems = append(problems, "snowflake_node(): "+pgMessage(err))
	} else if dc != node[0] || m != node[1] {
		problems = append(problems, fmt.Sprintf("snowflake_node() = (%d, %d), want (%d, %d)", dc, m, node[0], node[1]))
	}
	details := fmt.Sprintf("mallory created %s; %d calls made", decl, calls)
	if len(problems) == 0 {
		return false, details + ", every ID and the node right"
	}
	return true, details + ": " + strings.Join(problems, "; ")
}

func TestOverloads(t *testing.T) {
	t.Parallel()
	for _, o := range overloads {
		name := o.name + "/" + strings.NewReplacer(" ", "_", "'", "", "{", "", "}", "", "[", "", "]", "").Replace(o.sig)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			forEachRelease(t, func(t *testing.T, release int) {
				if release < o.since {
					t.Skipf("release %d has no %s", release, o.name)
				}
				t.Parallel()
				ok, details := attackOverload(t, newEnv(t), release, o)
				judge(t, release, ok, details)
			})
		})
	}
}
