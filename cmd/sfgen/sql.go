package main

import (
	"context"
	"io"

	"github.com/sfgen/sfgen/internal/sqlgen"
)

const sqlHelp = `
sfgen sql [--layout NAME|SPEC] [--schema NAME] [--datacenter N] [--machine N]

Prints the install script of the latest SQL release, rendered from the
same layout as the Go composer: the functions snowflake_compose,
snowflake_decompose, snowflake_timestamp, snowflake_first_id,
snowflake_last_id, snowflake_layout, snowflake_release, snowflake_node,
snowflake_set_node and snowflake_next_id, the node leases
(snowflake_lease_take, _renew, _release, _reserve and _unreserve), and
the objects they need (in SQL and PL/pgSQL). The script can run again on
the same database, upgrades an earlier release in place, and keeps the
node a schema has. On a first install it sets the node the flags give;
without them it takes the node from the session's settings
sfgen.datacenter and sfgen.machine, or leaves it unset, so that
snowflake_next_id() refuses to make IDs until 'sfgen node' sets one.

Run the script in one transaction: psql -1, or as one migration of a tool
that runs each migration in a transaction (dbmate, tern, Atlas; for
golang-migrate, which runs a file as one query, use 'sfgen migration
--format golang-migrate'). It has no BEGIN or COMMIT of its own, which
would end such a tool's transaction early; run outside one transaction
(psql without -1), it refuses before it changes anything, with SQLSTATE
25P01, and leaves the session read-only.

Examples:
  sfgen sql > snowflake.sql && psql -1 -v ON_ERROR_STOP=1 -f snowflake.sql
  sfgen sql | psql -1 -v ON_ERROR_STOP=1 "$DATABASE_URL"
  sfgen sql > snowflake.sql && PGOPTIONS='-c sfgen.datacenter=1 -c sfgen.machine=2' psql -1 -v ON_ERROR_STOP=1 -f snowflake.sql
  sfgen sql --schema ids --datacenter 2 --machine 5
`

func runSQL(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("sql", sqlHelp, stdout, stderr)
	var sf sqlFlags
	if code, done := sf.register(c, args); done {
		return code
	}
	if code, done := c.parseFlags(args); done {
		return code
	}
	if err := sf.node.half(); err != nil {
		return c.usageError("%v", err)
	}
	o := sf.options()
	script, err := sqlgen.Script(o)
	if err != nil {
		return c.usageError("%v", err)
	}
	if _, err := stdout.Write(script); err != nil {
		return c.fail("%v", err)
	}
	return exitOK
}
