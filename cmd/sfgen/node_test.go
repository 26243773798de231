package main

import (
	"context"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// installSchema installs sfgen's script into a fresh schema of dsn.
func installSchema(t *testing.T, dsn string, o sqlgen.Options) string {
	t.Helper()
	conn, schema := testSchema(t, dsn)
	o.Schema = schema
	script, err := sqlgen.Script(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), string(script)); err != nil {
		t.Fatal(err)
	}
	return schema
}

func oneLine(t *testing.T, s string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Errorf("stderr is not one line: %q", s)
	}
}

func TestNodeShowAndSet(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{Datacenter: 2, Machine: 4})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "datacenter 2, machine 4 (schema " + schema + ", sfgen release 2, layout twitter)\n"},
		{[]string{"--datacenter", "3", "--machine", "7"}, "datacenter 2, machine 4 -> datacenter 3, machine 7 (schema " + schema + ", sfgen release 2, layout twitter)\n"},
		{[]string{"--machine", "31"}, "datacenter 3, machine 7 -> datacenter 3, machine 31 (schema " + schema + ", sfgen release 2, layout twitter)\n"},
		{nil, "datacenter 3, machine 31 (schema " + schema + ", sfgen release 2, layout twitter)\n"},
	} {
		code, out, errOut := sfgen(t, append([]string{"node", "--dsn", dsn, "--schema", schema}, tc.args...)...)
		if code != 0 || out != tc.want || errOut != "" {
			t.Errorf("node %v: exit %d, stdout %q, stderr %q; want 0, %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestNodeNeedsTheOwner: a role that may use sfgen's schema reads the node
// but cannot change it, and sfgen says so in its own words: node's hint to
// connect as the owner, and, for a role granted EXECUTE on
// snowflake_set_node() (which PUBLIC lacks), the function's own refusal,
// naming the owner.
func TestNodeNeedsTheOwner(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{})
	conn, _ := testSchema(t, dsn)
	ctx := context.Background()
	var owner string
	if err := conn.QueryRow(ctx, "SELECT current_user").Scan(&owner); err != nil {
		t.Fatal(err)
	}
	role, appDSN := pgtest.LoginRole(t, dsn, "app", "")
	if _, err := conn.Exec(ctx, "GRANT USAGE ON SCHEMA "+schema+" TO "+role); err != nil {
		t.Fatal(err)
	}
	unchanged := "datacenter 0, machine 0 (schema " + schema + ", sfgen release 2, layout twitter)\n"
	code, out, errOut := sfgen(t, "node", "--dsn", appDSN, "--schema", schema)
	if code != 0 || out != unchanged || errOut != "" {
		t.Errorf("a non-owner reading the node: exit %d, %q %q; want 0, %q", code, out, errOut, unchanged)
	}

	const hint = "; connect as the role that owns sfgen's functions\n"
	for _, tc := range []struct {
		name, grant, want string
	}{
		// PostgreSQL refuses the call: node adds whom to connect as.
		{"no EXECUTE", "", "sfgen node: permission denied: permission denied for function snowflake_set_node" + hint},
		// The call runs, and snowflake_set_node() refuses in its own words.
		{"EXECUTE granted", "GRANT EXECUTE ON FUNCTION " + schema + ".snowflake_set_node(integer, integer) TO " + role,
			"sfgen node: permission denied: only the owner of \"" + schema + "\".snowflake_node_bits() (role " + owner + ") can change the node: "},
	} {
		if tc.grant != "" {
			if _, err := conn.Exec(ctx, tc.grant); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errOut := sfgen(t, "node", "--dsn", appDSN, "--schema", schema, "--datacenter", "1")
		if code != 1 || out != "" || !strings.HasPrefix(errOut, tc.want) || !strings.HasSuffix(errOut, hint) {
			t.Errorf("%s: a non-owner setting the node: exit %d, stdout %q, stderr %q; want 1, nothing, and %q...%q", tc.name, code, out, errOut, tc.want, hint)
		}
		oneLine(t, errOut)
		if code, out, _ := sfgen(t, "node", "--dsn", dsn, "--schema", schema); code != 0 || out != unchanged {
			t.Errorf("%s: node after a refused change: %q; want %q", tc.name, out, unchanged)
		}
	}
}

func TestNodeErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		// Outside every layout's range: refused before connecting (the
		// schema's layout's range is checked once read; TestLayoutsSideBySide).
		{[]string{"--dsn", "postgres://x@/db?host=/nonexistent", "--datacenter", "2147483648"}, 2, []string{"datacenter", "2147483648", "[0, 2147483647]"}},
		{[]string{"--dsn", "postgres://x@/db?host=/nonexistent", "--datacenter", "-1"}, 2, []string{"datacenter", "-1", "[0, 2147483647]"}},
		{[]string{"--dsn", "postgres://x@/db?host=/nonexistent", "--machine", "x"}, 2, []string{"machine", `"x"`, "[0, 2147483647]"}},
		{[]string{"--dsn", "postgres://x@/db?host=/nonexistent", "--schema", "Bad-Name"}, 2, []string{"Bad-Name"}},
		{[]string{"--datacenter", "1"}, 2, []string{"--dsn", "DATABASE_URL"}},
		{[]string{"extra"}, 2, []string{"extra"}},
		{[]string{"--dsn", "postgres://u:s3cretpw@/db?host=/nonexistent&connect_timeout=2"}, 1, []string{"connect"}},
	} {
		code, out, errOut := sfgen(t, append([]string{"node"}, tc.args...)...)
		if code != tc.code || out != "" {
			t.Errorf("node %v: exit %d, stdout %q; want %d and nothing", tc.args, code, out, tc.code)
		}
		oneLine(t, errOut)
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("node %v: stderr %q does not name %s", tc.args, errOut, w)
			}
		}
		if strings.Contains(errOut, "s3cretpw") {
			t.Errorf("node %v: stderr shows the password: %q", tc.args, errOut)
		}
	}
}

func TestNodeNotInstalled(t *testing.T) {
	dsn := pgtest.DSN(t)
	_, schema := testSchema(t, dsn)
	code, _, errOut := sfgen(t, "node", "--dsn", dsn, "--schema", schema)
	if code != 1 || !strings.Contains(errOut, "not installed") {
		t.Errorf("exit %d, stderr %q; want 1 and not installed", code, errOut)
	}
	oneLine(t, errOut)
}

func TestNodeHelp(t *testing.T) {
	code, out, _ := sfgen(t, "node", "--help")
	if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "--datacenter") {
		t.Errorf("node --help: exit %d\n%s", code, out)
	}
}

// TestNodeSaysTheRelease installs release 1: node shows it and warns that
// it is older than this sfgen's.
func TestNodeSaysTheRelease(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn, schema := testSchema(t, dsn)
	script, err := sqlgen.ScriptAt(sqlgen.Options{Schema: schema, Datacenter: 1, Machine: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), string(script)); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sfgen(t, "node", "--dsn", dsn, "--schema", schema)
	if code != 0 || out != "datacenter 1, machine 2 (schema "+schema+", sfgen release 1, layout twitter)\n" ||
		!strings.Contains(errOut, "is at sfgen release 1, older than this sfgen's release 2") {
		t.Errorf("node on release 1 = %d, %q, %q", code, out, errOut)
	}
}
