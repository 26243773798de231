package audit

import (
	"database/sql"
	"testing"
)

// TestFinalsPeers: the table's percentile is the largest |skew| of the
// whole first bucket whose cumulative count reaches it, every node's part
// of that bucket included, as Query's windows (peers of one bucket
// together) find it; and the chunks of one node and bucket add up.
func TestFinalsPeers(t *testing.T) {
	n := func(v int64) sql.Null[int64] { return sql.Null[int64]{V: v, Valid: true} }
	f := func(v float64) sql.Null[float64] { return sql.Null[float64]{V: v, Valid: true} }
	// Bucket 1 holds 6 of 10 skews: node 1's 5 (|skew| up to 1.5, in two
	// chunks) and node 2's 1 (1.9); bucket 2 the other 4 (node 1, up to 7).
	// Node 1's part of bucket 1 alone reaches 50%: the table's p50 is
	// still the whole bucket's largest, 1.9.
	parts := [][]bucket{
		{{node: n(1), b: n(1), rows: 2, sn: 2, amax: f(1.2), smin: f(-1.2), smax: f(1.0), lo: n(10), hi: n(20)},
			{node: n(2), b: n(1), rows: 1, sn: 1, amax: f(1.9), smin: f(1.9), smax: f(1.9), lo: n(11), hi: n(21)}},
		{{node: n(1), b: n(1), rows: 3, sn: 3, amax: f(1.5), smin: f(1.5), smax: f(1.5), lo: n(5), hi: n(9)},
			{node: n(1), b: n(2), rows: 4, sn: 4, amax: f(7), smin: f(6), smax: f(7), lo: n(30), hi: n(40), beyond: 4}},
	}
	fs := finals(parts, true)
	var table final
	nodes := map[int64]final{}
	for _, x := range fs {
		if x.g == 1 {
			table = x
		} else {
			nodes[x.node.V] = x
		}
	}
	if table.p50 != f(1.9) || table.p99 != f(7) || table.rows != 10 || table.beyond != 4 || table.amax != f(7) || table.smin != f(-1.2) {
		t.Errorf("table %+v; want p50 1.9 (bucket 1, both nodes), p99 7, 10 rows", table)
	}
	// Node 1: 5 of 9 in bucket 1, so its p50 is its own part's 1.5.
	if a := nodes[1]; a.p50 != f(1.5) || a.p99 != f(7) || a.rows != 9 || a.lo != n(5) || a.hi != n(40) || a.amax != f(7) {
		t.Errorf("node 1 %+v; want p50 1.5, p99 7, 9 rows, ids 5 to 40", a)
	}
	if b := nodes[2]; b.p50 != f(1.9) || b.rows != 1 {
		t.Errorf("node 2 %+v; want p50 1.9", b)
	}
}
