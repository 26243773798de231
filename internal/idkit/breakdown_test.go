package idkit_test

import (
	"encoding/json"
	"fmt"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/idkit"
)

func ExampleNewBreakdown() {
	l := sfgen.Twitter()
	id := sfgen.ID(4194439168)
	p, _ := l.Decompose(id)
	b, _ := json.Marshal(idkit.NewBreakdown(l, id, p))
	fmt.Println(string(b))
	// Output:
	// {"id":"4194439168","base32":"0000003X04400","base58":"7Pebdh","timestamp_ms":1288834975657,"time":"2010-11-04T01:42:55.657Z","datacenter_id":1,"machine_id":1,"sequence":0,"layout":"epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12"}
}
