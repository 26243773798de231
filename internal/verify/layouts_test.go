package verify

import (
	"math/rand/v2"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/idkit"
)

// TestRandomLayout checks that RandomLayout's layouts are ones NewLayout
// accepts, hold the span asked for, come again from the same seed, and
// reach the limits: 46 timestamp bits with the latest time at
// idkit.SQLMaxMillis, 16 sequence bits, and the smallest widths.
func TestRandomLayout(t *testing.T) {
	const from, to = 1_700_000_000_000, 1_700_000_000_000 + 86_400_000
	seen := map[string]bool{}
	for s := uint64(0); s < 2000; s++ {
		l := RandomLayout(rand.New(rand.NewPCG(s, 0)), from, to)
		if again := RandomLayout(rand.New(rand.NewPCG(s, 0)), from, to); again != l {
			t.Fatalf("seed %d: %v, then %v", s, l, again)
		}
		back, err := snowflake.NewLayout(l.Epoch(), uint8(l.Bits(snowflake.FieldTimestamp)), uint8(l.Bits(snowflake.FieldDatacenter)),
			uint8(l.Bits(snowflake.FieldMachine)), uint8(l.Bits(snowflake.FieldSequence)))
		if err != nil || back != l {
			t.Fatalf("seed %d: %v: NewLayout = %v, %v", s, l, back, err)
		}
		if l.Min(snowflake.FieldTimestamp) > from || l.Max(snowflake.FieldTimestamp) < to {
			t.Fatalf("seed %d: %v does not hold %d to %d", s, l, from, to)
		}
		if l.Bits(snowflake.FieldTimestamp) == 46 && l.Max(snowflake.FieldTimestamp) == idkit.SQLMaxMillis {
			seen["latest time at SQLMaxMillis"] = true
		}
		if l.Bits(snowflake.FieldSequence) == 16 {
			seen["16 sequence bits"] = true
		}
		if l.Bits(snowflake.FieldSequence) == 1 {
			seen["1 sequence bit"] = true
		}
		if l.Bits(snowflake.FieldDatacenter) == 1 || l.Bits(snowflake.FieldMachine) == 1 {
			seen["a 1-bit node field"] = true
		}
		if l.Bits(snowflake.FieldTimestamp) == 27 {
			seen["the fewest timestamp bits for a day"] = true
		}
		if l.Min(snowflake.FieldTimestamp) == from {
			seen["epoch at the span's start"] = true
		}
	}
	for _, want := range []string{"latest time at SQLMaxMillis", "16 sequence bits", "1 sequence bit", "a 1-bit node field",
		"the fewest timestamp bits for a day", "epoch at the span's start"} {
		if !seen[want] {
			t.Errorf("2000 seeds never gave %s", want)
		}
	}
}
