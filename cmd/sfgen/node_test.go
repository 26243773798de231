package main

import (
	"context"
	"net/url"
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
		{nil, "datacenter 2, machine 4 (schema " + schema + ", sfgen release 2)\n"},
		{[]string{"--datacenter", "3", "--machine", "7"}, "datacenter 2, machine 4 -> datacenter 3, machine 7 (schema " + schema + ", sfgen release 2)\n"},
		{[]string{"--machine", "31"}, "datacenter 3, machine 7 -> datacenter 3, machine 31 (schema " + schema + ", sfgen release 2)\n"},
		{nil, "datacenter 3, machine 31 (schema " + schema + ", sfgen release 2)\n"},
	} {
		code, out, errOut := sfgen(t, append([]string{"node", "--dsn", dsn, "--schema", schema}, tc.args...)...)
		if code != 0 || out != tc.want || errOut != "" {
			t.Errorf("node %v: exit %d, stdout %q, stderr %q; want 0, %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

func TestNodeNeedsTheOwner(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{})
	conn, _ := testSchema(t, dsn)
	ctx := context.Background()
	role := schema + "_app"
	if _, err := conn.Exec(ctx, "CREATE ROLE "+role+" LOGIN; GRANT USAGE ON SCHEMA "+schema+" TO "+role); err != nil {
		t.Skipf("cannot create a role here: %v", err)
	}
	t.Cleanup(func() { conn.Exec(context.Background(), "DROP OWNED BY "+role+"; DROP ROLE "+role) })
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme != "postgres" && u.Scheme != "postgresql" {
		t.Skipf("DSN is not a URL: %v", err)
	}
	u.User = url.User(role)
	appDSN := u.String()
	code, out, errOut := sfgen(t, "node", "--dsn", appDSN, "--schema", schema)
	if code != 0 || out != "datacenter 0, machine 0 (schema "+schema+", sfgen release 2)\n" {
		t.Errorf("a non-owner reading the node: exit %d, %q %q", code, out, errOut)
	}
	code, _, errOut = sfgen(t, "node", "--dsn", appDSN, "--schema", schema, "--datacenter", "1")
	if code != 1 || !strings.Contains(errOut, "permission denied") {
		t.Errorf("a non-owner setting the node: exit %d, stderr %q; want 1 and permission denied", code, errOut)
	}
	oneLine(t, errOut)
	if code, out, _ := sfgen(t, "node", "--dsn", dsn, "--schema", schema); code != 0 || out != "datacenter 0, machine 0 (schema "+schema+", sfgen release 2)\n" {
		t.Errorf("node after a refused change: %q", out)
	}
}

func TestNodeErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--dsn", "postgres://x@/db?host=/nonexistent", "--datacenter", "32"}, 2, []string{"datacenter", "32", "[0, 31]"}},
		{[]string{"--dsn", "postgres://x@/db?host=/nonexistent", "--machine", "x"}, 2, []string{"machine", `"x"`, "[0, 31]"}},
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
	if code != 0 || out != "datacenter 1, machine 2 (schema "+schema+", sfgen release 1)\n" ||
		!strings.Contains(errOut, "is at sfgen release 1, older than this sfgen's release 2") {
		t.Errorf("node on release 1 = %d, %q, %q", code, out, errOut)
	}
}
