package sfgen

import (
	"time"

	"github.com/sfgen/sfgen/internal/snowflake"
)

// A Field names one of the parts of a Snowflake ID, as [RangeError] and
// the Layout methods Bits, Shift, Min and Max take it. Its String method
// returns the name that error messages use: "timestamp", "datacenter",
// "machine", "sequence" or "id".
type Field = snowflake.Field

// The fields of a Snowflake ID, most significant first, and FieldID for
// the ID as a whole.
const (
	FieldTimestamp  Field = snowflake.FieldTimestamp  // milliseconds since the Unix epoch
	FieldDatacenter Field = snowflake.FieldDatacenter // datacenter number
	FieldMachine    Field = snowflake.FieldMachine    // machine (worker) number
	FieldSequence   Field = snowflake.FieldSequence   // sequence number within one millisecond
	FieldID         Field = snowflake.FieldID         // the whole ID
)

// The epochs of the preset layouts, in Unix milliseconds.
const (
	TwitterEpoch int64 = 1288834974657 // 2010-11-04T01:42:54.657Z
	DiscordEpoch int64 = 1420070400000 // 2015-01-01T00:00:00.000Z
)

// A Layout describes how a Snowflake ID is built: the epoch (Unix
// milliseconds), and the width in bits of the timestamp, datacenter,
// machine and sequence fields, which fill the 63 low bits of the ID in
// that order from the most significant down:
//
//	id = (timestamp - epoch) << (datacenter+machine+sequence bits)
//	   | datacenter << (machine+sequence bits)
//	   | machine << (sequence bits)
//	   | sequence
//
// A Layout is a value that cannot be changed once made: only [Twitter],
// [Discord], [NewLayout], [ParseLayout] and UnmarshalText make one (the
// last by replacing the whole value), so every Layout but the zero one is
// valid, in Go and in sfgen's SQL. Layouts compare with ==.
//
// The zero Layout describes no layout: Compose, Decompose, FirstID,
// LastID, NewGenerator and MarshalText return an error wrapping
// ErrZeroLayout for it, and never act as Twitter or any other layout.
// (Its Epoch, Bits, Shift, Min and Max describe a layout of zero-width
// fields.)
type Layout struct {
	l snowflake.Layout
}

// Twitter returns the Twitter layout, the default: epoch
// 2010-11-04T01:42:54.657Z (TwitterEpoch), 41 bits of milliseconds (to
// 2080-07-10T17:30:30.208Z), 5 bits of datacenter (0 to 31), 5 bits of
// machine (0 to 31) and 12 bits of sequence (0 to 4095). Its String is
// "epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12".
func Twitter() Layout { return Layout{snowflake.Twitter} }

// Discord returns the layout of Discord's IDs: epoch
// 2015-01-01T00:00:00.000Z (DiscordEpoch) with Twitter's widths, so 41
// bits of milliseconds (to 2084-09-06T15:47:35.551Z), 5 bits of
// datacenter (Discord's "worker"), 5 of machine (its "process") and 12 of
// sequence (its "increment"). Its String is
// "epoch=1420070400000 timestamp=41 datacenter=5 machine=5 sequence=12".
func Discord() Layout { return Layout{snowflake.Discord} }

// NewLayout returns the layout with the given epoch (Unix milliseconds)
// and field widths in bits, if both this package and sfgen's SQL can
// represent and compute every ID in it; otherwise it returns a
// *LayoutError naming the first part, in this order, that they cannot:
//
//   - timestampBits from 1 to 46: with more, the latest time is after
//     4253-05-31T22:20:37.928Z (Unix millisecond 72057594037928), the
//     last that the SQL function snowflake_timestamp() returns exactly
//     (PostgreSQL multiplies an interval in float8), from any epoch;
//   - datacenterBits, machineBits and sequenceBits from 1 to 31 each: their
//     largest values reach SQL as integer (int32) arguments;
//   - the four widths adding up to 63, the bits of a positive bigint;
//   - sequenceBits at most 16: snowflake_next_id()'s state, the clock's
//     millisecond << sequenceBits, must fit a bigint for every clock
//     reading up to 2^47-1 ms (6429-10-17T02:45:55.327Z), so that a clock
//     past the layout's latest time is an error rather than wrapping
//     around into a wrong ID;
//   - epoch from 0 (1970-01-01T00:00:00Z) to 72057594037928 -
//     (2^timestampBits - 1), so that the latest time, epoch +
//     2^timestampBits - 1, is at most 4253-05-31T22:20:37.928Z.
//
// Every other derived value (shifts, masks, the largest ID, the
// generator's state at the latest time) then fits an int64 as well. With
// Twitter's widths, 41/5/5/12, the epoch may be up to 69858570782377
// (4183-09-24T06:33:02.377Z).
func NewLayout(epoch int64, timestampBits, datacenterBits, machineBits, sequenceBits uint8) (Layout, error) {
	l, err := snowflake.NewLayout(epoch, timestampBits, datacenterBits, machineBits, sequenceBits)
	return Layout{l}, err
}

// ParseLayout returns the layout s names or describes: a preset's name,
// "twitter" or "discord", or a spec exactly as Layout.String and the SQL
// function snowflake_layout() print it,
//
//	epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12
//
// that is the five keys in that order, each followed by "=" and a decimal
// integer (no '+', no leading zeros), separated by single spaces; the
// layout must be one NewLayout accepts. Anything else returns a
// *LayoutError whose Spec is s and whose Part names what is wrong: "spec"
// for s as a whole (empty, an unknown name, stray spaces), a key that is
// unknown, given twice, missing, out of order or whose value is not a
// number, or the part NewLayout refuses.
func ParseLayout(s string) (Layout, error) {
	l, err := snowflake.ParseLayout(s)
	return Layout{l}, err
}

// Epoch returns the layout's epoch in Unix milliseconds: the earliest
// timestamp it can hold.
func (l Layout) Epoch() int64 { return l.l.Epoch() }

// Bits returns the width of field f in bits: 41, 5, 5 and 12 for the
// timestamp, datacenter, machine and sequence in the Twitter layout, and
// 63 for FieldID in every layout.
func (l Layout) Bits(f Field) uint { return l.l.Bits(f) }

// Shift returns how far field f is shifted left within the ID: 22, 17, 12
// and 0 for the timestamp, datacenter, machine and sequence in the Twitter
// layout, and 0 for FieldID.
func (l Layout) Shift(f Field) uint { return l.l.Shift(f) }

// Min returns the smallest value field f accepts: the epoch for
// FieldTimestamp, 0 for the others.
func (l Layout) Min(f Field) int64 { return l.l.Min(f) }

// Max returns the largest value field f accepts: for FieldTimestamp the
// epoch plus 2^bits-1 milliseconds (3487858230208 in the Twitter layout),
// for the datacenter, machine and sequence 2^bits-1 (31, 31 and 4095),
// and for FieldID 2^63-1.
func (l Layout) Max(f Field) int64 { return l.l.Max(f) }

// MinTime returns the earliest instant the layout can hold, its epoch, in
// UTC.
func (l Layout) MinTime() time.Time { return l.l.MinTime() }

// MaxTime returns the latest instant the layout can hold, in UTC:
// 2080-07-10T17:30:30.208Z in the Twitter layout.
func (l Layout) MaxTime() time.Time { return l.l.MaxTime() }

// IsZero reports whether l is the zero Layout, which describes no layout
// (see [Layout]).
func (l Layout) IsZero() bool { return l.l.IsZero() }

// String describes the layout by its epoch and field widths, as in
// "epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12":
// the text that the SQL function snowflake_layout() returns for a
// database generated for this layout, and that ParseLayout reads.
func (l Layout) String() string { return l.l.String() }

// Name returns what ParseLayout reads back as l, in its shortest form: a
// preset's name ("twitter", "discord") for a preset, else l.String().
func (l Layout) Name() string { return l.l.Name() }

// MarshalText implements encoding.TextMarshaler: l.String(), or
// ErrZeroLayout for the zero Layout.
func (l Layout) MarshalText() ([]byte, error) { return l.l.MarshalText() }

// UnmarshalText implements encoding.TextUnmarshaler: it sets l to the
// layout ParseLayout reads from b, a preset's name or a spec. On error l
// is left as it was.
func (l *Layout) UnmarshalText(b []byte) error { return l.l.UnmarshalText(b) }

// Compose returns the ID with the given timestamp (Unix milliseconds),
// datacenter, machine and sequence. Each must lie within [l.Min(f),
// l.Max(f)] for its field f, or Compose returns a *RangeError for the
// first field, in that order, that does not. The zero Layout returns
// ErrZeroLayout.
func (l Layout) Compose(timestamp, datacenter, machine, sequence int64) (ID, error) {
	id, err := l.l.Compose(timestamp, datacenter, machine, sequence)
	return ID(id), err
}

// Decompose returns the fields of id. Every non-negative int64 is a valid
// ID; a negative id returns a *RangeError for FieldID, and the zero
// Layout ErrZeroLayout.
func (l Layout) Decompose(id ID) (Parts, error) {
	p, err := l.l.Decompose(snowflake.ID(id))
	return Parts(p), err
}

// FirstID returns the smallest ID whose time is at or after t: the ID
// whose timestamp is t in Unix milliseconds rounded up and whose
// datacenter, machine and sequence are 0. It is the Go twin of the SQL
// function snowflake_first_id(t timestamptz) and gives the same answer and
// the same error message for every time PostgreSQL can hold:
//
//	t <= l.MinTime()                 0, nil: every ID is at or after t
//	l.MinTime() < t <= l.MaxTime()   (⌈t⌉ - l.Epoch()) << l.Shift(FieldTimestamp), nil
//	t > l.MaxTime()                  0, a *RangeError for FieldTimestamp: no ID is at or after t
//
// where ⌈t⌉ is the Unix millisecond at or after t. The *RangeError's Value
// is ⌈t⌉, saturated to the int64 range. For times a and b,
// id >= FirstID(a) && id < FirstID(b) holds for exactly the IDs made at
// a <= time < b. The zero Layout returns ErrZeroLayout.
func (l Layout) FirstID(t time.Time) (ID, error) {
	id, err := l.l.FirstID(t)
	return ID(id), err
}

// LastID returns the largest ID whose time is at or before t: the ID
// whose timestamp is t in Unix milliseconds rounded down and whose
// datacenter, machine and sequence bits are all set. It is the Go twin of
// the SQL function snowflake_last_id(t timestamptz) and gives the same
// answer and the same error message for every time PostgreSQL can hold:
//
//	t < l.MinTime()                  0, a *RangeError for FieldTimestamp: no ID is at or before t
//	l.MinTime() <= t < l.MaxTime()   (⌊t⌋ - l.Epoch()) << s | (1<<s - 1), nil, with s = l.Shift(FieldTimestamp)
//	t >= l.MaxTime()                 9223372036854775807 (the largest ID), nil
//
// where ⌊t⌋ is the Unix millisecond at or before t. The *RangeError's
// Value is ⌊t⌋, saturated to the int64 range. For times a and b,
// id >= FirstID(a) && id <= LastID(b) holds for exactly the IDs made at
// a <= time <= b. The zero Layout returns ErrZeroLayout.
func (l Layout) LastID(t time.Time) (ID, error) {
	id, err := l.l.LastID(t)
	return ID(id), err
}

// NewGenerator returns a generator of IDs in layout l for the node with
// the given datacenter and machine, which must lie within [0,
// l.Max(FieldDatacenter)] and [0, l.Max(FieldMachine)]; otherwise it
// returns a *RangeError for the first, in that order, that does not. The
// zero Layout returns ErrZeroLayout.
func (l Layout) NewGenerator(datacenter, machine int64) (*Generator, error) {
	g, err := l.l.NewGenerator(datacenter, machine)
	if err != nil {
		return nil, err
	}
	return &Generator{g: g}, nil
}
