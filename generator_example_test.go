package sfgen_test

import (
	"errors"
	"fmt"

	"github.com/sfgen/sfgen"
)

func ExampleNewGenerator_outOfRange() {
	_, err := sfgen.NewGenerator(1, 32)
	fmt.Println(err)
	fmt.Println(errors.Is(err, sfgen.ErrOutOfRange))
	// Output:
	// machine 32 out of range [0, 31]
	// true
}
