package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/sfgenpg"
)

// maxCount is the largest --count next accepts: about 2.5 seconds of IDs
// at one node's limit of 4,096,000 a second.
const maxCount = 10_000_000

const nextHelp = `
sfgen next [--layout NAME|SPEC] [--datacenter N] [--machine N] [--count N] [--json]
  sfgen next --dsn URL [--schema NAME] [--lease-ttl D] [--count N] [--json]

Generates --count Snowflake IDs in the layout (Twitter's unless --layout
says otherwise) for one node, one a line, each larger than the one before.
Omitted --datacenter and --machine mean node 0/0; give both or neither.
Their ranges are the layout's.

A node issues at most 2^sequence bits IDs a millisecond (Twitter's 12
bits: 4096, 4,096,000 a second) and no ID is ahead of the clock, so in
Twitter's layout --count 10000000 takes about 2.5 seconds.
next exits only once the millisecond of its last ID has passed, so runs one
after another for the same node do not repeat IDs; runs at the same time
must use different nodes.

With --dsn, next leases its node from the database instead (the Go
library's sfgenpg.TakeLease): the schema (public unless --schema says
otherwise, at sfgen release 3 or later) hands out a node of its layout that
no live lease, no reservation and no schema of that database holds, with a
high-water mark that its IDs start above; the lease is renewed while next
runs and given back when it ends, and lapses after --lease-ttl if next is
killed. So any number of runs at the same time, on any machines, get
different nodes and never repeat an ID. The connecting role needs EXECUTE
on the schema's snowflake_lease_take(), _renew() and _release(). The node
leased goes to stderr, with a warning when its high-water mark is more
than a second ahead of the database's clock (an earlier holder's clock ran
ahead, and no other node was free): its IDs are then dated that far ahead.
--dsn does not go with --datacenter, --machine or --layout (the schema's
layout is used).

It calls sfgen's functions as the role that owns them: connected as
another role, it runs as the owner (SET ROLE, said on stderr) where the
connecting role can act as it, and refuses otherwise (docs/security.md).

Examples:
  sfgen next
  sfgen next --datacenter 1 --machine 7 --count 1000
  sfgen next --count 3 --json
  sfgen next --layout discord --datacenter 1 --machine 0 --count 5
  sfgen next --dsn postgres://app@localhost/app --count 1000
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
	dsn := c.fs.String("dsn", "", "lease the node from the database at `URL` (see above)")
	schema := c.schemaVar("with --dsn: lease from schema `NAME`")
	ttl := c.fs.Duration("lease-ttl", sfgenpg.DefaultLeaseTTL, "with --dsn: the lease's TTL `D`, from 1s to 24h")
	if code, done := c.parseFlags(args); done {
		return code
	}
	var g interface {
		Next() (snowflake.ID, error)
	}
	if *dsn == "" {
		for _, f := range []string{"schema", "lease-ttl"} {
			if c.flagSet(f) {
				return c.usageError("--%s goes with --dsn, which leases the node", f)
			}
		}
		if err := node.half(); err != nil {
			return c.usageError("%v", err)
		}
		gen, err := l.NewGenerator(node.values())
		if err != nil {
			return c.usageError("%v", err)
		}
		g = gen
	} else {
		for _, f := range []string{"datacenter", "machine", "layout"} {
			if c.flagSet(f) {
				return c.usageError("--%s does not go with --dsn: the database leases the node, in its schema's layout", f)
			}
		}
		if *ttl < time.Second || *ttl > 24*time.Hour {
			return c.usageError("--lease-ttl %v is out of range: want 1s to 24h", *ttl)
		}
		lease, code, ok := c.takeLease(ctx, *dsn, *schema, *ttl)
		if !ok {
			return code
		}
		defer func() {
			if err := lease.Close(context.WithoutCancel(ctx)); err != nil {
				fmt.Fprintf(stderr, "sfgen next: %v (the lease lapses after its TTL)\n", err)
			}
		}()
		l = lease.layout
		g = lease
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

// A leased is a node lease taken for next, as a source of internal IDs.
type leased struct {
	*sfgenpg.Lease
	layout snowflake.Layout
	db     *sql.DB
}

// Close gives the lease back and closes its database handle.
func (l leased) Close(ctx context.Context) error {
	defer l.db.Close()
	return l.Lease.Close(ctx)
}

func (l leased) Next() (snowflake.ID, error) {
	id, err := l.Lease.Next()
	return snowflake.ID(id), err
}

// takeLease leases a node from schema in the database dsn for next, and
// says which on stderr. When it cannot, it has printed one line and
// returns the exit status with ok false.
func (c *cli) takeLease(ctx context.Context, dsn, schema string, ttl time.Duration) (l leased, code int, ok bool) {
	db, err := openDB(ctx, dsn)
	if err != nil {
		return leased{}, c.connectError(err), false
	}
	// The lease functions are their owner's: call them as the owner.
	role, err := ownerToActAs(ctx, catalog.DB(db), schema)
	if err != nil {
		db.Close()
		return leased{}, c.fail("%s", redactErr(err, dsn)), false
	}
	if role != "" {
		db.Close()
		if db, err = connect.OpenDBAs(ctx, dsn, role); err != nil {
			return leased{}, c.connectError(err), false
		}
		c.actingAs(role, schema)
	}
	lease, err := sfgenpg.TakeLease(ctx, db, sfgenpg.LeaseOptions{Schema: schema, TTL: ttl})
	if errors.Is(err, sfgenpg.ErrNoLeases) {
		if fix, ok := installedElsewhere(ctx, catalog.DB(db), schema); ok {
			db.Close()
			return leased{}, c.fail("take a node lease: sfgen is not installed in schema %s; %s", schema, fix), false
		}
	}
	if err != nil {
		db.Close()
		return leased{}, c.fail("%s", redactErr(err, dsn)), false
	}
	layout, err := snowflake.ParseLayout(lease.Layout().String())
	if err != nil {
		lease.Close(ctx)
		db.Close()
		return leased{}, c.fail("%v", err), false
	}
	fmt.Fprintf(c.stderr, "sfgen next: leased node datacenter %d, machine %d (layout %s) from schema %s for %v, renewed while this runs\n",
		lease.Datacenter(), lease.Machine(), layoutArg(layout), schema, ttl)
	if a := lease.FloorAhead(); a > sqlgen.LeaseFutureBound {
		fmt.Fprintf(c.stderr, "sfgen next: warning: node datacenter %d, machine %d starts %.1f s ahead of the database's clock (an earlier holder's clock ran ahead), so its IDs are dated up to that far ahead; every other node of the layout was in use\n",
			lease.Datacenter(), lease.Machine(), a.Seconds())
	}
	return leased{lease, layout, db}, exitOK, true
}
