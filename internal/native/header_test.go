package native_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/native"
)

var update = flag.Bool("update", false, "rewrite the golden headers under testdata and native/src")

// TestHeaderGolden: the header rendered for each layout is the one under
// testdata (go test -update rewrites them), and native/src's copy, for a
// build by hand, is the Twitter layout's.
func TestHeaderGolden(t *testing.T) {
	other, err := snowflake.NewLayout(1600000000000, 41, 6, 6, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		layout snowflake.Layout
		files  []string
	}{
		{snowflake.Twitter(), []string{"testdata/sfgen_layout_twitter.h", "../../native/src/sfgen_layout.h"}},
		{snowflake.Discord(), []string{"testdata/sfgen_layout_discord.h"}},
		{other, []string{"testdata/sfgen_layout_41_6_6_10.h"}},
	} {
		got, err := native.Header(c.layout)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range c.files {
			if *update {
				if err := os.WriteFile(f, got, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(f)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the header for %s differs from %s: run go test ./internal/native -run TestHeaderGolden -update", c.layout, filepath.Clean(f))
			}
		}
	}
}

// TestHeaderRefusesTheZeroLayout: the zero Layout renders no header.
func TestHeaderRefusesTheZeroLayout(t *testing.T) {
	if h, err := native.Header(snowflake.Layout{}); !errors.Is(err, snowflake.ErrZeroLayout) || h != nil {
		t.Errorf("Header of the zero Layout = %d bytes, %v; want ErrZeroLayout", len(h), err)
	}
}
