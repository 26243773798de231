package verify

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	snowflake "github.com/sfgen/sfgen"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json from the Go composer")

// vectorsFile is the repository's fixed vectors: inputs with the answer
// every side must give.
var vectorsFile = filepath.Join("..", "..", "testdata", "vectors.json")

// An expectedVector is a Vector with its expected answer: an ID, or the
// error message.
type expectedVector struct {
	Vector
	ID    *snowflake.ID `json:"id,omitempty"`
	Error string        `json:"error,omitempty"`
}

func loadVectors(t *testing.T) []expectedVector {
	t.Helper()
	b, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	var vs []expectedVector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatalf("%s: %v", vectorsFile, err)
	}
	return vs
}

// TestVectorsFile checks the Go composer against testdata/vectors.json,
// and that the file holds exactly the vectors Run checks.
func TestVectorsFile(t *testing.T) {
	var computed []expectedVector
	for _, v := range Vectors(snowflake.Twitter()) {
		e := expectedVector{Vector: v}
		id, err := snowflake.Compose(v.Input.Timestamp, int64(v.Input.Datacenter), int64(v.Input.Machine), int64(v.Input.Sequence))
		if err != nil {
			e.Error = err.Error()
		} else {
			e.ID = &id
		}
		computed = append(computed, e)
	}
	if *update {
		b, _ := json.MarshalIndent(computed, "", "  ")
		if err := os.WriteFile(vectorsFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	file := loadVectors(t)
	if !reflect.DeepEqual(file, computed) {
		t.Errorf("%s differs from the Go composer's answers on Vectors(Twitter); review, then run go test ./internal/verify -run TestVectorsFile -update", vectorsFile)
	}
	// The anchors, written by hand.
	for _, want := range []struct {
		name string
		id   snowflake.ID
	}{{"worked example", 4194439168}, {"largest id", 9223372036854775807}, {"smallest id", 0}} {
		found := false
		for _, v := range file {
			if v.Name == want.name {
				found = true
				if v.ID == nil || *v.ID != want.id {
					t.Errorf("vector %q = %v, want %d", want.name, v.ID, want.id)
				}
			}
		}
		if !found {
			t.Errorf("no vector %q", want.name)
		}
	}
}
