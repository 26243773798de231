package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"time"

	"github.com/sfgen/sfgen/internal/snowflake"
)

// maxCount is the largest --count next accepts: about 2.5 seconds of IDs
// at one node's limit of 4,096,000 a second.
const maxCount = 10_000_000

const nextHelp = `
sfgen next [--layout NAME|SPEC] [--datacenter N] [--machine N] [--count N] [--json]

Generates --count Snowflake IDs in the layout (Twitter's unless --layout
says otherwise) for one node, one a line, each larger than the one before.
Omitted --datacenter and --machine mean 0; their ranges are the layout's.

A node issues at most 2^sequence bits IDs a millisecond (Twitter's 12
bits: 4096, 4,096,000 a second) and no ID is ahead of the clock, so in
Twitter's layout --count 10000000 takes about 2.5 seconds.
next exits only once the millisecond of its last ID has passed, so runs one
after another for the same node do not repeat IDs; runs at the same time
must use different nodes.

Examples:
  sfgen next
  sfgen next --datacenter 1 --machine 7 --count 1000
  sfgen next --count 3 --json
  sfgen next --layout discord --datacenter 1 --count 5
`

func runNext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("next", nextHelp, stdout, stderr)
	lf, code, done := c.layoutVar(args)
	if done {
		return code
	}
	l := lf.layout
	node := c.nodeFlags(l, "%s `N`")
	count := c.intVar("count", "how many IDs, `N`", 1, 1, maxCount)
	asJSON := c.fs.Bool("json", false, "print one JSON object a line instead of the bare ID")
	if code, done := c.parseFlags(args); done {
		return code
	}
	g, err := l.NewGenerator(node.values())
	if err != nil {
		return c.usageError("%v", err)
	}
	n := count.Int64()

	w := bufio.NewWriterSize(stdout, 64<<10)
	enc := json.NewEncoder(w)
	var buf []byte
	var last snowflake.ID
	issued := int64(0)
	for ; issued < n; issued++ {
		if issued%4096 == 0 && (ctx.Err() != nil || w.Flush() != nil) {
			break
		}
		id, err := g.Next()
		if err != nil {
			w.Flush()
			return c.fail("%v", err)
		}
		last = id
		if *asJSON {
			p, _ := l.Decompose(id) // a generated ID is never negative
			enc.Encode(newIDJSON(l, id, p))
			continue
		}
		buf = strconv.AppendInt(buf[:0], int64(id), 10)
		buf = append(buf, '\n')
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		return c.fail("write: %v", err)
	}
	if issued > 0 {
		waitPast(l, last)
	}
	if issued < n {
		return c.fail("interrupted after %d of %d IDs", issued, n)
	}
	return exitOK
}

// waitPast returns once the wall clock has passed the millisecond of id,
// so that the next process to generate IDs for the same node cannot start
// in that millisecond and issue id again. It waits for at most 10 ms, in
// case the wall clock was set back while IDs were generated. id is in
// layout l.
func waitPast(l snowflake.Layout, id snowflake.ID) {
	p, err := l.Decompose(id)
	if err != nil {
		return
	}
	deadline := time.Now().Add(10 * time.Millisecond)
	for now := time.Now(); now.UnixMilli() <= p.Timestamp && now.Before(deadline); now = time.Now() {
		time.Sleep(min(time.UnixMilli(p.Timestamp+1).Sub(now), deadline.Sub(now)))
	}
}
