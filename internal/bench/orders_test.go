package bench

import (
	"fmt"
	"slices"
	"testing"
)

// TestOrders: the rounds' orders of n variants are every permutation of
// them once, so that each runs first, last and between the others equally
// often.
func TestOrders(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 6, 4: 24, 5: 120, 7: 5040} {
		perms := orders(n)
		if len(perms) != want {
			t.Errorf("orders(%d): %d orders, want %d", n, len(perms), want)
		}
		seen := map[string]bool{}
		first := make([]int, n)
		for _, p := range perms {
			s := slices.Sorted(slices.Values(p))
			for i, v := range s {
				if v != i {
					t.Fatalf("orders(%d): %v is not a permutation of 0..%d", n, p, n-1)
				}
			}
			key := fmt.Sprint(p)
			if seen[key] {
				t.Errorf("orders(%d): %v twice", n, p)
			}
			seen[key] = true
			first[p[0]]++
		}
		for v, c := range first {
			if c != want/n {
				t.Errorf("orders(%d): variant %d first %d times, want %d", n, v, c, want/n)
			}
		}
	}
}

// TestOrdersBalancedInBlocks: in every n rounds from the first, each of
// n variants runs once in each place, so that a run of few rounds (at
// most MaxRounds, fewer than 7! orders of 3 variants and 4 compared)
// still treats them alike.
func TestOrdersBalancedInBlocks(t *testing.T) {
	for n := 1; n <= 3+MaxCompare; n++ {
		perms := orders(n)
		if len(perms)%n != 0 {
			t.Fatalf("orders(%d): %d orders, not whole blocks of %d", n, len(perms), n)
		}
		for b := 0; b < len(perms); b += n {
			for place := range n {
				seen := make([]bool, n)
				for _, p := range perms[b : b+n] {
					seen[p[place]] = true
				}
				if slices.Contains(seen, false) {
					t.Fatalf("orders(%d): rounds %d-%d %v do not put every variant in place %d", n, b+1, b+n, perms[b:b+n], place)
				}
			}
		}
	}
	// Bigserial runs first, then snowflake_next_id, as --help says.
	if got := orders(2); fmt.Sprint(got) != "[[0 1] [1 0]]" {
		t.Errorf("orders(2) = %v, want [[0 1] [1 0]]", got)
	}
}
