package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/resume"
)

const resumeHelp = `
sfgen resume [--dsn URL] [--schema NAME] [--after ID] [--json]

Makes this database's generator safe to take over a node's writes: it
raises the state of snowflake_next_id() so that every ID it makes from now
on is above every ID of the schema's node stored in this database, and
above --after.

Run it on a database that takes over writes another database made with
the same node: a logical replication subscriber after a switchover
(blue/green, an upgrade through logical replication), a copy restored
while its origin kept writing. The old writer's IDs reached this
database as rows; if its clock ran ahead of this one's, the generator here
would make some of the same IDs again. Run it after the last row arrived
and before this database takes writes; it needs no access to the old
writer.

It finds the columns whose default calls the schema's generator
(snowflake_next_id() or snowflake_next_id_local(), through pg_depend), and
reads the largest ID of the node in each: walking the column's index
backwards where it has one, scanning the table where not (it says which).
Give --after the largest ID the old writer made (from its own database,
or 'sfgen audit' there) for IDs stored elsewhere: other databases, queues,
caches. The state only moves forward, under the catch-up's turn, as a
catch-up moves it; IDs made right after may be dated ahead of the clock
until it catches up. Run it as the role that owns sfgen's objects (or a
superuser), which must be able to read the tables (row security that
would apply to it fails the read rather than run a policy). Planning a
read of a table runs the constant parts of its index expressions and
predicates: before any read, resume looks in the catalogs for the
functions each table's indexes, constraints, policies, partition key and
column types reach, reads a table whose functions are another role's as
its owner (SET ROLE, which a superuser may), and refuses, naming table,
object, function and owner (exit 2), a function of a third role, or of
an owner this role may not act as. Running it again changes nothing.

Exit status: 0 done; 1 on a failure (not ready, the turn not had);
2 on bad usage, or a refusal to run another role's code.

Examples:
  sfgen resume --dsn "$NEW_PRIMARY"
  sfgen resume --dsn "$NEW_PRIMARY" --schema ids --after 7134123456789012345
  sfgen resume --dsn "$NEW_PRIMARY" --json
`

func runResume(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("resume", resumeHelp, stdout, stderr)
	dsnFlag := c.fs.String("dsn", "", "the database that takes over the writes, `URL` (default $DATABASE_URL)")
	schemaName := c.schemaVar("sfgen's schema `NAME`")
	after := c.intVar("after", "raise the state above the ID `ID` as well", 0, 0, math.MaxInt64)
	asJSON := c.fs.Bool("json", false, "print what it found and did as one JSON object")
	if code, done := c.parseFlags(args); done {
		return code
	}
	schema, err := catalog.ParseSchema(*schemaName)
	if err != nil {
		return c.usageError("%v", err)
	}
	db, dsn, code, ok := c.requireDB(ctx, *dsnFlag)
	if !ok {
		return code
	}
	defer db.Close()
	r, err := resume.Run(ctx, db, resume.Options{Schema: schema, After: snowflake.ID(after.Int64())})
	if errors.Is(err, resume.ErrOthersCode) {
		return c.usageError("%v", err)
	}
	if err != nil {
		return c.fail("%s", redactErr(err, dsn))
	}
	if *asJSON {
		return c.printJSON(resumeJSON(r))
	}
	for _, col := range r.Columns {
		how := "scan of the table: no index on the column"
		if col.Index != "" {
			how = "index " + col.Index
		}
		largest := "no ID of the node"
		if col.Max != 0 {
			largest = fmt.Sprintf("largest ID of the node %d", col.Max)
		}
		fmt.Fprintf(stdout, "%s.%s: %s (%s)\n", col.Table, col.Column, largest, how)
	}
	if len(r.Columns) == 0 {
		fmt.Fprintf(stdout, "no column defaults to schema %s's generator\n", r.Schema)
	}
	if r.After != 0 {
		fmt.Fprintf(stdout, "--after %d\n", r.After)
	}
	switch {
	case r.Raised:
		fmt.Fprintf(stdout, "raised: schema %s's next IDs (%s) are above %d\n", r.Schema, r.Node, r.Above)
	default:
		fmt.Fprintf(stdout, "nothing to raise: schema %s's next IDs (%s) are above %d already\n", r.Schema, r.Node, r.Above)
	}
	return exitOK
}

func resumeJSON(r *resume.Report) any {
	type column struct {
		Table  string `json:"table"`
		Column string `json:"column"`
		Max    int64  `json:"max_id"`
		Index  string `json:"index,omitempty"`
	}
	cols := []column{}
	for _, c := range r.Columns {
		cols = append(cols, column{c.Table, c.Column, int64(c.Max), c.Index})
	}
	return struct {
		Schema     string   `json:"schema"`
		Datacenter int64    `json:"datacenter"`
		Machine    int64    `json:"machine"`
		Columns    []column `json:"columns"`
		After      int64    `json:"after"`
		Above      int64    `json:"above"`
		StateFrom  int64    `json:"state_from"`
		StateTo    int64    `json:"state_to"`
		Raised     bool     `json:"raised"`
	}{r.Schema, r.Node.Datacenter, r.Node.Machine, cols, int64(r.After), int64(r.Above), r.From, r.To, r.Raised}
}
