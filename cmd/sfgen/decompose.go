package main

import (
	"context"
	"io"

	"github.com/sfgen/sfgen/internal/snowflake"
)

const decomposeHelp = `
sfgen decompose ID [--json]

Splits a Snowflake ID (Twitter layout) into its timestamp, datacenter,
machine and sequence, with its time in UTC and its bits. ID is a decimal
integer from 0 to 9223372036854775807.

Examples:
  sfgen decompose 4194439168
  sfgen decompose 1541815603606036480 --json
`

func runDecompose(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("decompose", decomposeHelp, stdout, stderr)
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
	return printID(c, snowflake.Twitter, id, *asJSON)
}
