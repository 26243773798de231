package sfgen

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A Field names one of the parts of a Snowflake ID, as [RangeError] and
// the Layout methods Bits, Shift, Min and Max take it. Its String method
// returns the name that error messages use: "timestamp", "datacenter",
// "machine", "sequence" or "id".
type Field uint8

// The fields of a Snowflake ID, and FieldID for the ID as a whole.
const (
	FieldTimestamp  Field = iota // milliseconds since the Unix epoch
	FieldDatacenter              // datacenter number
	FieldMachine                 // machine (worker) number
	FieldSequence                // sequence number within one millisecond
	FieldID                      // the whole ID
)

var fieldNames = [...]string{"timestamp", "datacenter", "machine", "sequence", "id"}

// String returns the field's name as it appears in error messages:
// "timestamp", "datacenter", "machine", "sequence" or "id".
func (f Field) String() string {
	if int(f) < len(fieldNames) {
		return fieldNames[f]
	}
	return fmt.Sprintf("Field(%d)", uint8(f))
}

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
	epoch                                      int64
	timestampBits, datacenterBits, machineBits uint8
	sequenceBits                               uint8

	// Derived from the above by newLayout, so that Compose and Decompose
	// do no arithmetic on the layout itself. deltaLimit and idLimit are 0
	// in the zero Layout, so that Compose and Decompose refuse every input
	// there with the one comparison they make anyway.
	deltaLimit                uint64 // 1 << timestampBits: a timestamp's offset from the epoch is below it
	idLimit                   uint64 // 1 << 63: an ID is below it
	maxDatacenter, maxMachine uint64 // largest datacenter and machine
	maxSequence               uint64 // largest sequence
	tsShift, datacenterShift  uint8  // shifts of the timestamp and datacenter
}

// The epochs of the preset layouts, in Unix milliseconds.
const (
	TwitterEpoch int64 = 1288834974657 // 2010-11-04T01:42:54.657Z
	DiscordEpoch int64 = 1420070400000 // 2015-01-01T00:00:00.000Z
)

// postgresMaxMillis is the last Unix millisecond PostgreSQL's timestamptz
// can hold, 294276-12-31T23:59:59.999Z. sqlMaxMillis, the limit layouts
// have, is much earlier.
const postgresMaxMillis int64 = 9224318015999999

// sqlMaxMillis is the last Unix millisecond, 4253-05-31T22:20:37.928Z,
// that sfgen's SQL dates exactly, and so the latest time a layout may
// have. snowflake_timestamp() computes the epoch plus the ID's
// milliseconds times INTERVAL '1 millisecond', and PostgreSQL multiplies
// an interval in float8: ms*1000 microseconds is exact while ms*125 fits
// 53 bits (up to 2^53/125, about 72057594037927.9) or is even, so up to
// here; at 72057594037929 the product rounds to 8 µs short, and the time
// returned is in the millisecond before.
const sqlMaxMillis int64 = 72057594037928

// stateMaxMillis is the last clock reading, 2^47-1 Unix milliseconds
// (6429-10-17T02:45:55.327Z), for which snowflake_next_id()'s state, the
// clock's millisecond << sequence bits, fits a bigint in every layout: the
// SQL shifts the clock before it checks it against the layout's range,
// and PostgreSQL's bigint << wraps silently, so that a wrapped clock could
// land inside the range and make a wrong ID instead of an error. Up to
// stateMaxMillis, after every layout's latest time (sqlMaxMillis), a clock
// past the latest time is an error instead.
const stateMaxMillis int64 = 1<<47 - 1

// The widest fields NewLayout accepts. The datacenter, machine and
// sequence reach SQL as integer (int32) arguments; a timestamp of more
// than 46 bits ends after sqlMaxMillis even from epoch 0; and with more
// than 16 sequence bits, stateMaxMillis << sequence bits overflows a
// bigint.
const (
	maxTimestampBits = 46
	maxNodeBits      = 31
	maxSequenceBits  = 16
)

// Twitter returns the Twitter layout, the default: epoch
// 2010-11-04T01:42:54.657Z (TwitterEpoch), 41 bits of milliseconds (to
// 2080-07-10T17:30:30.208Z), 5 bits of datacenter (0 to 31), 5 bits of
// machine (0 to 31) and 12 bits of sequence (0 to 4095). Its String is
// "epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12".
func Twitter() Layout { return twitter }

// Discord returns the layout of Discord's IDs: epoch
// 2015-01-01T00:00:00.000Z (DiscordEpoch) with Twitter's widths, so 41
// bits of milliseconds (to 2084-09-06T15:47:35.551Z), 5 bits of
// datacenter (Discord's "worker"), 5 of machine (its "process") and 12 of
// sequence (its "increment"). Its String is
// "epoch=1420070400000 timestamp=41 datacenter=5 machine=5 sequence=12".
func Discord() Layout { return discord }

var (
	twitter = mustLayout(TwitterEpoch, 41, 5, 5, 12)
	discord = mustLayout(DiscordEpoch, 41, 5, 5, 12)
)

// presets are the layouts ParseLayout knows by name, in the order
// presetNames lists them.
var presets = []struct {
	name   string
	layout Layout
}{{"twitter", twitter}, {"discord", discord}}

// layoutByName returns the preset layout with the given name, "twitter"
// or "discord" (lower case, as presetNames gives them).
func layoutByName(name string) (Layout, bool) {
	for _, p := range presets {
		if p.name == name {
			return p.layout, true
		}
	}
	return Layout{}, false
}

// presetNames returns the names of the preset layouts: twitter (the
// default) and discord.
func presetNames() []string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.name
	}
	return names
}

// Name returns what ParseLayout reads back as l, in its shortest form: a
// preset's name ("twitter", "discord") for a preset, else l.String().
func (l Layout) Name() string {
	for _, p := range presets {
		if p.layout == l {
			return p.name
		}
	}
	return l.String()
}

func mustLayout(epoch int64, timestampBits, datacenterBits, machineBits, sequenceBits uint8) Layout {
	l, err := NewLayout(epoch, timestampBits, datacenterBits, machineBits, sequenceBits)
	if err != nil {
		panic(err)
	}
	return l
}

// newLayout returns the layout with the given epoch and widths, with its
// derived fields set. It does not check them; NewLayout does.
func newLayout(epoch int64, timestampBits, datacenterBits, machineBits, sequenceBits uint8) Layout {
	return Layout{
		epoch:         epoch,
		timestampBits: timestampBits, datacenterBits: datacenterBits, machineBits: machineBits, sequenceBits: sequenceBits,
		deltaLimit:      1 << timestampBits,
		idLimit:         1 << 63,
		maxDatacenter:   1<<datacenterBits - 1,
		maxMachine:      1<<machineBits - 1,
		maxSequence:     1<<sequenceBits - 1,
		tsShift:         sequenceBits + machineBits + datacenterBits,
		datacenterShift: sequenceBits + machineBits,
	}
}

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
	if err := checkLayout(epoch, int64(timestampBits), int64(datacenterBits), int64(machineBits), int64(sequenceBits)); err != nil {
		return Layout{}, err
	}
	return newLayout(epoch, timestampBits, datacenterBits, machineBits, sequenceBits), nil
}

// checkLayout returns what NewLayout refuses in a layout, or nil. The
// widths are int64 so that ParseLayout can pass any number it read.
func checkLayout(epoch, ts, dc, m, seq int64) *LayoutError {
	for _, w := range []struct {
		f Field
		v int64
	}{{FieldTimestamp, ts}, {FieldDatacenter, dc}, {FieldMachine, m}, {FieldSequence, seq}} {
		if err := checkWidth(w.f, w.v); err != nil {
			return err
		}
	}
	if sum := ts + dc + m + seq; sum != 63 {
		return &LayoutError{Part: "widths", Value: strconv.FormatInt(sum, 10), Reason: fmt.Sprintf(
			"timestamp %d + datacenter %d + machine %d + sequence %d bits; want 63, the bits of a positive bigint", ts, dc, m, seq)}
	}
	if seq > maxSequenceBits {
		return &LayoutError{Part: FieldSequence.String(), Value: strconv.FormatInt(seq, 10), Reason: fmt.Sprintf(
			"want 1 to %d bits: the generator's state (clock << sequence bits) must fit a bigint up to %s (2^%d-1 ms), after the latest time any layout can have (%s); with %d bits it wraps from %s (2^%d ms)",
			maxSequenceBits, formatMillis(stateMaxMillis), 63-maxSequenceBits, formatMillis(sqlMaxMillis), seq, formatMillis(int64(1)<<(63-seq)), 63-seq)}
	}
	maxEpoch := sqlMaxMillis - (int64(1)<<ts - 1)
	if epoch < 0 || epoch > maxEpoch {
		return &LayoutError{Part: "epoch", Value: strconv.FormatInt(epoch, 10), Reason: fmt.Sprintf(
			"want 0 to %d (Unix milliseconds, %s to %s) with timestamp=%d: snowflake_timestamp() is exact up to %s (%d), and a later epoch puts the latest time, epoch + 2^%d-1 ms, after it",
			maxEpoch, formatMillis(0), formatMillis(maxEpoch), ts, formatMillis(sqlMaxMillis), sqlMaxMillis, ts)}
	}
	return nil
}

// checkWidth returns what NewLayout refuses in the width of field f.
func checkWidth(f Field, bits int64) *LayoutError {
	hi, why := int64(maxNodeBits), "its largest value, 2^bits-1, must fit the integer (int32) argument sfgen's SQL functions take"
	if f == FieldTimestamp {
		hi, why = maxTimestampBits, fmt.Sprintf("snowflake_timestamp() is exact up to %s, and from epoch 0 %d bits of milliseconds already end after it", formatMillis(sqlMaxMillis), maxTimestampBits+1)
	}
	if bits >= 1 && bits <= hi {
		return nil
	}
	if bits < 1 {
		why = "every field needs at least one bit"
	}
	return &LayoutError{Part: f.String(), Value: strconv.FormatInt(bits, 10), Reason: fmt.Sprintf("want 1 to %d bits: %s", hi, why)}
}

// specKeys are the keys of a layout spec, in the order String writes them.
var specKeys = [...]string{"epoch", "timestamp", "datacenter", "machine", "sequence"}

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
	if l, ok := layoutByName(s); ok {
		return l, nil
	}
	fail := func(part, value, reason string) (Layout, error) {
		return Layout{}, &LayoutError{Spec: s, Part: part, Value: value, Reason: reason}
	}
	example := "epoch=" + strconv.FormatInt(TwitterEpoch, 10) + " timestamp=41 datacenter=5 machine=5 sequence=12"
	want := fmt.Sprintf("want a preset (%s) or a spec such as %q", strings.Join(presetNames(), ", "), example)
	switch {
	case s == "":
		return fail("spec", "", "empty; "+want)
	case !strings.Contains(s, "="):
		return fail("spec", "", "not a preset name or a spec; "+want)
	case strings.TrimSpace(s) != s || strings.Contains(s, "  ") || strings.ContainsAny(s, "\t\n\r\v\f"):
		return fail("spec", "", "want key=value pairs separated by single spaces, as in "+strconv.Quote(example))
	}
	pairs := strings.Split(s, " ")
	index := make(map[string]int, len(pairs)) // key -> position in pairs
	values := make([]string, len(pairs))
	for i, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		switch {
		case !ok:
			return fail(p, "", "not key=value")
		case !isSpecKey(k):
			return fail(k, "", "unknown key; want "+strings.Join(specKeys[:], ", "))
		}
		if _, dup := index[k]; dup {
			return fail(k, "", "given twice")
		}
		index[k], values[i] = i, v
	}
	for _, k := range specKeys {
		if _, ok := index[k]; !ok {
			return fail(k, "", "missing")
		}
	}
	var n [len(specKeys)]int64
	for i, k := range specKeys {
		if index[k] != i {
			return fail(k, "", "out of order; want "+strings.Join(specKeys[:], ", ")+" in that order")
		}
		v := values[i]
		if !isCanonicalInteger(v) {
			return fail(k, v, "not a decimal integer (digits, no '+', no leading zeros)")
		}
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fail(k, v, "does not fit an int64")
		}
		n[i] = x
	}
	if err := checkLayout(n[0], n[1], n[2], n[3], n[4]); err != nil {
		err.Spec = s
		return Layout{}, err
	}
	return newLayout(n[0], uint8(n[1]), uint8(n[2]), uint8(n[3]), uint8(n[4])), nil
}

func isSpecKey(k string) bool {
	for _, sk := range specKeys {
		if k == sk {
			return true
		}
	}
	return false
}

// isCanonicalInteger reports whether s is a decimal integer as
// strconv.FormatInt writes one: an optional '-', then 0 or digits not
// starting with 0 ("-0" excluded).
func isCanonicalInteger(s string) bool {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if s == "" || s[0] == '0' && (len(s) > 1 || neg) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// IsZero reports whether l is the zero Layout, which describes no layout
// (see [Layout]).
func (l Layout) IsZero() bool { return l.deltaLimit == 0 }

// Epoch returns the layout's epoch in Unix milliseconds: the earliest
// timestamp it can hold.
func (l Layout) Epoch() int64 { return l.epoch }

// Bits returns the width of field f in bits: 41, 5, 5 and 12 for the
// timestamp, datacenter, machine and sequence in the Twitter layout, and
// 63 for FieldID in every layout.
func (l Layout) Bits(f Field) uint {
	switch f {
	case FieldTimestamp:
		return uint(l.timestampBits)
	case FieldDatacenter:
		return uint(l.datacenterBits)
	case FieldMachine:
		return uint(l.machineBits)
	case FieldSequence:
		return uint(l.sequenceBits)
	case FieldID:
		return 63
	}
	return 0
}

// Shift returns how far field f is shifted left within the ID: 22, 17, 12
// and 0 for the timestamp, datacenter, machine and sequence in the Twitter
// layout, and 0 for FieldID.
func (l Layout) Shift(f Field) uint {
	switch f {
	case FieldTimestamp:
		return uint(l.sequenceBits) + uint(l.machineBits) + uint(l.datacenterBits)
	case FieldDatacenter:
		return uint(l.sequenceBits) + uint(l.machineBits)
	case FieldMachine:
		return uint(l.sequenceBits)
	}
	return 0
}

// Min returns the smallest value field f accepts: the epoch for
// FieldTimestamp, 0 for the others.
func (l Layout) Min(f Field) int64 {
	if f == FieldTimestamp {
		return l.epoch
	}
	return 0
}

// Max returns the largest value field f accepts: for FieldTimestamp the
// epoch plus 2^bits-1 milliseconds (3487858230208 in the Twitter layout),
// for the datacenter, machine and sequence 2^bits-1 (31, 31 and 4095),
// and for FieldID 2^63-1.
func (l Layout) Max(f Field) int64 {
	m := int64(1)<<l.Bits(f) - 1
	if f == FieldTimestamp {
		m += l.epoch
	}
	return m
}

// MinTime returns the earliest instant the layout can hold, its epoch, in
// UTC.
func (l Layout) MinTime() time.Time { return time.UnixMilli(l.Min(FieldTimestamp)).UTC() }

// MaxTime returns the latest instant the layout can hold, in UTC:
// 2080-07-10T17:30:30.208Z in the Twitter layout.
func (l Layout) MaxTime() time.Time { return time.UnixMilli(l.Max(FieldTimestamp)).UTC() }

// String describes the layout by its epoch and field widths, as in
// "epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12":
// the text that the SQL function snowflake_layout() returns for a
// database generated for this layout, and that ParseLayout reads.
func (l Layout) String() string {
	return fmt.Sprintf("epoch=%d timestamp=%d datacenter=%d machine=%d sequence=%d",
		l.epoch, l.timestampBits, l.datacenterBits, l.machineBits, l.sequenceBits)
}

// MarshalText implements encoding.TextMarshaler: l.String(), or
// ErrZeroLayout for the zero Layout.
func (l Layout) MarshalText() ([]byte, error) {
	if l.IsZero() {
		return nil, ErrZeroLayout
	}
	return []byte(l.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler: it sets l to the
// layout ParseLayout reads from b, a preset's name or a spec. On error l
// is left as it was.
func (l *Layout) UnmarshalText(b []byte) error {
	v, err := ParseLayout(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}
