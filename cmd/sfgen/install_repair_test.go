package main

import (
	"database/sql"
	"strings"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// TestInstallRepairsAnOlderScript: release 1's plain script run over a
// schema sfgen install put at the latest release replaces its functions;
// verify says so, and the next sfgen install puts the latest release back
// (issue 28: it said "nothing to apply", and verify kept failing).
func TestInstallRepairsAnOlderScript(t *testing.T) {
	dsn := pgtest.DSN(t)
	if code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--datacenter", "1", "--machine", "1"); code != 0 {
		t.Fatalf("install = %d %s %s", code, out, errOut)
	}
	old, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(string(old)); err != nil {
		t.Fatalf("release 1's plain script over the latest: %v", err)
	}
	if code, out, _ := sfgen(t, "verify", "--dsn", dsn, "--count", "2000"); code == 0 || !strings.Contains(out, "an older release's plain script has replaced") {
		t.Fatalf("verify after release 1's script = %d:\n%s\nwant a failure naming the older script", code, out)
	}
	code, out, errOut := sfgen(t, "install", "--dsn", dsn)
	if code != 0 || strings.Contains(out, "nothing to apply") {
		t.Fatalf("install after release 1's script = %d, %q, %q; want the latest release applied again", code, out, errOut)
	}
	if code, out, errOut := sfgen(t, "verify", "--dsn", dsn, "--count", "2000"); code != 0 {
		t.Errorf("verify after the repair = %d:\n%s%s", code, out, errOut)
	}
	code, out, _ = sfgen(t, "node", "--dsn", dsn)
	if !strings.HasPrefix(out, "datacenter 1, machine 1 ") {
		t.Errorf("node after the repair = %d, %q; want 1/1 kept", code, out)
	}
	if code, out, _ := sfgen(t, "install", "--dsn", dsn); code != 0 || !strings.HasPrefix(out, "nothing to apply") {
		t.Errorf("install again = %d, %q; want nothing to apply", code, out)
	}
}
