package verify

import (
	"math"

	snowflake "github.com/sfgen/sfgen"
)

// A Vector is a fixed input every check runs first: the worked example and
// each limit of the layout, from both sides.
type Vector struct {
	Name  string `json:"name"`
	Input Input  `json:"input"`
}

// Vectors returns the fixed inputs for layout l: the worked example
// (which is only meaningful in the Twitter layout, but is a valid or
// invalid input in any), the smallest and largest ID, and for every field
// its minimum, its maximum and one past each; for snowflake.Discord also
// Discord's documented example, 175928847299117063.
func Vectors(l snowflake.Layout) []Vector {
	minTS, maxTS := l.Min(snowflake.FieldTimestamp), l.Max(snowflake.FieldTimestamp)
	maxDC := int32(l.Max(snowflake.FieldDatacenter))
	maxM := int32(l.Max(snowflake.FieldMachine))
	maxSeq := int32(l.Max(snowflake.FieldSequence))
	vs := []Vector{
		{"worked example", Input{1288834975657, 1, 1, 0}},
		{"smallest id", Input{minTS, 0, 0, 0}},
		{"largest id", Input{maxTS, maxDC, maxM, maxSeq}},
		{"timestamp at epoch", Input{minTS, 1, 2, 3}},
		{"timestamp one before epoch", Input{minTS - 1, 0, 0, 0}},
		{"timestamp at maximum", Input{maxTS, 1, 2, 3}},
		{"timestamp one past maximum", Input{maxTS + 1, 0, 0, 0}},
		{"timestamp zero", Input{0, 0, 0, 0}},
		{"timestamp int64 minimum", Input{math.MinInt64, 0, 0, 0}},
		{"timestamp int64 maximum", Input{math.MaxInt64, 0, 0, 0}},
		{"datacenter maximum", Input{minTS, maxDC, 0, 0}},
		{"datacenter one past maximum", Input{minTS, maxDC + 1, 0, 0}},
		{"datacenter -1", Input{minTS, -1, 0, 0}},
		{"datacenter int32 maximum", Input{minTS, math.MaxInt32, 0, 0}},
		{"machine maximum", Input{minTS, 0, maxM, 0}},
		{"machine one past maximum", Input{minTS, 0, maxM + 1, 0}},
		{"machine -1", Input{minTS, 0, -1, 0}},
		{"machine int32 minimum", Input{minTS, 0, math.MinInt32, 0}},
		{"sequence maximum", Input{minTS, 0, 0, maxSeq}},
		{"sequence one past maximum", Input{minTS, 0, 0, maxSeq + 1}},
		{"sequence -1", Input{minTS, 0, 0, -1}},
		{"every field out of range", Input{minTS - 1, -1, -1, -1}},
	}
	if l == snowflake.Discord() {
		vs = append(vs, Vector{"discord's documented example", DiscordExample})
	}
	return vs
}

// DiscordExample is the ID Discord documents, 175928847299117063, as its
// parts in the Discord layout: 2016-04-30T11:18:25.796Z, worker
// (datacenter) 1, process (machine) 0, increment (sequence) 7.
var DiscordExample = Input{1462015105796, 1, 0, 7}
