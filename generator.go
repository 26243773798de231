package sfgen

import (
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
//
// The zero Generator issues no IDs: its Next returns ErrZeroLayout. Make
// one with NewGenerator or Layout.NewGenerator.
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

	// clock, when not nil, replaces the real clock; it returns Unix
	// milliseconds. Only this package's tests set it.
	clock func() int64
}

// NewGenerator returns a generator of IDs in the Twitter layout for the
// node with the given datacenter (0 to 31) and machine (0 to 31). A value
// out of range returns a *RangeError for it (for the datacenter when both
// are). It is Twitter().NewGenerator.
func NewGenerator(datacenter, machine int64) (*Generator, error) {
	return twitter.NewGenerator(datacenter, machine)
}

// NewGenerator returns a generator of IDs in layout l for the node with
// the given datacenter and machine, which must lie within [0,
// l.Max(FieldDatacenter)] and [0, l.Max(FieldMachine)]; otherwise it
// returns a *RangeError for the first, in that order, that does not. The
// zero Layout returns ErrZeroLayout.
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
	return g, nil
}

// Layout returns the generator's layout; the zero Layout for the zero
// Generator.
func (g *Generator) Layout() Layout { return g.layout }

// Next returns the next ID. It waits, for at most a millisecond, when
// this millisecond's sequence is used up. Its only error, but for the
// zero Generator's ErrZeroLayout, is a *RangeError for FieldTimestamp,
// wrapping ErrOutOfRange, when the generator's clock is before the
// layout's epoch or after its latest time (2080-07-10T17:30:30.208Z in the
// Twitter layout).
func (g *Generator) Next() (ID, error) {
	if g.layout.IsZero() {
		return 0, ErrZeroLayout
	}
	now := g.now()
	for {
		old := g.state.Load()
		if now < 0 || now > g.maxOffset {
			return 0, g.layout.rangeError(FieldTimestamp, now+g.layout.epoch)
		}
		next := old + 1
		floor := now << g.seqBits
		if next < floor {
			// The clock has moved on: start its millisecond at sequence 0.
			next = floor
		} else if next > floor && next&(1<<g.seqBits-1) == 0 {
			// The last millisecond issued is full, and the clock has not
			// left it: wait for the next one.
			now = g.waitFor(next >> g.seqBits)
			continue
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
