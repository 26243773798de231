package snowflake_test

import (
	"errors"
	"fmt"

	"github.com/sfgen/sfgen/internal/snowflake"
)

func ExampleNewGenerator() {
	g, err := snowflake.NewGenerator(1, 2)
	if err != nil {
		panic(err)
	}
	a, err := g.Next()
	if err != nil {
		panic(err)
	}
	b, err := g.Next()
	if err != nil {
		panic(err)
	}
	p, _ := snowflake.Decompose(b)
	// The IDs depend on the time; their node and order do not.
	fmt.Println(p.Datacenter, p.Machine, b > a)
	// Output: 1 2 true
}

func ExampleNewGenerator_outOfRange() {
	_, err := snowflake.NewGenerator(1, 32)
	fmt.Println(err)
	fmt.Println(errors.Is(err, snowflake.ErrOutOfRange))
	// Output:
	// machine 32 out of range [0, 31]
	// true
}
