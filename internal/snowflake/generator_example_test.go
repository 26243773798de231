package snowflake_test

import (
	"errors"
	"fmt"

	"github.com/sfgen/sfgen/internal/snowflake"
)

func ExampleNewGenerator_outOfRange() {
	_, err := snowflake.NewGenerator(1, 32)
	fmt.Println(err)
	fmt.Println(errors.Is(err, snowflake.ErrOutOfRange))
	// Output:
	// machine 32 out of range [0, 31]
	// true
}
