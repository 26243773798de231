// Package leasegen is the generator of a node lent for a time, as a node
// lease of package sfgenpg is: a generator whose IDs are dated from a
// floor on and up to a limit that the lease raises as it renews, and that
// stops for good when the lease is lost. It is sfgen.Generator's loop with
// those three bounds, kept out of the public package sfgen, whose
// Generator knows nothing of leases.
package leasegen

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/sfgen/sfgen"
)

// A Generator issues IDs for a leased node, strictly increasing across
// all the goroutines that call Next, as a sfgen.Generator does: the clock
// is the wall clock read once, in New, plus the monotonic time elapsed
// since, and no ID is dated after the generator's clock but while the
// clock is behind the floor.
type Generator struct {
	// state is the last ID issued without its node bits: its timestamp
	// (milliseconds since the epoch) above the sequence, so that adding 1
	// to a full sequence carries into the timestamp.
	state atomic.Int64

	layout    sfgen.Layout
	epoch     int64     // the layout's epoch, Unix milliseconds
	node      int64     // the datacenter and machine fields, in place
	seqBits   uint      // width of the sequence field
	tsShift   uint      // shift of the timestamp field in an ID
	maxOffset int64     // latest timestamp, as milliseconds since the epoch
	startNano int64     // wall-clock time at construction, Unix nanoseconds
	start     time.Time // the same instant, with its monotonic reading

	// IDs are dated from floor on, while the clock is behind it the
	// generator borrows milliseconds up to it instead of waiting, and no
	// ID is dated after limit; once stop holds an error, Next returns it.
	// floor and limit are milliseconds since the epoch.
	floor int64
	limit atomic.Int64
	stop  atomic.Pointer[error]
	// stoppedAt is the state when Stop replaced it with stopped.
	stoppedAt atomic.Int64

	// clock, when not nil, replaces the real clock; it returns Unix
	// milliseconds. Tests set it (SetClockForTests).
	clock func() int64
}

// ErrBeyondLimit is returned by Next when the next ID would be dated
// after the limit.
var ErrBeyondLimit = errors.New("the next ID would be dated after the generator's limit")

// stopped is the state of a stopped generator: no ID's.
const stopped = math.MaxInt64

// New returns a generator of layout l for the node with the given
// datacenter and machine, lent for a time: its IDs are dated from floorMs
// on, and none after limitMs, until SetLimit raises it (all Unix
// milliseconds). While its clock is behind floorMs, it carries on above
// floorMs without waiting, borrowing the next millisecond when one's
// sequence is used up; from floorMs on it works as a sfgen.Generator.
// Next returns an error wrapping ErrBeyondLimit rather than date an ID
// after the limit, and the error given to Stop once Stop is called.
// floorMs and limitMs must lie in the layout's time range, limitMs at or
// after floorMs.
func New(l sfgen.Layout, datacenter, machine, floorMs, limitMs int64) (*Generator, error) {
	// Compose refuses the zero Layout, with sfgen.ErrZeroLayout, and a
	// node out of range.
	node, err := l.Compose(l.Epoch(), datacenter, machine, 0)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	g := &Generator{
		layout:    l,
		epoch:     l.Epoch(),
		node:      int64(node),
		seqBits:   l.Bits(sfgen.FieldSequence),
		tsShift:   l.Shift(sfgen.FieldTimestamp),
		maxOffset: l.Max(sfgen.FieldTimestamp) - l.Epoch(),
		startNano: start.UnixNano(),
		start:     start,
	}
	for _, ms := range []int64{floorMs, limitMs} {
		if ms < g.epoch || ms-g.epoch > g.maxOffset {
			return nil, g.rangeError(ms)
		}
	}
	if limitMs < floorMs {
		return nil, fmt.Errorf("generator limit %d is before its floor %d: %w", limitMs, floorMs, sfgen.ErrOutOfRange)
	}
	g.floor = floorMs - g.epoch
	g.limit.Store(limitMs - g.epoch)
	g.state.Store(g.floor<<g.seqBits - 1)
	return g, nil
}

// rangeError is the *sfgen.RangeError for a timestamp ms out of the
// layout's range.
func (g *Generator) rangeError(ms int64) error {
	return &sfgen.RangeError{Field: sfgen.FieldTimestamp, Value: ms,
		Min: g.layout.Min(sfgen.FieldTimestamp), Max: g.layout.Max(sfgen.FieldTimestamp)}
}

// Layout returns the generator's layout.
func (g *Generator) Layout() sfgen.Layout { return g.layout }

// SetLimit raises the latest time (Unix milliseconds) the generator may
// put in an ID; a lower value than the limit it has is ignored.
func (g *Generator) SetLimit(limitMs int64) {
	limit := min(limitMs-g.epoch, g.maxOffset)
	for {
		old := g.limit.Load()
		if limit <= old || g.limit.CompareAndSwap(old, limit) {
			return
		}
	}
}

// Stop makes every later call of Next return err, which must not be nil,
// and returns the time, in Unix milliseconds, of the last ID the
// generator issued (the millisecond before its floor if it issued none):
// no ID any call of Next returns, one running while Stop was called
// included, is dated later. Calling Stop again returns the same time and
// keeps the first error.
func (g *Generator) Stop(err error) (lastMs int64) {
	g.stop.CompareAndSwap(nil, &err)
	last := g.state.Swap(stopped)
	if last == stopped {
		last = g.stoppedAt.Load()
	} else {
		g.stoppedAt.Store(last)
	}
	return last>>g.seqBits + g.epoch
}

// Next returns the next ID. It waits, for at most a millisecond, when
// this millisecond's sequence is used up and the clock is at or past the
// floor. It returns a *sfgen.RangeError for FieldTimestamp when the clock
// is before the layout's epoch or after its latest time, an error
// wrapping ErrBeyondLimit rather than date an ID after the limit, and
// after Stop the error given to it.
func (g *Generator) Next() (sfgen.ID, error) {
	now := g.now()
	for {
		old := g.state.Load()
		if old == stopped {
			return 0, *g.stop.Load()
		}
		if now < 0 || now > g.maxOffset {
			return 0, g.rangeError(now + g.epoch)
		}
		next := old + 1
		floor := now << g.seqBits
		if next < floor {
			// The clock has moved on: start its millisecond at sequence 0.
			next = floor
		} else if next > floor && next&(1<<g.seqBits-1) == 0 && now >= g.floor {
			// The last millisecond issued is full, and the clock has not
			// left it: wait for the next one. (Behind the floor, carry on
			// into the next millisecond instead.)
			now = g.waitFor(next >> g.seqBits)
			continue
		}
		if ms := next >> g.seqBits; ms > g.limit.Load() {
			l := g.layout
			return 0, fmt.Errorf("generator for node %d/%d: the next ID would be dated %s, after the limit %s: %w",
				g.node>>l.Shift(sfgen.FieldDatacenter)&l.Max(sfgen.FieldDatacenter), g.node>>l.Shift(sfgen.FieldMachine)&l.Max(sfgen.FieldMachine),
				time.UnixMilli(ms+g.epoch).UTC().Format(time.RFC3339Nano), time.UnixMilli(g.limit.Load()+g.epoch).UTC().Format(time.RFC3339Nano), ErrBeyondLimit)
		}
		if g.state.CompareAndSwap(old, next) {
			return sfgen.ID(next>>g.seqBits<<g.tsShift | g.node | next&(1<<g.seqBits-1)), nil
		}
		// Another goroutine issued an ID first; the clock reading is still
		// good enough to try again with.
	}
}

// now returns the generator's time in milliseconds since the layout's
// epoch: the wall clock at construction plus the monotonic time elapsed.
func (g *Generator) now() int64 {
	if g.clock != nil {
		return g.clock() - g.epoch
	}
	return (g.startNano+int64(time.Since(g.start)))/int64(time.Millisecond) - g.epoch
}

// waitFor yields the processor until the generator's time reaches ms
// (milliseconds since the epoch), and returns the time then.
func (g *Generator) waitFor(ms int64) int64 {
	for {
		runtime.Gosched()
		if now := g.now(); now >= ms {
			return now
		}
	}
}
