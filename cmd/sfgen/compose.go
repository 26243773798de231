package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/idkit"
)

const composeHelp = `
sfgen compose [--layout NAME|SPEC] [--timestamp MS|TIME] [--datacenter N] [--machine N] [--sequence N] [--json | --format FORM]

Builds one Snowflake ID in the layout (Twitter's unless --layout says
otherwise) and shows its bits. --timestamp is Unix milliseconds or an
RFC 3339 time (2023-11-14T22:13:20.5Z, any offset), which counts as its
millisecond rounded down, as serve's API and page read it; whole numbers
here and everywhere in sfgen are decimal, with an optional sign and
leading zeros allowed. An omitted --timestamp means now; omitted
--datacenter, --machine and --sequence mean 0. The ranges of the fields
are the layout's: 'sfgen compose --layout L --help' shows them.
--format prints the ID alone in decimal, base32 (Crockford's, 13
characters, which sort as the IDs do) or base58, as the SQL function
snowflake_format() writes it.

Examples:
  sfgen compose --timestamp 1288834975657 --datacenter 1 --machine 1 --sequence 0
  sfgen compose --datacenter 3 --json
  sfgen compose --datacenter 3 --format base32
  sfgen compose --timestamp 2023-11-14T22:13:20Z --machine 7
  sfgen compose --layout discord --timestamp 1462015105796 --datacenter 1 --sequence 7
  sfgen compose --layout "epoch=1600000000000 timestamp=41 datacenter=4 machine=6 sequence=12" --machine 63
`

func runCompose(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("compose", composeHelp, stdout, stderr)
	lf, code, done := c.layoutVar(args)
	if done {
		return code
	}
	l := lf.layout
	ts := c.fieldVar(l, snowflake.FieldTimestamp, "Unix time in `MS`, or an RFC 3339 time", "now")
	dc := c.fieldVar(l, snowflake.FieldDatacenter, "datacenter `N`", "")
	m := c.fieldVar(l, snowflake.FieldMachine, "machine (worker) `N`", "")
	seq := c.fieldVar(l, snowflake.FieldSequence, "sequence `N`", "")
	asJSON := c.fs.Bool("json", false, "print one JSON object instead of the breakdown")
	format := c.fs.String("format", "", "print only the ID, in `FORM`: decimal, base32 or base58")
	if code, done := c.parseFlags(args); done {
		return code
	}
	ms := time.Now().UnixMilli()
	if ts.set {
		ms = ts.Int64()
	}
	id, err := l.Compose(ms, dc.Int64(), m.Int64(), seq.Int64())
	if err != nil {
		return c.usageError("%v", err)
	}
	return printIDAs(c, l, id, *asJSON, *format)
}

// idJSON is the JSON form of one ID, shared by compose, decompose, next
// and serve's API (idkit.Breakdown).
type idJSON idkit.Breakdown

// newIDJSON returns the JSON form of id, whose parts in layout l are p.
func newIDJSON(l snowflake.Layout, id snowflake.ID, p snowflake.Parts) idJSON {
	return idJSON(idkit.NewBreakdown(l, id, p))
}

// timeFormat is RFC 3339 in UTC with exactly three fractional digits.
const timeFormat = idkit.TimeFormat

// printIDAs is printID, or with form (one of idkit.Forms) the ID alone in
// that form.
func printIDAs(c *cli, l snowflake.Layout, id snowflake.ID, asJSON bool, form string) int {
	if form == "" {
		return printID(c, l, id, asJSON)
	}
	if err := idkit.CheckForm(form); err != nil {
		return c.usageError("--format: %v", err)
	}
	if asJSON {
		return c.usageError("--format and --json: choose one (the JSON has every form)")
	}
	if _, err := l.Decompose(id); err != nil {
		return c.usageError("%v", err)
	}
	s, err := idkit.FormatID(id, form)
	if err != nil {
		return c.usageError("%v", err)
	}
	fmt.Fprintln(c.stdout, s)
	return exitOK
}

func printID(c *cli, l snowflake.Layout, id snowflake.ID, asJSON bool) int {
	p, err := l.Decompose(id)
	if err != nil {
		return c.usageError("%v", err)
	}
	if asJSON {
		b, err := json.Marshal(newIDJSON(l, id, p))
		if err != nil {
			return c.fail("%v", err)
		}
		fmt.Fprintf(c.stdout, "%s\n", b)
		return exitOK
	}
	writeBreakdown(c.stdout, l, id, p, useColor(c.stdout))
	return exitOK
}

// writeBreakdown prints the ID, then one line per segment of its bits with
// the segment's value: the layout of the web tool sfgen replaces, plus the
// decoding it lacked.
func writeBreakdown(w io.Writer, l snowflake.Layout, id snowflake.ID, p snowflake.Parts, color bool) {
	segs := idkit.Segments(l, id)
	paint := func(i int, s string) string {
		if !color {
			return s
		}
		return segmentColors[i%len(segmentColors)] + s + "\x1b[0m"
	}
	fmt.Fprintln(w, id)
	fmt.Fprint(w, "\nbits        ")
	for i, s := range segs {
		if i > 0 {
			fmt.Fprint(w, " ")
		}
		fmt.Fprint(w, paint(i, s.Bits))
	}
	fmt.Fprintln(w)
	for i, s := range segs {
		fmt.Fprintf(w, "%-11s %s%*s  %d", s.Name, paint(i, s.Bits), int(l.Bits(snowflake.FieldTimestamp))-len(s.Bits), "", s.Value)
		if s.Name == snowflake.FieldTimestamp.String() {
			fmt.Fprintf(w, " ms = %s (epoch + %d ms)", p.Time().Format(timeFormat), s.Value-l.Epoch())
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%-11s %s\n%-11s %s\n", snowflake.Base32, id.Base32(), snowflake.Base58, id.Base58())
}

// segmentColors are the ANSI colours of the sign, timestamp, datacenter,
// machine and sequence segments.
var segmentColors = []string{"\x1b[2m", "\x1b[36m", "\x1b[33m", "\x1b[35m", "\x1b[32m"}
