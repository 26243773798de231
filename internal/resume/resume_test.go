package resume

import (
	"math/rand/v2"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
)

// TestStateAbove: from the state stateAbove returns, the next ID of the
// node is above id and the state itself is not (it is the least such
// state), whatever id's node, in Twitter's layout and another. The
// IDs come from the README's formula, not the layout's composer.
func TestStateAbove(t *testing.T) {
	other, err := snowflake.NewLayout(1600000000000, 41, 6, 6, 10)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, l := range []snowflake.Layout{snowflake.Twitter(), other} {
		sb, mb, db := l.Bits(snowflake.FieldSequence), l.Bits(snowflake.FieldMachine), l.Bits(snowflake.FieldDatacenter)
		// id = ((t - epoch) << (dc+m+seq bits)) | dc << (m+seq bits) | m << seq bits | seq
		id := func(ms, dc, m, seq int64) snowflake.ID {
			return snowflake.ID((ms-l.Epoch())<<(db+mb+sb) | dc<<(mb+sb) | m<<sb | seq)
		}
		fromState := func(state, dc, m int64) snowflake.ID {
			return id(state>>sb, dc, m, state&(1<<sb-1))
		}
		for range 2000 {
			ms := l.Epoch() + rng.Int64N(1<<40)
			node := catalog.Node{State: catalog.NodeSet, Datacenter: rng.Int64N(1 << db), Machine: rng.Int64N(1 << mb)}
			a := id(ms, rng.Int64N(1<<db), rng.Int64N(1<<mb), rng.Int64N(1<<sb))
			if rng.IntN(3) == 0 { // often the node's own
				a = id(ms, node.Datacenter, node.Machine, rng.Int64N(1<<sb))
			}
			s, err := stateAbove(l, node, a)
			if err != nil {
				t.Fatal(err)
			}
			if next := fromState(s+1, node.Datacenter, node.Machine); next <= a {
				t.Fatalf("%v node %v: from state %d the next ID %d is not above %d", l, node, s, next, a)
			}
			if at := fromState(s, node.Datacenter, node.Machine); at > a {
				t.Fatalf("%v node %v: state %d (ID %d) is above %d already: not the least", l, node, s, at, a)
			}
		}
	}
}
