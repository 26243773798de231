package main

import (
	"context"
	"encoding/json"
	"fmt"
	snowflake "github.com/sfgen/sfgen"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// TestVerifyThrowaway runs `sfgen verify` with no database: it starts its
// own PostgreSQL, installs with goose, checks and tears down.
func TestVerifyThrowaway(t *testing.T) {
	withoutDatabase(t)
	code, out, errOut := sfgen(t, "verify", "--count", "20000", "--seed", "42")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"fixed vectors  22 checked",
		"random inputs  20000 checked",
		"(seed 42)",
		"mismatches     0",
		"ok: PostgreSQL and Go agree on every input",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "starting a throwaway PostgreSQL") {
		t.Errorf("stderr does not say it starts a throwaway PostgreSQL: %q", errOut)
	}
}

// testSchema returns a schema name of the test's own on dsn's database,
// dropped afterwards.
func testSchema(t *testing.T, dsn string) (*pgx.Conn, string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("sfgen_cli_%d_%s", os.Getpid(), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_")))
	t.Cleanup(func() {
		conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	return conn, schema
}

// TestVerifyCatchesBrokenFunctions installs functions with a wrong shift
// and expects exit status 1 and a mismatch report with the seed.
func TestVerifyCatchesBrokenFunctions(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn, schema := testSchema(t, dsn)
	script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	const from = "machine_id::bigint OPERATOR(pg_catalog.<<) 12"
	if !strings.Contains(string(script), from) {
		t.Fatalf("script has no %q to break", from)
	}
	broken := strings.Replace(string(script), from, "machine_id::bigint OPERATOR(pg_catalog.<<) 11", 1)
	if _, err := conn.Exec(context.Background(), broken); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sfgen(t, "verify", "--dsn", dsn, "--schema", schema, "--count", "5000", "--seed", "9")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"FAIL: PostgreSQL and Go disagree", "snowflake_compose(1288834975657, 1, 1, 0)", "go: 4194439168", "db: 4194437120", "reproduce with: sfgen verify --seed 9"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = sfgen(t, "verify", "--dsn", dsn, "--schema", schema, "--count", "5000", "--seed", "9", "--json")
	var rep struct {
		OK         bool   `json:"ok"`
		Seed       uint64 `json:"seed"`
		Mismatches int    `json:"mismatches"`
		Examples   []struct{ Check, Go, DB string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	if code != 1 || rep.OK || rep.Seed != 9 || rep.Mismatches == 0 || len(rep.Examples) == 0 {
		t.Errorf("--json = exit %d, %+v", code, rep)
	}
}

// TestVerifyFlagsAnOlderRelease installs release 1, then each later
// release in turn, and expects verify to fail on every release before the
// latest, saying how to upgrade, although every answer agrees; at the
// latest it passes.
func TestVerifyFlagsAnOlderRelease(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn, schema := testSchema(t, dsn)
	type step struct {
		release int
		code    int
		want    []string
	}
	var steps []step
	for r := 1; r < sqlgen.Latest; r++ {
		steps = append(steps, step{r, 1, []string{"mismatches     0",
			fmt.Sprintf("release        %d, older than this sfgen's release %d", r, sqlgen.Latest),
			fmt.Sprintf("FAIL: schema %s is at sfgen release %d and lacks release %d's fixes", schema, r, sqlgen.Latest),
			"sfgen install --dsn URL --schema " + schema}})
	}
	steps = append(steps, step{sqlgen.Latest, 0, []string{fmt.Sprintf("release        %d, this sfgen's", sqlgen.Latest), "ok: PostgreSQL and Go agree on every input"}})
	for _, step := range steps {
		script, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}, step.release)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(context.Background(), string(script)); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := sfgen(t, "verify", "--dsn", dsn, "--schema", schema, "--count", "1000", "--seed", "3")
		if code != step.code {
			t.Errorf("release %d: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", step.release, code, step.code, out, errOut)
		}
		for _, want := range step.want {
			if !strings.Contains(out, want) {
				t.Errorf("release %d: report lacks %q:\n%s", step.release, want, out)
			}
		}
		code, out, _ = sfgen(t, "verify", "--dsn", dsn, "--schema", schema, "--count", "10", "--json")
		var rep struct {
			OK            bool `json:"ok"`
			Release       int  `json:"release"`
			LatestRelease int  `json:"latest_release"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.OK != (step.code == 0) || rep.Release != step.release || rep.LatestRelease != sqlgen.Latest {
			t.Errorf("release %d: --json = exit %d, %+v, %v\n%s", step.release, code, rep, err, out)
		}
	}
}

// TestVerifyOlderReleaseWithBrokenGenerator: on a schema at an older
// release whose generator also fails its check (here its state a
// minute behind the clock and its guard saying a catch-up is recent for
// ever, so that it never catches up), the
// report names the broken guarantee and still says how to upgrade.
func TestVerifyOlderReleaseWithBrokenGenerator(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn, schema := testSchema(t, dsn)
	older := sqlgen.Latest - 1
	script, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema, Datacenter: 1, Machine: 1}, older)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := conn.Exec(ctx, string(script)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT setval('"+schema+".snowflake_state', (trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 60000) << 12), setval('"+schema+"."+catalog.CatchUpGuard(older)+"', 4398046511103)"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sfgen(t, "verify", "--dsn", dsn, "--schema", schema, "--count", "100")
	for _, want := range []string{
		"FAIL: snowflake_next_id() broke a guarantee: dated outside the run",
		fmt.Sprintf("FAIL: schema %s is at sfgen release %d and lacks release %d's fixes", schema, older, sqlgen.Latest),
		"sfgen install --dsn URL --schema " + schema,
	} {
		if code != exitFail || !strings.Contains(out, want) {
			t.Errorf("exit %d; want %d and a report with %q:\n%s%s", code, exitFail, want, out, errOut)
		}
	}
}

func TestVerifyNotInstalled(t *testing.T) {
	dsn := pgtest.DSN(t)
	_, schema := testSchema(t, dsn)
	code, out, errOut := sfgen(t, "verify", "--dsn", dsn, "--schema", schema)
	if code != 1 || out != "" || !strings.Contains(errOut, "sfgen functions are not installed in schema "+schema) || !strings.Contains(errOut, "sfgen install") {
		t.Errorf("verify on an empty schema = %d, %q, %q", code, out, errOut)
	}
}

func TestVerifyUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "--count", "-1"}, `sfgen verify: count -1 out of range [0, 1000000000]`},
		{[]string{"verify", "--count", "1000000001"}, `sfgen verify: count 1000000001 out of range [0, 1000000000]`},
		{[]string{"verify", "--count", "x"}, `sfgen verify: count "x" is not a whole number; want an integer in [0, 1000000000]`},
		{[]string{"verify", "--seed", "-3"}, `sfgen verify: seed -3 out of range [0, 18446744073709551615]`},
		{[]string{"verify", "--seed", "18446744073709551616"}, `sfgen verify: seed 18446744073709551616 out of range [0, 18446744073709551615]`},
		{[]string{"verify", "--seed", "1.5"}, `sfgen verify: seed "1.5" is not a whole number; want an integer in [0, 18446744073709551615]`},
		{[]string{"verify", "--bogus"}, `sfgen verify: unknown flag --bogus; see 'sfgen verify --help'`},
		{[]string{"verify", "--schema", "Bad"}, `sfgen verify: schema "Bad" has 'B' at byte 0; want 1 to 63 lower-case letters, digits and underscores, not starting with a digit or pg_, and not a reserved keyword`},
	} {
		code, out, errOut := sfgen(t, tc.args...)
		if code != 2 || out != "" || errOut != tc.want+"\n" {
			t.Errorf("sfgen %q = %d, %q, %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestVerifyFlagsAnOlderScriptOverALaterRelease runs release 1's plain
// script over release 2: snowflake_release() still says 2, but verify
// names the functions it put back, and fails until the latest release's
// script puts them back.
func TestVerifyFlagsAnOlderScriptOverALaterRelease(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn, schema := testSchema(t, dsn)
	for _, release := range []int{2, 1} {
		script, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}, release)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(context.Background(), string(script)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ := sfgen(t, "verify", "--dsn", dsn, "--schema", schema, "--count", "100")
	if want := "FAIL: schema " + schema + " says sfgen release 2, but an older release's plain script has replaced 10 of its functions (" + schema + ".snowflake_compose(bigint,integer,integer,integer), "; code != 1 || !strings.Contains(out, want) {
		t.Errorf("verify over a mix = %d; want 1 and %q in\n%s", code, want, out)
	}
	script, _ := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema})
	if _, err := conn.Exec(context.Background(), string(script)); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := sfgen(t, "verify", "--dsn", dsn, "--schema", schema, "--count", "100"); code != 0 {
		t.Errorf("verify after the latest release's script = %d\n%s", code, out)
	}
}
