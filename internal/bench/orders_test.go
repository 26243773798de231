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
	for n, want := range map[int]int{1: 1, 2: 2, 3: 6, 4: 24} {
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
