package verify

import (
	"math/rand/v2"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/idkit"
)

// RandomLayout returns a random layout that snowflake.NewLayout accepts
// and whose range holds the Unix milliseconds from to to (from <= to,
// both from 0 to idkit.SQLMaxMillis): a database whose clock is in
// that span can install it and make IDs with it. The same r and span give
// the same layout. It favours the limits: 46 timestamp bits, 16 sequence
// bits, the earliest and the latest epoch the span allows. It panics if
// no layout can hold the span.
func RandomLayout(r *rand.Rand, from, to int64) snowflake.Layout {
	span := to - from + 1
	if from < 0 || to > idkit.SQLMaxMillis || span < 1 || span > 1<<46 {
		panic("verify: RandomLayout: no layout holds the span")
	}
	minTS := 1
	for minTS < 46 && int64(1)<<minTS < span {
		minTS++
	}
	pick := func(lo, hi int) int { // lo..hi, the ends one time in four each
		switch r.IntN(4) {
		case 0:
			return lo
		case 1:
			return hi
		}
		return lo + r.IntN(hi-lo+1)
	}
	for {
		ts := pick(minTS, 46)
		seq := pick(1, min(16, 61-ts))
		node := 63 - ts - seq // datacenter + machine, at least 2
		dc := pick(max(1, node-31), min(31, node-1))
		// The epoch: at most from, at least to - (2^ts - 1), and in the
		// range NewLayout accepts.
		lo := max(0, to-(int64(1)<<ts-1))
		hi := min(from, idkit.SQLMaxMillis-(int64(1)<<ts-1))
		if lo > hi {
			continue
		}
		var epoch int64
		switch r.IntN(4) {
		case 0:
			epoch = lo
		case 1:
			epoch = hi
		default:
			epoch = lo + r.Int64N(hi-lo+1)
		}
		l, err := snowflake.NewLayout(epoch, uint8(ts), uint8(dc), uint8(node-dc), uint8(seq))
		if err != nil {
			panic("verify: RandomLayout made a layout NewLayout refuses: " + err.Error())
		}
		return l
	}
}
