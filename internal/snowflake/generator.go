package snowflake

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"
)

// A Generator issues IDs for one node (one datacenter and machine pair) of
// a layout. It is safe for any number of goroutines, and its IDs are
// strictly increasing across all of them: an ID returned by a call to Next
// that finished before another call began is smaller than that call's ID.
// Next does not allocate.
//
// # Throughput and bursts
//
// A node can issue at most 2^sequenceBits IDs per millisecond: 4096, that
// is 4,096,000 IDs a second, in the Twitter layout. When the sequence of
// the current millisecond is used up, Next waits until the generator's
// clock reaches the next millisecond, so a burst is served at the layout's
// rate and a call waits for at most one millisecond. It waits by polling
// the clock and yielding the processor (runtime.Gosched), not by sleeping:
// Go rounds sleeps shorter than a millisecond up to about 1.1 ms, which
// would cost a quarter of the throughput.
//
// # The clock, and why IDs never run ahead of it
//
// The generator reads the wall clock once, in NewGenerator, and from then
// on the monotonic clock: its time is the wall-clock time at construction
// plus the monotonic time elapsed since. A step of the wall clock while it
// runs (an NTP correction, a manual change, a leap second) therefore moves
// neither the IDs nor their timestamps backwards, and causes no wait. The
// price is that the timestamps keep any error the wall clock had at
// construction, and on Linux the monotonic clock stops while the system is
// suspended, so after a suspend the timestamps lag the wall clock by the
// time spent suspended; neither affects uniqueness.
//
// Every ID's timestamp is at most the generator's time when it was issued:
// the generator never "borrows" milliseconds from the future. Borrowing
// would only help bursts, not sustained throughput, and an ID issued ahead
// of the clock can be issued again by the next generator for the same node,
// for instance after a restart, which anchors on the wall clock afresh. As
// it is, a restarted process repeats IDs only if the wall clock was set
// back between the two runs by more than the time between the last ID of
// one and the first of the other. Two generators with the same node, in
// one process or in several, issue the same IDs: give every running
// generator its own node.
//
// # Errors
//
// Next returns an error only when the generator's time lies outside the
// layout's range: before its epoch, or after its latest time
// (2080-07-10T17:30:30.208Z in the Twitter layout). The error is a
// *RangeError for FieldTimestamp, which wraps ErrOutOfRange.
type Generator struct {
	// state is the last ID issued without its node bits: its timestamp
	// (milliseconds since the epoch) above the sequence, so that adding 1
	// to a full sequence carries into the timestamp. It starts at -1.
	state atomic.Int64

	layout    Layout
	node      int64     // the datacenter and machine fields, in place
	seqBits   uint      // width of the sequence field
	tsShift   uint      // shift of the timestamp field in an ID
	maxOffset int64     // latest timestamp, as milliseconds since the epoch
	startNano int64     // wall-clock time at construction, Unix nanoseconds
	start     time.Time // the same instant, with its monotonic reading

	// For a generator of a leased node (NewGeneratorWithin): IDs are
	// dated from floor on, while the clock is behind it the generator
	// borrows milliseconds up to it instead of waiting, and no ID is dated
	// after limit; once stop holds an error, Next returns it. All three
	// are milliseconds since the epoch; a plain generator has floor 0 and
	// limit maxOffset.
	floor int64
	limit atomic.Int64
	stop  atomic.Pointer[error]
	// stoppedAt is the state when Stop replaced it with stopped.
	stoppedAt atomic.Int64

	// clock, when not nil, replaces the real clock; it returns Unix
	// milliseconds. Tests use it.
	clock func() int64
}

// ErrBeyondLimit is returned by Next of a generator made with
// NewGeneratorWithin when its next ID would be dated after the limit.
var ErrBeyondLimit = errors.New("the next ID would be dated after the generator's limit")

// NewGeneratorWithin returns a generator for a node that is lent for a
// time, as a node lease is: its IDs are dated from floorMs on, and none
// after limitMs, until SetLimit raises it (all Unix milliseconds). While
// its clock is behind floorMs, it carries on above floorMs without
// waiting, borrowing the next millisecond when one's sequence is used up;
// from floorMs on it is a plain Generator. Next returns an error wrapping
// ErrBeyondLimit rather than date an ID after the limit, and the error
// given to Stop once Stop is called. floorMs and limitMs must lie in the
// layout's time range, limitMs at or after floorMs.
func (l Layout) NewGeneratorWithin(datacenter, machine, floorMs, limitMs int64) (*Generator, error) {
	g, err := l.NewGenerator(datacenter, machine)
	if err != nil {
		return nil, err
	}
	for _, ms := range []int64{floorMs, limitMs} {
		if ms < l.epoch || ms-l.epoch > g.maxOffset {
			return nil, l.rangeError(FieldTimestamp, ms)
		}
	}
	if limitMs < floorMs {
		return nil, fmt.Errorf("generator limit %d is before its floor %d: %w", limitMs, floorMs, ErrOutOfRange)
	}
	g.floor = floorMs - l.epoch
	g.limit.Store(limitMs - l.epoch)
	g.state.Store(g.floor<<g.seqBits - 1)
	return g, nil
}

// SetLimit raises the latest time (Unix milliseconds) a generator made
// with NewGeneratorWithin may put in an ID; a lower value than the limit
// it has is ignored.
func (g *Generator) SetLimit(limitMs int64) {
	limit := min(limitMs-g.layout.epoch, g.maxOffset)
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
	return last>>g.seqBits + g.layout.epoch
}

// stopped is the state of a stopped generator: no ID's.
const stopped = math.MaxInt64

// NewGenerator returns a generator of IDs in the Twitter layout for the
// given datacenter (0 to 31) and machine (0 to 31). A value out of range
// returns a *RangeError naming its field.
func NewGenerator(datacenter, machine int64) (*Generator, error) {
	return twitter.NewGenerator(datacenter, machine)
}

// NewGenerator returns a generator of IDs in layout l for the given
// datacenter and machine, which must lie within [0, l.Max(FieldDatacenter)]
// and [0, l.Max(FieldMachine)]; otherwise it returns a *RangeError for the
// first, in that order, that does not. The zero Layout returns
// ErrZeroLayout.
func (l Layout) NewGenerator(datacenter, machine int64) (*Generator, error) {
	// Compose also refuses the zero Layout, with ErrZeroLayout.
	node, err := l.Compose(l.epoch, datacenter, machine, 0)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	g := &Generator{
		layout:    l,
		node:      int64(node),
		seqBits:   l.Bits(FieldSequence),
		tsShift:   l.Shift(FieldTimestamp),
		maxOffset: l.Max(FieldTimestamp) - l.epoch,
		startNano: start.UnixNano(),
		start:     start,
	}
	g.state.Store(-1)
	g.limit.Store(g.maxOffset)
	return g, nil
}

// Layout returns the generator's layout.
func (g *Generator) Layout() Layout { return g.layout }

// Next returns the next ID. It waits, for at most a millisecond, when this
// millisecond's sequence is used up. Its only error is a *RangeError for
// FieldTimestamp, wrapping ErrOutOfRange, when the generator's time is
// before the layout's epoch or after its latest time.
func (g *Generator) Next() (ID, error) {
	now := g.now()
	for {
		old := g.state.Load()
		if old == stopped {
			return 0, *g.stop.Load()
		}
		if now < 0 || now > g.maxOffset {
			return 0, g.layout.rangeError(FieldTimestamp, now+g.layout.epoch)
		}
		next := old + 1
		floor := now << g.seqBits
		if next < floor {
			// The clock has moved on: start its millisecond at sequence 0.
			next = floor
		} else if next > floor && next&(1<<g.seqBits-1) == 0 && now >= g.floor {
			// The last millisecond issued is full, and the clock has not
			// left it: wait for the next one. (Behind a lease's floor,
			// carry on into the next millisecond instead.)
			now = g.waitFor(next >> g.seqBits)
			continue
		}
		if ms := next >> g.seqBits; ms > g.limit.Load() {
			return 0, fmt.Errorf("generator for node %d/%d: the next ID would be dated %s, after the limit %s: %w",
				g.node>>g.layout.Shift(FieldDatacenter)&g.layout.Max(FieldDatacenter), g.node>>g.layout.Shift(FieldMachine)&g.layout.Max(FieldMachine),
				time.UnixMilli(ms+g.layout.epoch).UTC().Format(time.RFC3339Nano), time.UnixMilli(g.limit.Load()+g.layout.epoch).UTC().Format(time.RFC3339Nano), ErrBeyondLimit)
		}
		if g.state.CompareAndSwap(old, next) {
			return ID(next>>g.seqBits<<g.tsShift | g.node | next&(1<<g.seqBits-1)), nil
		}
		// Another goroutine issued an ID first; the clock reading is still
		// good enough to try again with.
	}
}

// now returns the generator's time in milliseconds since the layout's
// epoch: the wall clock at construction plus the monotonic time elapsed.
func (g *Generator) now() int64 {
	if g.clock != nil {
		return g.clock() - g.layout.epoch
	}
	return (g.startNano+int64(time.Since(g.start)))/int64(time.Millisecond) - g.layout.epoch
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
