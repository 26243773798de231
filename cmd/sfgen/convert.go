package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/convert"
)

const convertHelp = `
sfgen convert --dsn URL --table T [--column C] [--table-schema S] [--sfgen-schema S] [--dry-run] [--rewrite] [--json]

Moves an existing table's key (bigserial, serial, an identity column, a
sequence default, or a plain bigint, integer or smallint key) to sfgen's
snowflake_next_id(), in one transaction: new rows get Snowflake IDs of the
database's node, all above the values already there.

--table, --column and --table-schema name the table as 'sfgen audit' does,
so the same three flags audit it afterwards (--schema, which names sfgen's
schema in every other command, is refused here); --sfgen-schema names the
schema sfgen is installed in, what --schema is to 'sfgen install' and
'sfgen node'. --column defaults to the table's primary
key of one column; it must be a column that a primary key, a unique
constraint or a unique index has alone.

A bigint key: its default becomes snowflake_next_id() (an identity is
dropped first, and its sequence with it). The transaction takes an ACCESS
EXCLUSIVE lock on the table for a catalog change only, so for
milliseconds; it waits at most --lock-timeout for it, and when another
session holds a lock longer, it gives up (the inserts queued behind it go
on) and tries again, --retries times: inserts meanwhile wait a moment and
none fails. A sequence the old default used stays as it is (pg_dump's
setval still restores it; another column it feeds goes on using it).

An integer or smallint key: it and every column whose foreign key
references it become bigint in the same transaction, which rewrites those
tables under ACCESS EXCLUSIVE locks (no reads or writes until it ends).
Only with --rewrite; without it convert says which tables it would
rewrite and how big they are, and changes nothing (exit 2).

Under the locks it checks that every value the key holds is below the
first ID snowflake_next_id() makes now, and records that ID in sfgen's
private schema (<sfgen-schema>_sfgen.snowflake_conversion, made on first
use), where 'sfgen audit' finds it and counts the values below it as
legacy. So the role must own the tables and be sfgen's owner (or a member
of it). It refuses, changing nothing: a value at or above that first ID
(new IDs must sort after old ones), a column that is not a key or not an
integer, sfgen not installed in --sfgen-schema, before release 4, without
a node or in a schema other roles can create objects in, a partitioned
table, a partition or inheritance, a rewrite that a view, rule or policy
on the columns would block, and a table it alters whose constraints,
indexes, triggers, rules, policies, defaults or column types call a
function of a role other than the table's owner and superusers (found in
the catalogs, before any change, and named with its owner; --dry-run
too): a rewrite would run it with this role's privileges.

On Citus, through the coordinator: a distributed table's bigint key
defaults to snowflake_next_id_local() instead, which Citus copies to the
workers as it is, so each node makes IDs with its own generator and node
(install sfgen on every node first: docs/citus.md); a key or referencing
column of another type is refused (widen it with Citus first).

--dry-run prints the SQL it would run, the very script, with the locks and
rewrites it implies as comments, and changes nothing: it is a goose
migration as it stands (for the application's own migrations directory;
run by hand: psql -1 -f FILE), and checks the table again where it runs.

Exit status: 0 converted (or printed); 1 when the database cannot be
reached or the conversion failed (a lock not had on any try): nothing
changed; 2 on bad usage or a refusal: nothing changed.

Examples:
  sfgen convert --dsn postgres://app@localhost/app --table orders --dry-run
  sfgen convert --table orders
  sfgen convert --table users --table-schema app --sfgen-schema ids --rewrite
  sfgen convert --table users --dry-run > db/migrations/20260101000000_users_snowflake.sql
`

func runConvert(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("convert", convertHelp, stdout, stderr)
	dsnFlag := c.fs.String("dsn", "", dsnHelp)
	table := c.fs.String("table", "", "the `TABLE` to convert (required)")
	column := c.fs.String("column", "", "the key `COLUMN` (default: the table's primary key of one column)")
	schema := c.tableSchemaVar("the table's `SCHEMA`, as in sfgen audit", "convert takes sfgen's as --sfgen-schema")
	sfgenSchema := c.fs.String("sfgen-schema", catalog.Public.Name(), "the `SCHEMA` sfgen is installed in (install's and node's --schema)")
	dryRun := c.fs.Bool("dry-run", false, "print the SQL (a goose migration), change nothing")
	rewrite := c.fs.Bool("rewrite", false, "widen an integer or smallint key and its foreign keys to bigint: rewrites those tables under ACCESS EXCLUSIVE locks")
	asJSON := c.fs.Bool("json", false, "print the plan and the result as JSON")
	lockTimeout := c.fs.Duration("lock-timeout", convert.DefaultLockTimeout, "wait at most `D` for each lock")
	retries := c.intVar("retries", "try `N` more times when a lock is not had in time", convert.DefaultRetries, 0, 100)
	if code, done := c.parseFlags(args); done {
		return code
	}
	if *table == "" {
		return c.usageError("--table is required; see 'sfgen convert --help'")
	}
	o := convert.Options{Sfgen: *sfgenSchema, TableSchema: *schema, Table: *table, Column: *column,
		Rewrite: *rewrite, LockTimeout: *lockTimeout, Retries: retries.Int()}
	if retries.Int() == 0 {
		o.Retries = -1
	}
	if err := o.Check(); err != nil {
		return c.usageError("%v", err)
	}
	db, dsn, code, ok := c.requireDB(ctx, *dsnFlag)
	if !ok {
		return code
	}
	defer db.Close()
	p, err := convert.Prepare(ctx, db, o)
	switch {
	case *dryRun && errors.Is(err, convert.ErrNeedsRewrite):
		// Printed: the script is what --rewrite runs.
	case errors.Is(err, convert.ErrRefused):
		return c.usageError("%v", err)
	case err != nil:
		return c.fail("%s", redactErr(err, dsn))
	}
	if *dryRun {
		if *asJSON {
			return c.printJSON(struct {
				DryRun bool `json:"dry_run"`
				*convert.Plan
			}{true, p})
		}
		fmt.Fprint(stdout, p.SQL)
		if !strings.HasSuffix(p.SQL, "\n") {
			fmt.Fprintln(stdout)
		}
		return exitOK
	}
	if len(p.Rewrites) > 0 {
		fmt.Fprintf(stderr, "sfgen convert: rewriting %s under ACCESS EXCLUSIVE locks\n", rewrites(p.Rewrites))
	}
	r, err := p.Apply(ctx, db)
	switch {
	case errors.Is(err, convert.ErrRefused):
		return c.usageError("%v", err)
	case err != nil:
		return c.fail("%s", redactErr(err, dsn))
	}
	if *asJSON {
		return c.printJSON(struct {
			Converted bool `json:"converted"`
			*convert.Plan
			FirstID  string `json:"first_id"`
			Tries    int    `json:"tries"`
			LockedMs int64  `json:"locked_ms"`
		}{true, p, strconv.FormatInt(r.FirstID, 10), r.Tries, r.Locked.Milliseconds()})
	}
	printConverted(stdout, p, r)
	return exitOK
}

func (c *cli) printJSON(v any) int {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return c.fail("%v", err)
	}
	return exitOK
}

func rewrites(rs []convert.Rewrite) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.String())
	}
	return strings.Join(s, ", ")
}

func printConverted(w io.Writer, p *convert.Plan, r *convert.Result) {
	fmt.Fprintf(w, "converted %s (%s) to %s.%s(), layout %s, node %s\n", p.Key, p.Key.Type, p.Sfgen, p.NextID(), p.Layout.Name(), p.Node)
	when := ""
	if parts, err := p.Layout.Decompose(snowflake.ID(r.FirstID)); err == nil {
		when = " (" + fmtTime(parts.Time()) + ")"
	}
	fmt.Fprintf(w, "first ID  %d%s; recorded in %s: sfgen audit counts the values below it as legacy\n", r.FirstID, when, p.Record)
	var widened []string
	for _, c := range append([]convert.Column{p.Key}, p.Referencing...) {
		if c.Type != "bigint" {
			widened = append(widened, c.String())
		}
	}
	if len(widened) > 0 {
		fmt.Fprintf(w, "bigint    %s (rewrote %s)\n", strings.Join(widened, ", "), rewrites(p.Rewrites))
	}
	fmt.Fprintf(w, "locks     ACCESS EXCLUSIVE on %s, held %v (%d %s)\n", strings.Join(p.Locks, ", "), r.Locked.Round(time.Millisecond),
		r.Tries, map[bool]string{true: "try", false: "tries"}[r.Tries == 1])
	switch {
	case p.Identity != "":
		fmt.Fprintf(w, "identity  dropped, with its sequence %s\n", p.Sequence)
	case p.Sequence != "" && len(p.SharedWith) > 0:
		fmt.Fprintf(w, "sequence  %s kept as it was: %s go on using it\n", p.Sequence, strings.Join(p.SharedWith, ", "))
	case p.Sequence != "":
		fmt.Fprintf(w, "sequence  %s kept as it was, unused: drop it once you no longer need to go back\n", p.Sequence)
	}
}
