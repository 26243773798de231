package idkit

import (
	"strings"

	"github.com/sfgen/sfgen"
)

// A Segment is one run of bits of an ID as the layout divides it: the sign
// bit, then the timestamp, datacenter, machine and sequence fields.
type Segment struct {
	Name  string // "sign", "timestamp", "datacenter", "machine" or "sequence"
	Bits  string // the segment's bits, most significant first, as '0' and '1'
	Value int64  // the segment's value; for the timestamp, Unix milliseconds
}

// Segments returns the 64 bits of id split into the layout's segments,
// most significant first: 1 sign bit, then the four fields (1, 41, 5, 5 and
// 12 bits in the Twitter layout). The timestamp segment's Value is the
// Unix time in milliseconds, not the offset from the epoch the bits hold.
func Segments(l sfgen.Layout, id sfgen.ID) []Segment {
	u := uint64(id)
	seg := func(name string, shift, bits uint, value int64) Segment {
		var b strings.Builder
		b.Grow(int(bits))
		for i := int(bits) - 1; i >= 0; i-- {
			b.WriteByte('0' + byte(u>>(shift+uint(i))&1))
		}
		return Segment{Name: name, Bits: b.String(), Value: value}
	}
	field := func(f sfgen.Field) Segment {
		v := int64(u >> l.Shift(f) & (1<<l.Bits(f) - 1))
		if f == sfgen.FieldTimestamp {
			v += l.Epoch()
		}
		return seg(f.String(), l.Shift(f), l.Bits(f), v)
	}
	return []Segment{
		seg("sign", 63, 1, int64(u>>63)),
		field(sfgen.FieldTimestamp),
		field(sfgen.FieldDatacenter),
		field(sfgen.FieldMachine),
		field(sfgen.FieldSequence),
	}
}

// Binary returns the 64 bits of id with a space between the layout's
// segments, as in
//
//	0 00000000000000000000000000000001111101000 00001 00001 000000000000
func Binary(l sfgen.Layout, id sfgen.ID) string {
	segs := Segments(l, id)
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = s.Bits
	}
	return strings.Join(parts, " ")
}
