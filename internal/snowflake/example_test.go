package snowflake_test

import (
	"errors"
	"fmt"

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
