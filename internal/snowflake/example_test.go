package snowflake_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/sfgen/sfgen/internal/snowflake"
)

func ExampleCompose() {
	id, err := snowflake.Compose(1288834975657, 1, 1, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(id)
	// Output: 4194439168
}

func ExampleCompose_outOfRange() {
	_, err := snowflake.Compose(1288834975657, 32, 1, 0)
	fmt.Println(err)

	var re *snowflake.RangeError
	if errors.As(err, &re) {
		fmt.Println(re.Field, re.Value, re.Min, re.Max, errors.Is(err, snowflake.ErrOutOfRange))
	}
	// Output:
	// datacenter 32 out of range [0, 31]
	// datacenter 32 0 31 true
}

func ExampleDecompose() {
	p, err := snowflake.Decompose(4194439168)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Timestamp, p.Datacenter, p.Machine, p.Sequence)
	fmt.Println(p.Time().Format("2006-01-02T15:04:05.000Z07:00"))
	// Output:
	// 1288834975657 1 1 0
	// 2010-11-04T01:42:55.657Z
}

func ExampleLayout_Binary() {
	fmt.Println(snowflake.Twitter.Binary(4194439168))
	// Output: 0 00000000000000000000000000000001111101000 00001 00001 000000000000
}

func ExampleID_MarshalJSON() {
	b, _ := snowflake.ID(4194439168).MarshalJSON()
	fmt.Println(string(b))
	// Output: "4194439168"
}

// A time range as a range of IDs: the IDs made in the second from a are
// first <= id < end, and those made from a to b inclusive first <= id <=
// last. PostgreSQL's snowflake_first_id and snowflake_last_id give the
// same numbers.
func ExampleFirstID() {
	a := time.Date(2023, 11, 14, 22, 13, 30, 0, time.UTC)
	first, err := snowflake.FirstID(a)
	if err != nil {
		panic(err)
	}
	end, _ := snowflake.FirstID(a.Add(time.Second))
	last, _ := snowflake.LastID(a.Add(time.Second))
	fmt.Println(first, end, last)
	// Output: 1724551152399286272 1724551156593590272 1724551156597784575
}

// FirstID rounds a time up to the next whole millisecond, LastID down;
// LastID sets every node and sequence bit.
func ExampleLastID() {
	t := time.Date(2023, 11, 14, 22, 13, 30, 1000, time.UTC) // 1µs past a millisecond
	first, _ := snowflake.FirstID(t)
	last, _ := snowflake.LastID(t)
	p, _ := snowflake.Decompose(first)
	q, _ := snowflake.Decompose(last)
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
	l := snowflake.Twitter
	before := l.MinTime().Add(-time.Microsecond)
	after := l.MaxTime().Add(time.Microsecond)

	fmt.Println(l.FirstID(before))
	fmt.Println(l.LastID(before))
	fmt.Println(l.FirstID(after))
	_, err := l.FirstID(after)
	fmt.Println(errors.Is(err, snowflake.ErrOutOfRange))
	fmt.Println(l.LastID(after))
	// Output:
	// 0 <nil>
	// 0 timestamp 1288834974656 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)
	// 0 timestamp 3487858230209 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)
	// true
	// 9223372036854775807 <nil>
}
