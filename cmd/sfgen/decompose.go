package main

import (
	"context"
	"io"

	snowflake "github.com/sfgen/sfgen"
)

const decomposeHelp = `
sfgen decompose ID [--layout NAME|SPEC] [--json]

Splits a Snowflake ID into its timestamp, datacenter, machine and
sequence in the layout (Twitter's unless --layout says otherwise), with
its time in UTC and its bits. ID is a decimal integer from 0 to
9223372036854775807; as every whole number sfgen reads (its flags, serve's
API and page), it may have a sign and leading zeros: +5 and 05 are 5.

Examples:
  sfgen decompose 4194439168
  sfgen decompose 1541815603606036480 --json
  sfgen decompose --layout discord 175928847299117063 --json
`

func runDecompose(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("decompose", decomposeHelp, stdout, stderr)
	lf, lcode, ldone := c.layoutVar(args)
	if ldone {
		return lcode
	}
	asJSON := c.fs.Bool("json", false, "print one JSON object instead of the breakdown")
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	switch len(pos) {
	case 0:
		return c.usageError("missing ID; want a decimal integer in [0, 9223372036854775807]")
	case 1:
	default:
		return c.usageError("unexpected argument %q; decompose takes one ID", pos[1])
	}
	id, err := snowflake.ParseID(pos[0])
	if err != nil {
		return c.usageError("%v", err)
	}
	return printID(c, lf.layout, id, *asJSON)
}
