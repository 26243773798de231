package released_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// frozenSum is the SHA-256 of every file under templates/, each its path,
// a NUL, its bytes and a NUL, in path order. It changes only when a
// release is frozen here (then write the new sum down with it).
const frozenSum = "e1e4f880655db1e0cc98fa4deab0047122867e7303e5b3e58efaa6daeacb6c90"

// TestTemplatesFrozen fails when a frozen template changes: the releases
// here render what shipped, which never changes.
func TestTemplatesFrozen(t *testing.T) {
	h := sha256.New()
	err := fs.WalkDir(os.DirFS("."), "templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Write([]byte(path + "\x00"))
		h.Write(b)
		h.Write([]byte("\x00"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != frozenSum {
		t.Errorf("the frozen templates changed (sha256 %s, frozen as %s): releases 1 to %d render as they shipped; change the current tree (internal/sqlgen/templates) instead", got, frozenSum, released.Last)
	}
}

func TestUnknownRelease(t *testing.T) {
	o := released.Options{Layout: snowflake.Twitter()}
	for _, r := range []int{0, sqlgen.Latest + 1} {
		if b, err := released.Script(o, r); !errors.Is(err, released.ErrUnknownRelease) || b != nil {
			t.Errorf("Script(%d) = %d bytes, %v; want ErrUnknownRelease", r, len(b), err)
		}
	}
	for _, r := range []int{1, sqlgen.Latest + 1} {
		if b, err := released.Upgrade(o, r); !errors.Is(err, released.ErrUnknownRelease) || b != nil {
			t.Errorf("Upgrade(%d) = %d bytes, %v; want ErrUnknownRelease", r, len(b), err)
		}
		if b, err := released.Generator(o, r); !errors.Is(err, released.ErrUnknownRelease) || b != nil {
			t.Errorf("Generator(%d) = %d bytes, %v; want ErrUnknownRelease", r, len(b), err)
		}
	}
}
