package idkit

import "github.com/sfgen/sfgen"

// A Breakdown is the JSON form of one ID in a layout, the object that
// "sfgen compose --json", "sfgen decompose --json", "sfgen next --json" and
// the API of "sfgen serve" write, so that all of them write the same bytes.
type Breakdown struct {
	ID          sfgen.ID `json:"id"`
	Base32      string   `json:"base32"` // the ID's string forms (sfgen.ID.Base32, Base58)
	Base58      string   `json:"base58"`
	TimestampMS int64    `json:"timestamp_ms"`
	Time        string   `json:"time"`
	Datacenter  int64    `json:"datacenter_id"`
	Machine     int64    `json:"machine_id"`
	Sequence    int64    `json:"sequence"`
	// Layout is the layout's spec, which --layout reads back.
	Layout sfgen.Layout `json:"layout"`
}

// NewBreakdown returns the JSON form of id, whose parts in layout l are p.
func NewBreakdown(l sfgen.Layout, id sfgen.ID, p sfgen.Parts) Breakdown {
	return Breakdown{id, id.Base32(), id.Base58(), p.Timestamp, p.Time().Format(TimeFormat), p.Datacenter, p.Machine, p.Sequence, l}
}

// TimeFormat is RFC 3339 in UTC with exactly three fractional digits, the
// form of the time in the JSON and in sfgen's breakdowns.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"
