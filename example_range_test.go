package sfgen_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/sfgen/sfgen"
)

// FirstID rounds a time up to the next whole millisecond, LastID down;
// LastID sets every node and sequence bit.
func ExampleLastID() {
	t := time.Date(2023, 11, 14, 22, 13, 30, 1000, time.UTC) // 1µs past a millisecond
	first, _ := sfgen.FirstID(t)
	last, _ := sfgen.LastID(t)
	p, _ := sfgen.Decompose(first)
	q, _ := sfgen.Decompose(last)
	const ms = "15:04:05.000"
	fmt.Println("first", p.Time().Format(ms), p.Datacenter, p.Machine, p.Sequence)
	fmt.Println("last ", q.Time().Format(ms), q.Datacenter, q.Machine, q.Sequence)
	// Output:
	// first 22:13:30.001 0 0 0
	// last  22:13:30.000 31 31 4095
}

// Before the epoch FirstID is 0 and LastID an error; after the layout's
// last millisecond LastID is the largest ID and FirstID an error.
func ExampleLayout_FirstID_limits() {
	l := sfgen.Twitter()
	before := l.MinTime().Add(-time.Microsecond)
	after := l.MaxTime().Add(time.Microsecond)

	fmt.Println(l.FirstID(before))
	fmt.Println(l.LastID(before))
	fmt.Println(l.FirstID(after))
	_, err := l.FirstID(after)
	fmt.Println(errors.Is(err, sfgen.ErrOutOfRange))
	fmt.Println(l.LastID(after))
	// Output:
	// 0 <nil>
	// 0 timestamp 1288834974656 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)
	// 0 timestamp 3487858230209 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)
	// true
	// 9223372036854775807 <nil>
}
