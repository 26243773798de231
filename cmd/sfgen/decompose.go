package main

import (
	"context"
	"io"

	"github.com/sfgen/sfgen/internal/idkit"
)

const decomposeHelp = `
sfgen decompose ID [--layout NAME|SPEC] [--from FORM] [--json | --format FORM]

Splits a Snowflake ID into its timestamp, datacenter, machine and
sequence in the layout (Twitter's unless --layout says otherwise), with
its time in UTC, its bits and its string forms. ID is a decimal integer
from 0 to 9223372036854775807; as every whole number sfgen reads (its
flags, serve's API and page), it may have a sign and leading zeros: +5
and 05 are 5. An ID of 13 characters that is not decimal is read as
base32 (Crockford's: any case, I and L for 1, O for 0); --from base58
reads base58, which is never guessed (a mistyped decimal ID is often
valid base58). --format prints the ID alone in decimal, base32 or base58,
as the SQL function snowflake_format() writes it.

Examples:
  sfgen decompose 4194439168
  sfgen decompose 0000003X04400
  sfgen decompose --from base58 7Pebdh --format decimal
  sfgen decompose 4194439168 --format base58
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
	from := c.fs.String("from", "", "read ID in `FORM`: decimal, base32 or base58 (default: decimal, or base32 for 13 characters)")
	format := c.fs.String("format", "", "print only the ID, in `FORM`: decimal, base32 or base58")
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	switch len(pos) {
	case 0:
		return c.usageError("%s", idkit.MissingID)
	case 1:
	default:
		return c.usageError("unexpected argument %q; decompose takes one ID", pos[1])
	}
	if *from != "" {
		if err := idkit.CheckForm(*from); err != nil {
			return c.usageError("--from: %v", err)
		}
	}
	id, err := idkit.ReadID(pos[0], *from)
	if err != nil {
		return c.usageError("%v", err)
	}
	return printIDAs(c, lf.layout, id, *asJSON, *format)
}
