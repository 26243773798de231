package verify

import (
	"math"
	"math/rand/v2"

	snowflake "github.com/sfgen/sfgen"
)

// An Input is one call of snowflake_compose. The node and sequence are
// int32 because the SQL function takes integer arguments.
type Input struct {
	Timestamp  int64 `json:"timestamp_ms"`
	Datacenter int32 `json:"datacenter"`
	Machine    int32 `json:"machine"`
	Sequence   int32 `json:"sequence"`
}

// Kinds of input, in the proportions Run draws them.
const (
	kindWhole    = iota // valid, uniform over each field's whole range
	kindEdge            // valid, each field within 3 of one of its limits
	kindOutside         // one field out of range, the others valid
	kindNegative        // a negative ID for decompose and timestamp
)

// kindOf maps a draw in [0, 100) to a kind: 60% whole range, 28% limits,
// 10% out of range, 2% negative IDs. A rejection costs PostgreSQL about
// five times a valid call (an error raised and caught in a
// subtransaction), so rejected inputs are kept to an eighth of the mix.
func kindOf(n int) int {
	switch {
	case n < 60:
		return kindWhole
	case n < 88:
		return kindEdge
	case n < 98:
		return kindOutside
	}
	return kindNegative
}

// batchRand returns the random source for batch b of a run with seed: each
// batch has its own stream, so a run gives the same inputs however its
// batches are spread over connections.
func batchRand(seed uint64, b int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(b)))
}

// generator draws inputs for one layout.
type generator struct {
	l      snowflake.Layout
	lo, hi [4]int64 // limits of timestamp, datacenter, machine, sequence
}

var composeFields = [4]snowflake.Field{snowflake.FieldTimestamp, snowflake.FieldDatacenter, snowflake.FieldMachine, snowflake.FieldSequence}

func newGenerator(l snowflake.Layout) *generator {
	g := &generator{l: l}
	for i, f := range composeFields {
		g.lo[i], g.hi[i] = l.Min(f), l.Max(f)
	}
	return g
}

// input draws one compose input of the given kind (not kindNegative).
func (g *generator) input(r *rand.Rand, kind int) Input {
	var v [4]int64
	for i := range v {
		switch kind {
		case kindEdge:
			v[i] = g.edge(r, i)
		default:
			v[i] = g.lo[i] + r.Int64N(g.hi[i]-g.lo[i]+1)
		}
	}
	if kind == kindOutside {
		i := r.IntN(4)
		v[i] = g.outside(r, i)
	}
	return Input{v[0], int32(v[1]), int32(v[2]), int32(v[3])}
}

// edge returns a valid value of field i within 3 of its minimum or maximum.
func (g *generator) edge(r *rand.Rand, i int) int64 {
	k := r.Int64N(4)
	if r.IntN(2) == 0 {
		return g.lo[i] + k
	}
	return g.hi[i] - k
}

// outside returns a value of field i out of its range: mostly within 3 of a
// limit, sometimes at the far end of what the SQL type can carry.
func (g *generator) outside(r *rand.Rand, i int) int64 {
	k := r.Int64N(4)
	floor, ceil := int64(math.MinInt32), int64(math.MaxInt32)
	if i == 0 {
		floor, ceil = math.MinInt64, math.MaxInt64
	}
	switch r.IntN(6) {
	case 0:
		return floor + k
	case 1:
		return ceil - k
	case 2, 3:
		return g.lo[i] - 1 - k
	default:
		return g.hi[i] + 1 + k
	}
}

// negativeID draws a negative ID, near -1 or near the int64 minimum, or
// anywhere between.
func negativeID(r *rand.Rand) int64 {
	switch r.IntN(3) {
	case 0:
		return -1 - r.Int64N(4)
	case 1:
		return math.MinInt64 + r.Int64N(4)
	}
	return -1 - r.Int64N(math.MaxInt64)
}
