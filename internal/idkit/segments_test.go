package idkit

import (
	"fmt"
	"testing"

	"github.com/sfgen/sfgen"
)

func TestBinary(t *testing.T) {
	got := Binary(sfgen.Twitter(), 4194439168)
	want := "0 00000000000000000000000000000001111101000 00001 00001 000000000000"
	if got != want {
		t.Errorf("Binary(4194439168) =\n%s\nwant\n%s", got, want)
	}
	segs := Segments(sfgen.Twitter(), 4194439168)
	wantValues := []int64{0, 1288834975657, 1, 1, 0}
	for i, s := range segs {
		if s.Value != wantValues[i] {
			t.Errorf("segment %s value = %d, want %d", s.Name, s.Value, wantValues[i])
		}
	}
	if got := Binary(sfgen.Twitter(), -1); got[0] != '1' || len(got) != 64+4 {
		t.Errorf("Binary(-1) = %s, want the sign bit set and 64 bits", got)
	}
}

func ExampleBinary() {
	fmt.Println(Binary(sfgen.Twitter(), 4194439168))
	// Output: 0 00000000000000000000000000000001111101000 00001 00001 000000000000
}
