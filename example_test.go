package sfgen_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/sfgen/sfgen"
)

// The README's worked example: 1000 ms after the Twitter epoch,
// datacenter 1, machine 1, sequence 0.
func ExampleCompose() {
	id, err := sfgen.Compose(1288834975657, 1, 1, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(id)
	// Output: 4194439168
}

// The README's first example: compose, decompose, and an input out of
// range.
func Example_composeAndDecompose() {
	id, err := sfgen.Compose(1288834975657, 1, 1, 0) // the worked example
	fmt.Println(id, err)

	p, err := sfgen.Decompose(1724551110456668202)
	fmt.Println(p.Timestamp, p.Datacenter, p.Machine, p.Sequence, p.Time().Format(time.RFC3339Nano), err)

	_, err = sfgen.Compose(1288834975657, 32, 1, 0)
	var re *sfgen.RangeError
	fmt.Println(err, errors.As(err, &re), re.Field, re.Max, errors.Is(err, sfgen.ErrOutOfRange))
	// Output:
	// 4194439168 <nil>
	// 1700000000000 3 7 42 2023-11-14T22:13:20Z <nil>
	// datacenter 32 out of range [0, 31] true datacenter 31 true
}

// The README's layouts: a preset by name, a spec, and one refused.
func Example_layouts() {
	discord, err := sfgen.ParseLayout("discord") // or sfgen.Discord()
	if err != nil {
		panic(err)
	}
	p, _ := discord.Decompose(175928847299117063)
	fmt.Println(p.Time().Format(time.RFC3339Nano), p.Datacenter, p.Machine, p.Sequence)

	custom, err := sfgen.ParseLayout("epoch=1704067200000 timestamp=40 datacenter=3 machine=8 sequence=12")
	if err != nil {
		panic(err)
	}
	id, _ := custom.Compose(1704067201000, 5, 200, 0)
	fmt.Println(id, custom.Max(sfgen.FieldMachine), custom.MaxTime().Format(time.RFC3339Nano))

	_, err = sfgen.NewLayout(sfgen.TwitterEpoch, 42, 5, 5, 12)
	fmt.Println(err)
	_, err = sfgen.ParseLayout("epoch=1704067200000 timestamp=40 datacenter=3 machine=8")
	fmt.Println(err)
	// Output:
	// 2016-04-30T11:18:25.796Z 1 0 7
	// 8394670080 255 2058-11-03T19:53:47.775Z
	// invalid layout: widths 64: timestamp 42 + datacenter 5 + machine 5 + sequence 12 bits; want 63, the bits of a positive bigint
	// invalid layout "epoch=1704067200000 timestamp=40 datacenter=3 machine=8": sequence: missing
}

// A value out of range is an error naming the field, the value and the
// range, never an ID wrapped into another.
func ExampleCompose_outOfRange() {
	_, err := sfgen.Compose(1288834975657, 32, 1, 0)
	fmt.Println(err)

	var re *sfgen.RangeError
	if errors.As(err, &re) {
		fmt.Println(re.Field, re.Value, re.Min, re.Max, errors.Is(err, sfgen.ErrOutOfRange))
	}
	// Output:
	// datacenter 32 out of range [0, 31]
	// datacenter 32 0 31 true
}

func ExampleDecompose() {
	p, err := sfgen.Decompose(1724551110456668202)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Timestamp, p.Datacenter, p.Machine, p.Sequence)
	fmt.Println(p.Time().Format(time.RFC3339Nano))
	// Output:
	// 1700000000000 3 7 42
	// 2023-11-14T22:13:20Z
}

func ExampleNewGenerator() {
	g, err := sfgen.NewGenerator(1, 2) // datacenter 1, machine 2
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
	p, _ := sfgen.Decompose(b)
	// The IDs depend on the time; their node and order do not.
	fmt.Println(p.Datacenter, p.Machine, b > a)
	// Output: 1 2 true
}

// Discord's IDs: the documented example, 175928847299117063, was made at
// 2016-04-30T11:18:25.796Z by worker 1, process 0, as increment 7.
func ExampleDiscord() {
	l := sfgen.Discord()
	p, err := l.Decompose(175928847299117063)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Time().Format(time.RFC3339Nano), p.Datacenter, p.Machine, p.Sequence)
	fmt.Println(l)
	fmt.Println(l.MaxTime().Format(time.RFC3339Nano))
	// Output:
	// 2016-04-30T11:18:25.796Z 1 0 7
	// epoch=1420070400000 timestamp=41 datacenter=5 machine=5 sequence=12
	// 2084-09-06T15:47:35.551Z
}

// A custom layout: an epoch of 2024-01-01 and, for many small nodes, 40
// bits of milliseconds (about 35 years), 3 of datacenter, 8 of machine and
// 12 of sequence.
func ExampleNewLayout() {
	epoch := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	l, err := sfgen.NewLayout(epoch, 40, 3, 8, 12)
	if err != nil {
		panic(err)
	}
	fmt.Println(l)
	fmt.Println(l.Max(sfgen.FieldDatacenter), l.Max(sfgen.FieldMachine), l.MaxTime().Format(time.DateOnly))

	id, err := l.Compose(epoch+1000, 5, 200, 0)
	if err != nil {
		panic(err)
	}
	p, _ := l.Decompose(id)
	fmt.Println(id, p.Timestamp-epoch, p.Datacenter, p.Machine)

	_, err = l.Compose(epoch, 8, 0, 0)
	fmt.Println(err)
	// Output:
	// epoch=1704067200000 timestamp=40 datacenter=3 machine=8 sequence=12
	// 7 255 2058-11-03
	// 8394670080 1000 5 200
	// datacenter 8 out of range [0, 7]
}

// NewLayout refuses what PostgreSQL could not store, naming the part.
func ExampleNewLayout_refused() {
	_, err := sfgen.NewLayout(0, 41, 5, 5, 11)
	fmt.Println(err)
	_, err = sfgen.NewLayout(0, 20, 1, 10, 32)
	fmt.Println(err)

	var le *sfgen.LayoutError
	if errors.As(err, &le) {
		fmt.Println(le.Part, le.Value, errors.Is(err, sfgen.ErrInvalidLayout))
	}
	// Output:
	// invalid layout: widths 62: timestamp 41 + datacenter 5 + machine 5 + sequence 11 bits; want 63, the bits of a positive bigint
	// invalid layout: sequence 32: want 1 to 31 bits: its largest value, 2^bits-1, must fit the integer (int32) argument sfgen's SQL functions take
	// sequence 32 true
}

// ParseLayout reads a preset's name or the spec that Layout.String and the
// SQL function snowflake_layout() print, and nothing else.
func ExampleParseLayout() {
	for _, s := range []string{
		"discord",
		"epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12",
		"epoch=1288834974657 timestamp=41 datacenter=5 machine=5",
		"epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12 node=1",
	} {
		l, err := sfgen.ParseLayout(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(l, l == sfgen.Twitter())
	}
	// Output:
	// epoch=1420070400000 timestamp=41 datacenter=5 machine=5 sequence=12 false
	// epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12 true
	// invalid layout "epoch=1288834974657 timestamp=41 datacenter=5 machine=5": sequence: missing
	// invalid layout "epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12 node=1": node: unknown key; want epoch, timestamp, datacenter, machine, sequence
}

// A layout as a command-line flag: flag.TextVar takes a preset's name or
// a spec.
func ExampleLayout_UnmarshalText() {
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	var layout sfgen.Layout
	fs.TextVar(&layout, "layout", sfgen.Twitter(), "ID `layout`: twitter, discord or a spec")
	if err := fs.Parse([]string{"-layout", "discord"}); err != nil {
		panic(err)
	}
	fmt.Println(layout == sfgen.Discord())
	// Output: true
}

// In JSON an ID is a string, which JavaScript reads without losing
// digits; a string or a number is read back, and null is a NullID's (or a
// *ID's) NULL.
func ExampleID_MarshalJSON() {
	type Post struct {
		ID     sfgen.ID     `json:"id"`
		Parent sfgen.NullID `json:"parent"`
	}
	b, _ := json.Marshal(Post{ID: 1724551110456668202})
	fmt.Println(string(b))

	var p Post
	err := json.Unmarshal([]byte(`{"id": 1724551110456668202, "parent": "4194439168"}`), &p)
	fmt.Println(p.ID, p.Parent.ID, p.Parent.Valid, err)

	err = json.Unmarshal([]byte(`{"id": -1}`), &p)
	fmt.Println(err)
	// Output:
	// {"id":"1724551110456668202","parent":null}
	// 1724551110456668202 4194439168 true <nil>
	// id -1 out of range [0, 9223372036854775807]
}

// A time range as an index range: the IDs made in a second are
// first <= id < end. PostgreSQL's snowflake_first_id gives the same
// numbers.
func ExampleFirstID() {
	a := time.Date(2023, 11, 14, 22, 13, 30, 0, time.UTC)
	first, err := sfgen.FirstID(a)
	if err != nil {
		panic(err)
	}
	end, _ := sfgen.FirstID(a.Add(time.Second))
	fmt.Println(first, end)
	// Output: 1724551152399286272 1724551156593590272
}

// IDs with database/sql and pgx's driver (github.com/jackc/pgx/v5/stdlib):
// a bigint column scans into an ID, a nullable one into a NullID or a
// *ID. (This example needs a database, so it is compiled but not run;
// the package's tests run the same calls against PostgreSQL.)
func ExampleID_Scan() {
	ctx := context.Background()
	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer db.Close()

	g, err := sfgen.NewGenerator(1, 2)
	if err != nil {
		panic(err)
	}
	id, err := g.Next()
	if err != nil {
		panic(err)
	}
	_, err = db.ExecContext(ctx, `CREATE TEMPORARY TABLE post (id bigint PRIMARY KEY, parent bigint)`)
	if err != nil {
		panic(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO post VALUES ($1, NULL)`, id); err != nil {
		panic(err)
	}

	var got sfgen.ID
	var parent sfgen.NullID // or *sfgen.ID
	if err := db.QueryRowContext(ctx, `SELECT id, parent FROM post`).Scan(&got, &parent); err != nil {
		panic(err)
	}
	fmt.Println(got == id, parent.Valid)

	// NULL, or a negative number, is not an ID.
	err = db.QueryRowContext(ctx, `SELECT parent FROM post`).Scan(&got)
	fmt.Println(errors.Is(err, sfgen.ErrNullID))
}

// IDs with pgx directly: the same types, as parameters and scan targets.
// (Compiled, not run: it needs a database.)
func ExampleID_Scan_pgx() {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer conn.Close(ctx)

	id, err := sfgen.Compose(1700000000000, 3, 7, 42)
	if err != nil {
		panic(err)
	}
	var got sfgen.ID
	var parent *sfgen.ID // nil for NULL
	err = conn.QueryRow(ctx, `SELECT $1::bigint, NULL::bigint`, id).Scan(&got, &parent)
	if err != nil {
		panic(err)
	}
	fmt.Println(got, parent == nil)

	err = conn.QueryRow(ctx, `SELECT -1::bigint`).Scan(&got)
	fmt.Println(errors.Is(err, sfgen.ErrOutOfRange))
}

func ExampleLayout_IsZero() {
	var unset sfgen.Layout // a field nobody filled in
	fmt.Println(unset.IsZero(), sfgen.Twitter().IsZero())
	_, err := unset.Compose(1288834975657, 1, 1, 0)
	fmt.Println(errors.Is(err, sfgen.ErrZeroLayout))
	// Output:
	// true false
	// true
}

// A layout's Name is a preset's name, or its spec; ParseLayout reads
// either back.
func ExampleLayout_Name() {
	custom, _ := sfgen.ParseLayout("epoch=1600000000000 timestamp=41 datacenter=4 machine=6 sequence=12")
	fmt.Println(sfgen.Twitter().Name())
	fmt.Println(sfgen.Discord().Name())
	fmt.Println(custom.Name())
	// Output:
	// twitter
	// discord
	// epoch=1600000000000 timestamp=41 datacenter=4 machine=6 sequence=12
}

// An ID's parts in the Twitter layout, without an error to check: the
// README's worked example.
func ExampleID_Time() {
	id := sfgen.ID(4194439168)
	fmt.Println(id.Time().Format(time.RFC3339Nano), id.Datacenter(), id.Machine(), id.Sequence())
	fmt.Println(sfgen.ID(-1).Time().IsZero(), sfgen.ID(-1).Datacenter())
	// Output:
	// 2010-11-04T01:42:55.657Z 1 1 0
	// true -1
}
