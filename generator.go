package sfgen

import (
	"github.com/sfgen/sfgen/internal/snowflake"
)

// A Generator issues IDs for one node (one datacenter and machine pair) of
// a layout. It is safe for any number of goroutines, and its IDs are
// strictly increasing across all of them: an ID returned by a call to
// Next that finished before another call began is smaller than that
// call's ID. Next does not allocate.
//
// A node issues at most 2^sequence bits IDs a millisecond: 4096, that is
// 4,096,000 a second, in the Twitter layout. When the current
// millisecond's sequence is used up, Next waits (by polling the clock, for
// at most a millisecond) for the next one. No ID's timestamp is ever
// later than the generator's clock.
//
// The clock is the wall clock read once, in NewGenerator, plus the
// monotonic time elapsed since: a step of the wall clock while the
// generator runs (NTP, a leap second, a manual change) moves neither its
// IDs nor their timestamps backwards. Two generators with the same node,
// in one process or in several, issue the same IDs: give every running
// generator its own node. A process restarted with the same node repeats
// IDs only if the wall clock was set back between the two runs by more
// than the time between them.
//
// The zero Generator issues no IDs: its Next returns ErrZeroLayout. Make
// one with NewGenerator or Layout.NewGenerator.
type Generator struct {
	g *snowflake.Generator
}

// NewGenerator returns a generator of IDs in the Twitter layout for the
// node with the given datacenter (0 to 31) and machine (0 to 31). A value
// out of range returns a *RangeError for it (for the datacenter when both
// are). It is Twitter().NewGenerator.
func NewGenerator(datacenter, machine int64) (*Generator, error) {
	return Twitter().NewGenerator(datacenter, machine)
}

// Next returns the next ID. It waits, for at most a millisecond, when
// this millisecond's sequence is used up. Its only error, but for the
// zero Generator's ErrZeroLayout, is a *RangeError for FieldTimestamp,
// wrapping ErrOutOfRange, when the generator's clock is before the
// layout's epoch or after its latest time (2080-07-10T17:30:30.208Z in the
// Twitter layout).
func (g *Generator) Next() (ID, error) {
	if g.g == nil {
		return 0, ErrZeroLayout
	}
	id, err := g.g.Next()
	return ID(id), err
}

// Layout returns the generator's layout; the zero Layout for the zero
// Generator.
func (g *Generator) Layout() Layout {
	if g.g == nil {
		return Layout{}
	}
	return Layout{g.g.Layout()}
}
