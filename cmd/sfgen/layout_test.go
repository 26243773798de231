package main

// Tests of --layout: its parsing and errors, the field ranges that follow
// it, the layout in JSON, in migration headers and in the database, and
// the acceptance checks (Discord's documented ID in Go and in SQL;
// Twitter, Discord and a custom layout side by side in one database, each
// passing verify). The database tests get theirs from pgtest.DSN.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/migrationdir"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// customSpec is a layout of neither preset: 4 datacenter and 6 machine bits.
const customSpec = "epoch=1600000000000 timestamp=41 datacenter=4 machine=6 sequence=12"

var discordSpec = snowflake.Discord().String()

// discordID is Discord's documented example: 2016-04-30T11:18:25.796Z,
// worker 1, process 0, increment 7.
const discordID = "175928847299117063"

func TestLayoutFlagErrors(t *testing.T) {
	const bad = `invalid layout "discrd": spec: not a preset name or a spec; want a preset (twitter, discord) or a spec such as "epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12"`
	for _, tc := range []struct {
		args []string
		want string // the one line on stderr
	}{
		{[]string{"decompose", "--layout", "discrd", "1"}, "sfgen decompose: --layout: " + bad},
		{[]string{"compose", "--layout=discrd"}, "sfgen compose: --layout: " + bad},
		{[]string{"next", "--layout", "discrd"}, "sfgen next: --layout: " + bad},
		{[]string{"sql", "--layout", "discrd"}, "sfgen sql: --layout: " + bad},
		{[]string{"migration", "--dir", "x", "--layout", "discrd"}, "sfgen migration: --layout: " + bad},
		{[]string{"install", "--layout", "discrd"}, "sfgen install: --layout: " + bad},
		{[]string{"verify", "--layout", "discrd"}, "sfgen verify: --layout: " + bad},
		{[]string{"bench", "--layout", "discrd"}, "sfgen bench: --layout: " + bad},
		// The last --layout counts, as with every flag.
		{[]string{"compose", "--layout", "twitter", "--layout", "discrd"}, "sfgen compose: --layout: " + bad},
		{[]string{"compose", "--layout", "epoch=1600000000000 timestamp=41 datacenter=4 machine=6 sequence=13"},
			`sfgen compose: --layout: invalid layout "epoch=1600000000000 timestamp=41 datacenter=4 machine=6 sequence=13": widths 64: timestamp 41 + datacenter 4 + machine 6 + sequence 13 bits; want 63, the bits of a positive bigint`},
		{[]string{"compose", "--layout", "epoch=1600000000000 timestamp=41 machine=6 datacenter=4 sequence=12"},
			`sfgen compose: --layout: invalid layout "epoch=1600000000000 timestamp=41 machine=6 datacenter=4 sequence=12": datacenter: out of order; want epoch, timestamp, datacenter, machine, sequence in that order`},
		{[]string{"compose", "--layout"}, "sfgen compose: flag needs an argument: --layout; see 'sfgen compose --help'"},
		// The field flags' ranges are the chosen layout's, wherever --layout is.
		{[]string{"compose", "--datacenter", "16", "--layout", customSpec}, "sfgen compose: datacenter 16 out of range [0, 15]"},
		{[]string{"compose", "--layout", customSpec, "--machine", "64"}, "sfgen compose: machine 64 out of range [0, 63]"},
		{[]string{"compose", "--layout", "discord", "--timestamp", "1420070399999"}, "sfgen compose: timestamp 1420070399999 out of range [1420070400000, 3619093655551] (2015-01-01T00:00:00.000Z to 2084-09-06T15:47:35.551Z)"},
		{[]string{"next", "--layout", customSpec, "--datacenter", "16"}, "sfgen next: datacenter 16 out of range [0, 15]"},
		{[]string{"sql", "--layout", customSpec, "--datacenter", "16"}, "sfgen sql: datacenter 16 out of range [0, 15]"},
		{[]string{"install", "--layout", customSpec, "--machine", "64"}, "sfgen install: machine 64 out of range [0, 63]"},
		{[]string{"migration", "--layout", customSpec, "--machine", "64"}, "sfgen migration: machine 64 out of range [0, 63]"},
	} {
		code, out, errOut := sfgen(t, tc.args...)
		if code != exitUsage || out != "" || errOut != tc.want+"\n" {
			t.Errorf("sfgen %q = exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestLayoutFlagRanges: a field within the custom layout's range but
// outside Twitter's is accepted, and help gives the chosen layout's ranges.
func TestLayoutFlagRanges(t *testing.T) {
	code, out, errOut := sfgen(t, "compose", "--layout", customSpec, "--timestamp", "1600000000000", "--datacenter", "15", "--machine", "63", "--json")
	want := `{"id":"4190208","base32":"000000003ZW00","base58":"NUby","timestamp_ms":1600000000000,"time":"2020-09-13T12:26:40.000Z","datacenter_id":15,"machine_id":63,"sequence":0,"layout":"` + customSpec + `"}` + "\n"
	if code != 0 || out != want || errOut != "" {
		t.Errorf("compose in the custom layout = %d, %q, %q; want 0, %q", code, out, errOut, want)
	}
	for _, cmd := range []string{"compose", "next", "sql", "migration", "install"} {
		_, help, _ := sfgen(t, cmd, "--layout", customSpec, "--help")
		for _, want := range []string{"N (0 to 15)", "N (0 to 63)"} {
			if !strings.Contains(help, want) {
				t.Errorf("sfgen %s --layout %q --help lacks %q:\n%s", cmd, customSpec, want, help)
			}
		}
	}
	_, help, _ := sfgen(t, "compose", "--layout", "discord", "--help")
	if !strings.Contains(help, "MS (1420070400000 to 3619093655551)") {
		t.Errorf("compose --layout discord --help lacks Discord's timestamp range:\n%s", help)
	}
	for _, c := range commands {
		_, help, _ := sfgen(t, c.name, "--help")
		has := strings.Contains(help, "--layout NAME|SPEC")
		wants := map[string]bool{"compose": true, "decompose": true, "next": true, "sql": true, "migration": true, "install": true, "verify": true, "bench": true, "audit": true, "serve": true, "build-native": true}[c.name]
		if has != wants {
			t.Errorf("sfgen %s --help has --layout: %v, want %v", c.name, has, wants)
		}
		if wants && !strings.Contains(help, "--layout") || wants && !strings.Contains(help[strings.Index(help, "Examples:"):], "--layout") {
			t.Errorf("sfgen %s --help has no example with --layout:\n%s", c.name, help)
		}
	}
}

// TestDecomposeDiscord is the vector: Discord's documented ID.
func TestDecomposeDiscord(t *testing.T) {
	for _, args := range [][]string{
		{"decompose", "--layout", "discord", discordID, "--json"},
		{"decompose", discordID, "--json", "--layout", discordSpec},
		{"compose", "--layout", "discord", "--timestamp", "1462015105796", "--datacenter", "1", "--sequence", "7", "--json"},
	} {
		code, out, errOut := sfgen(t, args...)
		want := `{"id":"175928847299117063","base32":"04W86BB0G4007","base58":"QgmVVkniES","timestamp_ms":1462015105796,"time":"2016-04-30T11:18:25.796Z","datacenter_id":1,"machine_id":0,"sequence":7,"layout":"` + discordSpec + `"}` + "\n"
		if code != 0 || out != want || errOut != "" {
			t.Errorf("sfgen %q = %d, %q, %q; want 0, %q", args, code, out, errOut, want)
		}
	}
	// Without --layout the same ID is Twitter's.
	_, out, _ := sfgen(t, "decompose", discordID, "--json")
	if !strings.Contains(out, `"timestamp_ms":1330779680453,`) || !strings.Contains(out, `"layout":"`+snowflake.Twitter().String()+`"`) {
		t.Errorf("decompose without --layout = %q; want Twitter's reading", out)
	}
}

// TestNextLayout: next --json in a custom layout gives IDs of that layout,
// with the node in its ranges.
func TestNextLayout(t *testing.T) {
	code, out, errOut := sfgen(t, "next", "--layout", customSpec, "--datacenter", "15", "--machine", "63", "--count", "3", "--json")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	l, _ := snowflake.ParseLayout(customSpec)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var got idJSON
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		p, err := l.Decompose(got.ID)
		if err != nil || got.Layout != l || p.Datacenter != 15 || p.Machine != 63 || got.Datacenter != 15 || got.Machine != 63 || got.TimestampMS != p.Timestamp {
			t.Errorf("line %s: %+v in the custom layout (%v); want node 15/63 and the layout", line, p, err)
		}
	}
}

// TestSQLDiscordInDatabase: 'sfgen sql --layout discord --schema discord'
// run on a database (as psql would: one simple-protocol query) decodes
// Discord's ID as Go does, and records the layout.
func TestSQLDiscordInDatabase(t *testing.T) {
	dsn := pgtest.DSN(t)
	code, script, errOut := sfgen(t, "sql", "--layout", "discord", "--schema", "discord")
	if code != 0 || errOut != "" {
		t.Fatalf("sql = %d, %q", code, errOut)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, script, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	var ts int64
	var dc, m, seq int
	var layout string
	if err := conn.QueryRow(ctx, "SELECT * FROM discord.snowflake_decompose(175928847299117063)").Scan(&ts, &dc, &m, &seq); err != nil {
		t.Fatal(err)
	}
	if ts != 1462015105796 || dc != 1 || m != 0 || seq != 7 {
		t.Errorf("discord.snowflake_decompose = %d, %d, %d, %d; want 1462015105796, 1, 0, 7", ts, dc, m, seq)
	}
	if err := conn.QueryRow(ctx, "SELECT discord.snowflake_layout()").Scan(&layout); err != nil || layout != discordSpec {
		t.Errorf("discord.snowflake_layout() = %q, %v; want %q", layout, err, discordSpec)
	}
}

// TestLayoutsSideBySide: Twitter in public, Discord in schema discord and
// a custom layout in schema custom, installed into one database with
// 'sfgen install', each pass 'sfgen verify' without --layout (it reads each
// schema's layout); --layout that disagrees with a schema is refused by
// verify and install, naming both layouts; node shows each schema's layout
// and takes its ranges.
func TestLayoutsSideBySide(t *testing.T) {
	dsn := pgtest.DSN(t)
	layouts := []struct{ schema, flag, spec, name string }{
		{"public", "twitter", snowflake.Twitter().String(), "twitter"},
		{"discord", "discord", discordSpec, "discord"},
		{"custom", customSpec, customSpec, customSpec},
	}
	for _, l := range layouts {
		code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", l.schema, "--layout", l.flag, "--datacenter", "1", "--machine", "2")
		if code != 0 || errOut != "" || !strings.Contains(out, fmt.Sprintf("schema %s is at sfgen release %d\n", l.schema, sqlgen.Latest)) {
			t.Fatalf("install --schema %s --layout %s = %d, %q, %q", l.schema, l.flag, code, out, errOut)
		}
	}
	for _, l := range layouts {
		code, out, errOut := sfgen(t, "verify", "--dsn", dsn, "--schema", l.schema, "--count", "2000", "--seed", "7", "--json")
		var rep struct {
			OK         bool   `json:"ok"`
			Layout     string `json:"layout"`
			Schema     string `json:"schema"`
			Mismatches int    `json:"mismatches"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || !rep.OK || rep.Layout != l.spec || rep.Schema != l.schema {
			t.Errorf("verify --schema %s = %d, %+v (%v), stderr %q; want ok for layout %s", l.schema, code, rep, err, errOut, l.spec)
		}
		code, out, errOut = sfgen(t, "verify", "--dsn", dsn, "--schema", l.schema, "--count", "500", "--layout", l.flag)
		if code != 0 || !strings.Contains(out, ", schema "+l.schema+", layout ") || !strings.Contains(out, l.spec) {
			t.Errorf("verify --schema %s --layout %s = %d, %q, %q; want 0 and the layout in the report", l.schema, l.flag, code, out, errOut)
		}
		code, out, errOut = sfgen(t, "node", "--dsn", dsn, "--schema", l.schema)
		if want := fmt.Sprintf("datacenter 1, machine 2 (schema %s, sfgen release %d, layout %s)\n", l.schema, sqlgen.Latest, l.name); code != 0 || out != want {
			t.Errorf("node --schema %s = %d, %q, %q; want %q", l.schema, code, out, errOut, want)
		}
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"verify", "--schema", "discord", "--layout", "twitter"}, exitFail,
			"sfgen verify: schema discord was generated for layout discord (" + discordSpec + "), not --layout twitter (" + snowflake.Twitter().String() + "); leave --layout out to check the layout the schema records"},
		{[]string{"verify", "--schema", "public", "--layout", customSpec}, exitFail,
			"sfgen verify: schema public was generated for layout twitter (" + snowflake.Twitter().String() + "), not --layout " + customSpec + "; leave --layout out to check the layout the schema records"},
		{[]string{"install", "--schema", "discord", "--layout", "twitter"}, exitFail,
			`sfgen install: schema discord holds sfgen for layout discord (` + discordSpec + `), not --layout twitter (` + snowflake.Twitter().String() + `); give --layout "discord" for this schema, or install into another one`},
		{[]string{"bench", "--schema", "custom", "--layout", "discord"}, exitFail,
			"sfgen bench: schema custom was generated for layout " + customSpec + ", not --layout discord (" + discordSpec + ")"},
		// node takes its ranges from the schema's layout.
		{[]string{"node", "--schema", "custom", "--datacenter", "16", "--machine", "0"}, exitUsage,
			"sfgen node: datacenter 16 out of range [0, 15] in schema custom's layout, " + customSpec},
		{[]string{"node", "--schema", "public", "--datacenter", "0", "--machine", "32"}, exitUsage,
			"sfgen node: machine 32 out of range [0, 31] in schema public's layout, twitter (" + snowflake.Twitter().String() + ")"},
	} {
		code, out, errOut := sfgen(t, append(tc.args, "--dsn", dsn)...)
		if code != tc.code || out != "" || errOut != tc.want+"\n" {
			t.Errorf("sfgen %q = %d, %q, %q; want %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
	// Without --layout, install takes an existing schema's own (issue 28:
	// it assumed Twitter's and refused).
	for _, schema := range []string{"discord", "custom"} {
		code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", schema)
		if want := fmt.Sprintf("nothing to apply: schema %s is at sfgen release %d\n", schema, sqlgen.Latest); code != 0 || out != want || errOut != "" {
			t.Errorf("install --schema %s without --layout = %d, %q, %q; want 0 and %q", schema, code, out, errOut, want)
		}
	}
	// A node in the custom layout's range but outside Twitter's is set.
	code, out, errOut := sfgen(t, "node", "--dsn", dsn, "--schema", "custom", "--datacenter", "15", "--machine", "63")
	if want := fmt.Sprintf("datacenter 1, machine 2 -> datacenter 15, machine 63 (schema custom, sfgen release %d, layout %s)\n", sqlgen.Latest, customSpec); code != 0 || out != want {
		t.Errorf("node --schema custom --datacenter 15 --machine 63 = %d, %q, %q; want %q", code, out, errOut, want)
	}
	// Each schema keeps its own layout and node: public is untouched.
	code, out, _ = sfgen(t, "verify", "--dsn", dsn, "--schema", "custom", "--count", "500")
	if code != 0 || !strings.Contains(out, "another node than 15/63") {
		t.Errorf("verify --schema custom after node = %d, %q", code, out)
	}
}

// TestMigrationLayout: the layout goes into a new migration's header; a
// directory's headers give the layout of its upgrade; a conflicting
// --layout is refused, naming both.
func TestMigrationLayout(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := sfgen(t, "migration", "--dir", dir, "--sequential", "--layout", "discord")
	path := filepath.Join(dir, "00001_sfgen_snowflake.sql")
	if code != 0 || out != path+"\n" || errOut != "" {
		t.Fatalf("migration --layout discord = %d, %q, %q", code, out, errOut)
	}
	got, _ := os.ReadFile(path)
	// No node flags: a file that sets no node of its own.
	if want, _ := sqlgen.Migration(sqlgen.Options{Layout: snowflake.Discord(), UnsetNode: true}); !bytes.Equal(got, want) {
		t.Error("the migration differs from sqlgen.Migration for the Discord layout with UnsetNode")
	}
	found, err := migrationdir.Find(dir)
	if err != nil || len(found) != 1 || found[0].Layout != discordSpec {
		t.Errorf("the migration's header: %+v, %v; want layout %s", found, err, discordSpec)
	}
	for _, flag := range []string{"twitter", customSpec} {
		l, _ := snowflake.ParseLayout(flag)
		code, out, errOut = sfgen(t, "migration", "--dir", dir, "--layout", flag)
		want := "sfgen migration: --layout " + describeLayout(l) + " conflicts with " + dir + "'s sfgen migrations, which are for layout discord (" + discordSpec + ") (00001_sfgen_snowflake.sql); leave --layout out, or keep another layout's migrations in another directory\n"
		if code != exitUsage || out != "" || errOut != want {
			t.Errorf("migration --layout %s over Discord's = %d, %q, %q; want 2, %q", flag, code, out, errOut, want)
		}
	}
	for _, args := range [][]string{{}, {"--layout", "discord"}} {
		code, out, errOut = sfgen(t, append([]string{"migration", "--dir", dir}, args...)...)
		if code != 0 || out != "" || !strings.Contains(errOut, "up to date") {
			t.Errorf("migration %q over Discord's = %d, %q, %q; want up to date", args, code, out, errOut)
		}
	}

	// Release 1 for the custom layout: the upgrade is for the header's layout.
	l, _ := snowflake.ParseLayout(customSpec)
	o := sqlgen.Options{Layout: l, Schema: "ids"}
	files, err := released.Migrations(o)
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, "00001_sfgen_snowflake.sql"), files[0].SQL, 0o644)
	code, out, errOut = sfgen(t, "migration", "--dir", dir, "--sequential", "--layout", "discord")
	if code != exitUsage || !strings.Contains(errOut, "--layout discord ("+discordSpec+") conflicts with") || !strings.Contains(errOut, "which are for layout "+customSpec+" (00001_sfgen_snowflake.sql)") {
		t.Errorf("migration --layout discord over the custom release 1 = %d, %q, %q", code, out, errOut)
	}
	code, out, errOut = sfgen(t, "migration", "--dir", dir, "--sequential")
	upgrade := filepath.Join(dir, fmt.Sprintf("00002_sfgen_release_%d.sql", sqlgen.Latest))
	if code != 0 || out != upgrade+"\n" || errOut != "" {
		t.Fatalf("migration over the custom release 1 = %d, %q, %q; want %q", code, out, errOut, upgrade)
	}
	got, _ = os.ReadFile(upgrade)
	if want, _ := sqlgen.Upgrade(o); !bytes.Equal(got, want) {
		t.Errorf("the upgrade %s differs from sqlgen.Upgrade for the custom layout", upgrade)
	}

	// A header whose layout this sfgen cannot read.
	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, "00001_sfgen_snowflake.sql"), bytes.Replace(files[0].SQL, []byte("-- Layout: "+customSpec), []byte("-- Layout: epoch=1 timestamp=41"), 1), 0o644)
	code, _, errOut = sfgen(t, "migration", "--dir", dir)
	if code != exitUsage || errOut != "sfgen migration: 00001_sfgen_snowflake.sql: -- Layout: header: invalid layout \"epoch=1 timestamp=41\": datacenter: missing\n" {
		t.Errorf("migration over an unreadable layout header = %d, %q", code, errOut)
	}
}

// TestVerifyThrowawayLayout: without a database, verify installs and
// checks the layout --layout names.
func TestVerifyThrowawayLayout(t *testing.T) {
	withoutDatabase(t)
	code, out, errOut := sfgen(t, "verify", "--layout", customSpec, "--count", "2000", "--seed", "3")
	if code != 0 || !strings.Contains(out, ", layout "+customSpec+"\n") || !strings.Contains(out, "ok: PostgreSQL and Go agree") {
		t.Errorf("verify --layout custom (throwaway) = %d\n%s\n%s", code, out, errOut)
	}
}

// TestWaitPastLayout: next's wait for the millisecond of its last ID to
// pass reads that millisecond in next's layout (in Twitter's, a Discord ID
// of now is years in the past, and the wait would end at once).
func TestWaitPastLayout(t *testing.T) {
	for _, l := range []snowflake.Layout{snowflake.Twitter(), snowflake.Discord()} {
		ms := time.Now().UnixMilli() + 2
		id, err := l.Compose(ms, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		waitPast(l, id)
		if now := time.Now().UnixMilli(); now <= ms {
			t.Errorf("%v: waitPast returned at %d, not past the ID's millisecond %d", l, now, ms)
		}
	}
}
