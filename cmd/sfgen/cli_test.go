package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	snowflake "github.com/sfgen/sfgen"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// sfgen runs the CLI in-process and returns its exit status and output.
func sfgen(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestComposeBreakdown(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	code, out, errOut := sfgen(t, "compose", "--timestamp", "1288834975657", "--datacenter", "1", "--machine", "1", "--sequence", "0")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `4194439168

bits        0 00000000000000000000000000000001111101000 00001 00001 000000000000
sign        0                                          0
timestamp   00000000000000000000000000000001111101000  1288834975657 ms = 2010-11-04T01:42:55.657Z (epoch + 1000 ms)
datacenter  00001                                      1
machine     00001                                      1
sequence    000000000000                               0
base32      0000003X04400
base58      7Pebdh
`
	if out != want {
		t.Errorf("stdout =\n%s\nwant\n%s", out, want)
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour written to a non-terminal")
	}
}

// TestIDForms: --format prints the ID alone in a form, --from reads one,
// and base32 of 13 characters is read without it.
func TestIDForms(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		code      int
		out, errs string
	}{
		{[]string{"compose", "--timestamp", "1288834975657", "--datacenter", "1", "--machine", "1", "--format", "base32"}, 0, "0000003X04400\n", ""},
		{[]string{"compose", "--timestamp", "1288834975657", "--datacenter", "1", "--machine", "1", "--format", "base58"}, 0, "7Pebdh\n", ""},
		{[]string{"decompose", "0000003x04400", "--format", "decimal"}, 0, "4194439168\n", ""},
		{[]string{"decompose", "--from", "base58", "7Pebdh", "--format", "base32"}, 0, "0000003X04400\n", ""},
		{[]string{"decompose", "--from", "base32", "0000000000001", "--format", "decimal"}, 0, "1\n", ""},
		{[]string{"decompose", "0000000000001", "--format", "decimal"}, 0, "1\n", ""}, // decimal, which is the same here
		{[]string{"decompose", "23", "--from", "base58", "--format", "decimal"}, 0, "60\n", ""},
		{[]string{"decompose", "7Pebdh"}, 2, "", "sfgen decompose: id \"7Pebdh\" is not a decimal integer\n"},
		{[]string{"decompose", "12", "--from", "base58"}, 2, "", "sfgen decompose: invalid base58 ID \"12\": a leading \"1\" (the zero digit)\n"},
		{[]string{"decompose", "1", "--from", "hex"}, 2, "", "sfgen decompose: --from: unknown ID form \"hex\": want decimal, base32, base58\n"},
		{[]string{"decompose", "1", "--format", "hex"}, 2, "", "sfgen decompose: --format: unknown ID form \"hex\": want decimal, base32, base58\n"},
		{[]string{"compose", "--json", "--format", "base32"}, 2, "", "sfgen compose: --format and --json: choose one (the JSON has every form)\n"},
	} {
		code, out, errs := sfgen(t, tc.args...)
		if code != tc.code || out != tc.out || errs != tc.errs {
			t.Errorf("sfgen %q = %d, %q, %q; want %d, %q, %q", tc.args, code, out, errs, tc.code, tc.out, tc.errs)
		}
	}
}

func TestComposeDefaults(t *testing.T) {
	code, out, _ := sfgen(t, "compose", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var got idJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Datacenter != 0 || got.Machine != 0 || got.Sequence != 0 || got.TimestampMS < 1700000000000 {
		t.Errorf("defaults = %+v; want now and zeros", got)
	}
}

func TestJSON(t *testing.T) {
	for _, args := range [][]string{
		{"compose", "--timestamp=1288834975657", "--datacenter=1", "--machine=1", "--json"},
		{"decompose", "4194439168", "--json"},
		{"decompose", "--json", "4194439168"},
	} {
		code, out, errOut := sfgen(t, args...)
		want := `{"id":"4194439168","base32":"0000003X04400","base58":"7Pebdh","timestamp_ms":1288834975657,"time":"2010-11-04T01:42:55.657Z","datacenter_id":1,"machine_id":1,"sequence":0,"layout":"epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12"}` + "\n"
		if code != 0 || out != want || errOut != "" {
			t.Errorf("sfgen %v = %d, %q, %q; want 0, %q", args, code, out, errOut, want)
		}
	}
	code, out, _ := sfgen(t, "decompose", "9223372036854775807", "--json")
	if want := `{"id":"9223372036854775807","base32":"7ZZZZZZZZZZZZ","base58":"NQm6nKp8qFC","timestamp_ms":3487858230208,"time":"2080-07-10T17:30:30.208Z","datacenter_id":31,"machine_id":31,"sequence":4095,"layout":"epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12"}` + "\n"; code != 0 || out != want {
		t.Errorf("decompose max = %d, %q", code, out)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the one line on stderr
	}{
		{[]string{"compose", "--datacenter", "32"}, "sfgen compose: datacenter 32 out of range [0, 31]"},
		{[]string{"convert", "--dsn", "postgres://nobody@127.0.0.1:1/none", "--table", "t", "--schema", "app"},
			`sfgen convert: invalid value "app" for flag --schema: the table's schema is --table-schema here; --schema names sfgen's schema in every other command, and convert takes sfgen's as --sfgen-schema; see 'sfgen convert --help'`},
		{[]string{"compose", "--machine", "-1"}, "sfgen compose: machine -1 out of range [0, 31]"},
		{[]string{"compose", "--sequence", "4096"}, "sfgen compose: sequence 4096 out of range [0, 4095]"},
		{[]string{"compose", "--sequence", "abc"}, `sfgen compose: sequence "abc" is not a whole number; want an integer in [0, 4095]`},
		{[]string{"compose", "--datacenter", "1.5"}, `sfgen compose: datacenter "1.5" is not a whole number; want an integer in [0, 31]`},
		{[]string{"compose", "--timestamp", "1288834974656"}, "sfgen compose: timestamp 1288834974656 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"},
		{[]string{"compose", "--timestamp", "3487858230209"}, "sfgen compose: timestamp 3487858230209 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"},
		{[]string{"compose", "--timestamp", "yesterday"}, `sfgen compose: timestamp "yesterday" is not a whole number or an RFC 3339 time; want an integer in [1288834974657, 3487858230208] or a time from 2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z`},
		{[]string{"compose", "--timestamp", "2010-11-04T01:42:54.656999Z"}, "sfgen compose: timestamp 1288834974656 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"},
		{[]string{"compose", "--datacenter", "2023-11-14T22:13:20Z"}, `sfgen compose: datacenter "2023-11-14T22:13:20Z" is not a whole number; want an integer in [0, 31]`},
		{[]string{"compose", "--timestamp", "99999999999999999999"}, "sfgen compose: timestamp 99999999999999999999 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"},
		{[]string{"compose", "--bogus"}, "sfgen compose: unknown flag --bogus; see 'sfgen compose --help'"},
		{[]string{"compose", "--timestamp"}, "sfgen compose: flag needs an argument: --timestamp; see 'sfgen compose --help'"},
		{[]string{"compose", "extra"}, `sfgen compose: unexpected argument "extra"; compose takes only flags`},
		{[]string{"decompose"}, "sfgen decompose: missing ID; want a decimal integer in [0, 9223372036854775807] or a base32 ID (13 characters)"},
		{[]string{"decompose", "-5"}, "sfgen decompose: id -5 out of range [0, 9223372036854775807]"},
		{[]string{"decompose", "abc"}, `sfgen decompose: id "abc" is not a decimal integer`},
		{[]string{"decompose", "9223372036854775808"}, `sfgen decompose: id "9223372036854775808" is larger than 9223372036854775807`},
		{[]string{"decompose", "1", "2"}, `sfgen decompose: unexpected argument "2"; decompose takes one ID`},
		{[]string{"sql", "--schema", `x"; DROP TABLE t; --`}, `sfgen sql: schema "x\"; DROP TABLE t; --" has '"' at byte 1; want 1 to 63 lower-case letters, digits and underscores, not starting with a digit or pg_, and not a reserved keyword`},
		{[]string{"sql", "--datacenter", "40"}, "sfgen sql: datacenter 40 out of range [0, 31]"},
		{[]string{"migration"}, "sfgen migration: missing --dir; name your migrations directory"},
		{[]string{"install", "--schema", "user"}, `sfgen install: schema "user" is a reserved SQL keyword; want 1 to 63 lower-case letters, digits and underscores, not starting with a digit or pg_, and not a reserved keyword`},
		{[]string{"nosuch"}, `sfgen: unknown command "nosuch"; run 'sfgen --help' for the list`},
	} {
		code, out, errOut := sfgen(t, tc.args...)
		if code != 2 || out != "" || errOut != tc.want+"\n" {
			t.Errorf("sfgen %q = exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

func TestInstallNeedsDatabase(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	code, out, errOut := sfgen(t, "install")
	if code != 2 || out != "" || errOut != "sfgen install: no database: give --dsn URL or set DATABASE_URL\n" {
		t.Errorf("install without a database = %d, %q, %q", code, out, errOut)
	}
}

func TestInstallConnectionFailureHidesPassword(t *testing.T) {
	code, out, errOut := sfgen(t, "install", "--dsn", "postgres://app:hunter2@127.0.0.1:1/app?connect_timeout=5")
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "sfgen install: connect: ") {
		t.Errorf("install to a closed port = %d, %q, %q; want exit 1 and one line on stderr", code, out, errOut)
	}
	if strings.Contains(errOut, "hunter2") {
		t.Errorf("stderr shows the password: %q", errOut)
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := sfgen(t, "--help")
	if code != 0 || !strings.Contains(out, "Commands:") {
		t.Fatalf("sfgen --help = %d, %q", code, out)
	}
	for _, c := range commands {
		if !strings.Contains(out, "  "+c.name+" ") {
			t.Errorf("sfgen --help does not list %s", c.name)
		}
		code, out, errOut := sfgen(t, c.name, "--help")
		if code != 0 || errOut != "" || !strings.Contains(out, "Examples:") || !strings.Contains(out, "Flags:") {
			t.Errorf("sfgen %s --help = %d, stderr %q; want usage with examples and flags on stdout", c.name, code, errOut)
		}
	}
	if code, _, errOut := sfgen(t); code != 2 || !strings.Contains(errOut, "Commands:") {
		t.Errorf("sfgen with no command = %d, %q; want usage on stderr and exit 2", code, errOut)
	}
}

func TestSQLMatchesCommittedScript(t *testing.T) {
	code, out, _ := sfgen(t, "sql")
	want, err := os.ReadFile(filepath.Join("..", "..", "sql", "snowflake.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || out != string(want) {
		t.Errorf("sfgen sql differs from sql/snowflake.sql")
	}
	// Without node flags the script sets no node of its own: a first
	// install takes the session's settings, or leaves it unset.
	for _, tc := range []struct {
		args []string
		o    sqlgen.Options
	}{
		{nil, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true}},
		{[]string{"--schema", "ids"}, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", UnsetNode: true}},
		{[]string{"--schema", "ids", "--datacenter", "3", "--machine", "7"}, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 3, Machine: 7}},
	} {
		code, out, errOut := sfgen(t, append([]string{"sql"}, tc.args...)...)
		want, err := sqlgen.Script(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if code != 0 || errOut != "" || out != string(want) {
			t.Errorf("sfgen sql %q = %d, stderr %q; stdout differs from sqlgen.Script(%+v)", tc.args, code, errOut, tc.o)
		}
	}
}

func TestMigrationCommand(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "00003_users.sql"), []byte("-- +goose Up\n"), 0o644)
	code, out, errOut := sfgen(t, "migration", "--dir", dir, "--sequential")
	wantPath := filepath.Join(dir, "00004_sfgen_snowflake.sql")
	if code != 0 || out != wantPath+"\n" || errOut != "" {
		t.Fatalf("migration = %d, %q, %q; want %s", code, out, errOut, wantPath)
	}
	got, _ := os.ReadFile(wantPath)
	// No node flags: a file that sets no node of its own.
	want, _ := sqlgen.Migration(sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true})
	if !bytes.Equal(got, want) {
		t.Error("written migration differs from sqlgen.Migration with UnsetNode")
	}
	code, out, errOut = sfgen(t, "migration", "--dir", dir)
	if code != 0 || out != "" || !strings.Contains(errOut, fmt.Sprintf("up to date: %s installs sfgen release %d into schema public (00004_sfgen_snowflake.sql); nothing written", dir, sqlgen.Latest)) {
		t.Errorf("second migration = %d, %q, %q; want up to date", code, out, errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("an up-to-date directory got a file: %v", entries)
	}
	code, _, errOut = sfgen(t, "migration", "--dir", filepath.Join(dir, "missing"))
	if code != 2 || !strings.Contains(errOut, "not a directory") {
		t.Errorf("missing dir = %d, %q", code, errOut)
	}
}

// TestMigrationUpgradesReleaseOne puts release 1's migration, as sfgen
// wrote it then, in a directory and expects only the upgrade to be added,
// one file from release 1 to the latest, for the schema the existing file
// names.
func TestMigrationUpgradesReleaseOne(t *testing.T) {
	o := sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 3, Machine: 7}
	files, err := released.Migrations(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first := filepath.Join(dir, "00002_sfgen_snowflake.sql")
	os.WriteFile(first, files[0].SQL, 0o644)
	os.WriteFile(filepath.Join(dir, "00001_users.sql"), []byte("-- +goose Up\n"), 0o644)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--schema", "public"}, "--schema public conflicts with " + dir + "'s sfgen migrations, which install into schema ids"},
		{[]string{"--datacenter", "1", "--machine", "2"}, "the node flags apply to a first install only"},
	} {
		code, out, errOut := sfgen(t, append([]string{"migration", "--dir", dir, "--sequential"}, tc.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("migration %v = %d, %q, %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	code, out, errOut := sfgen(t, "migration", "--dir", dir, "--sequential", "--schema", "ids")
	wantPath := filepath.Join(dir, fmt.Sprintf("00003_sfgen_release_%d.sql", sqlgen.Latest))
	if code != 0 || out != wantPath+"\n" || errOut != "" {
		t.Fatalf("migration = %d, %q, %q; want %q", code, out, errOut, wantPath)
	}
	got, _ := os.ReadFile(wantPath)
	if want, _ := sqlgen.Upgrade(o); !bytes.Equal(got, want) {
		t.Errorf("written upgrade %s differs from sqlgen.Upgrade for schema ids", wantPath)
	}
	if b, _ := os.ReadFile(first); !bytes.Equal(b, files[0].SQL) {
		t.Error("the existing release 1 migration changed")
	}
	code, out, errOut = sfgen(t, "migration", "--dir", dir)
	if code != 0 || out != "" || !strings.Contains(errOut, "up to date") {
		t.Errorf("migration after the upgrade = %d, %q, %q; want up to date", code, out, errOut)
	}
}

func TestVersion(t *testing.T) {
	code, out, errOut := sfgen(t, "version")
	want := fmt.Sprintf(", SQL release %d, %s\n", sqlgen.Latest, runtime.Version())
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "sfgen ") || !strings.HasSuffix(out, want) {
		t.Errorf("version = %d, %q, %q; want sfgen <version>%s", code, out, errOut, want)
	}
	code, out, _ = sfgen(t, "version", "--json")
	var b struct {
		Version    string `json:"version"`
		SQLRelease int    `json:"sql_release"`
		Go         string `json:"go"`
	}
	if err := json.Unmarshal([]byte(out), &b); err != nil || code != 0 || b.Version == "" || b.SQLRelease != sqlgen.Latest || b.Go != runtime.Version() {
		t.Errorf("version --json = %d, %q (%+v, %v)", code, out, b, err)
	}
	if code, _, errOut := sfgen(t, "version", "extra"); code != 2 || errOut == "" {
		t.Errorf("version extra = %d, %q; want a usage error", code, errOut)
	}
}

// TestInstallKeepsTheNode: on a schema that has sfgen, node flags that
// name its node are fine, and any other node is refused (exit 2, nothing
// applied, the node as it was) with the 'sfgen node' command that would
// change it: install never silently ignores a node it was asked for. It
// holds for an upgrade too (a schema at release 1 stays at release 1).
func TestInstallKeepsTheNode(t *testing.T) {
	dsn := pgtest.DSN(t)
	node := func(schema string) string {
		t.Helper()
		code, out, errOut := sfgen(t, "node", "--dsn", dsn, "--schema", schema)
		if code != 0 {
			t.Fatalf("node: exit %d, %s", code, errOut)
		}
		return out
	}
	if code, _, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "ids", "--datacenter", "3", "--machine", "7"); code != 0 {
		t.Fatalf("first install: exit %d, %s", code, errOut)
	}
	if code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "ids", "--datacenter", "3", "--machine", "7"); code != 0 || errOut != "" || !strings.HasPrefix(out, "nothing to apply") {
		t.Errorf("install naming the node it has: exit %d, %q, %q; want nothing to apply", code, out, errOut)
	}
	before := node("ids")
	code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "ids", "--datacenter", "3", "--machine", "8")
	want := "sfgen install: schema ids already has sfgen with node datacenter 3, machine 7, which install keeps; to move it to datacenter 3, machine 8 run 'sfgen node --schema ids --datacenter 3 --machine 8'"
	if code != 2 || out != "" || !strings.HasPrefix(errOut, want) {
		t.Errorf("install asking for another node: exit %d, %q, %q; want 2 and %q", code, out, errOut, want)
	}
	oneLine(t, errOut)
	if after := node("ids"); after != before {
		t.Errorf("a refused install changed the node: %q, was %q", after, before)
	}

	// A schema at release 1 (its script), with a node flag for another node.
	script, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: "old", Datacenter: 1, Machine: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	conn, _ := testSchema(t, dsn)
	if _, err := conn.Exec(context.Background(), string(script)); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = sfgen(t, "install", "--dsn", dsn, "--schema", "old", "--datacenter", "9", "--machine", "2")
	if code != 2 || out != "" || !strings.Contains(errOut, "node datacenter 1, machine 2, which install keeps") {
		t.Errorf("upgrade asking for another node: exit %d, %q, %q; want 2, refused", code, out, errOut)
	}
	if got := node("old"); !strings.HasPrefix(got, "datacenter 1, machine 2 (schema old, sfgen release 1,") {
		t.Errorf("after the refused upgrade: %q; want release 1 with node 1/2", got)
	}
}

// TestHalfANodeRefused: a node is given whole or not at all. One of
// --datacenter and --machine without the other is exit 2 with one line,
// on every command that takes them, before it reads any database or
// writes any file (the DSN names no server, the directory stays empty).
func TestHalfANodeRefused(t *testing.T) {
	dir := t.TempDir()
	const dsn = "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
	for _, cmd := range [][]string{
		{"install", "--dsn", dsn},
		{"sql"},
		{"migration", "--dir", dir},
		{"node", "--dsn", dsn},
		{"next"},
	} {
		for _, half := range []struct {
			args []string
			want string
		}{
			{[]string{"--datacenter", "1"}, "--datacenter 1 without --machine: give both --datacenter and --machine, or neither"},
			{[]string{"--machine", "3"}, "--machine 3 without --datacenter: give both --datacenter and --machine, or neither"},
		} {
			code, out, errOut := sfgen(t, append(slices.Clone(cmd), half.args...)...)
			if want := "sfgen " + cmd[0] + ": " + half.want + "\n"; code != exitUsage || out != "" || errOut != want {
				t.Errorf("sfgen %q = %d, %q, %q; want exit %d and %q", append(slices.Clone(cmd), half.args...), code, out, errOut, exitUsage, want)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused migration wrote %v", entries)
	}
}

// TestEmptySchemaRefused: a schema flag given empty is exit 2 with one
// line on every command that takes one, sfgen's schema or a table's,
// never public unawares (issue 43, item 8: a script with an unset
// variable installed into public). Nothing is connected to: the
// database named is unreachable, and the refusal comes first.
func TestEmptySchemaRefused(t *testing.T) {
	const nowhere = "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
	for _, tc := range []struct {
		args []string // the command and what it needs besides the empty flag
		flag string
	}{
		{[]string{"sql"}, "schema"},
		{[]string{"migration", "--dir", t.TempDir()}, "schema"},
		{[]string{"install", "--dsn", nowhere}, "schema"},
		{[]string{"node", "--dsn", nowhere}, "schema"},
		{[]string{"verify", "--dsn", nowhere}, "schema"},
		{[]string{"next", "--dsn", nowhere}, "schema"},
		{[]string{"bench", "--dsn", nowhere}, "schema"},
		{[]string{"resume", "--dsn", nowhere}, "schema"},
		{[]string{"audit", "--dsn", nowhere, "--table", "t"}, "table-schema"},
		{[]string{"convert", "--dsn", nowhere, "--table", "t"}, "table-schema"},
		{[]string{"convert", "--dsn", nowhere, "--table", "t"}, "sfgen-schema"},
	} {
		for _, form := range [][]string{{"--" + tc.flag, ""}, {"--" + tc.flag + "="}} {
			args := append(slices.Clone(tc.args), form...)
			code, out, errOut := sfgen(t, args...)
			want := "sfgen " + tc.args[0] + ": --" + tc.flag + " is empty: give a schema's name, or leave --" + tc.flag + " out for public\n"
			if code != exitUsage || out != "" || errOut != want {
				t.Errorf("sfgen %q = %d, %q, %q; want exit 2 and %q", args, code, out, errOut, want)
			}
		}
	}
}

// TestHelpStartsWithSummary: every command's --help says first, in one
// line, what the command does (its line in sfgen --help), then a blank
// line and the usage (issue 43, item 9: the help ran to 70-100 lines of
// prose with no short summary first).
func TestHelpStartsWithSummary(t *testing.T) {
	for _, c := range commands {
		code, out, _ := sfgen(t, c.name, "--help")
		want := "sfgen " + c.name + ": " + c.summary + "\n\nUsage:\n  sfgen " + c.name
		if code != exitOK || !strings.HasPrefix(out, want) {
			first, _, _ := strings.Cut(out, "\n")
			t.Errorf("sfgen %s --help = exit %d, first line %q; want %q", c.name, code, first, want)
		}
	}
}
