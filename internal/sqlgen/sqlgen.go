package sqlgen

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/sfgen/sfgen/internal/snowflake"
)

// Options say what to render.
type Options struct {
	// Layout is the ID layout; the zero value means snowflake.Twitter.
	Layout snowflake.Layout
	// Schema is the schema the objects are created in; "" means
	// DefaultSchema. It must pass ValidateSchema.
	Schema string
	// Datacenter and Machine are the node that snowflake_next_id() uses
	// until `sfgen node` changes it; each from 0 to the layout's maximum.
	Datacenter, Machine int64
}

//go:embed templates/*.sql.tmpl
var templateFS embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"literal": QuoteLiteral,
	"ident":   QuoteIdentifier,
}).ParseFS(templateFS, "templates/*.sql.tmpl"))

// Script renders the plain install script: every statement can run again
// on a database that already has them, so `psql -f` works on a fresh
// database and on one sfgen has installed into before.
func Script(o Options) ([]byte, error) { return render(o, false) }

// Migration renders the same statements as Script as one goose migration,
// with a Down section that removes what the Up section creates (but not
// the schema, which may hold other objects).
func Migration(o Options) ([]byte, error) { return render(o, true) }

// The timing of snowflake_next_id()'s catch-ups (see next_id.sql.tmpl).
// A catch-up is a PL/pgSQL call under a lock; how often one is due sets
// both its cost and how far the IDs' time trails the clock. Every 6 to
// 8 ms keeps the lag's p99 near 6.5 ms, inside the 10 ms the generator
// promises, with two thirds of the catch-ups (and ~1.5% more INSERTs) of
// every 4 to 6 ms; docs/generator.md has the measurements.
const (
	// CatchUpAfter is the age of the last catch-up from which a call may
	// take the slow path and catch up.
	CatchUpAfter = 6 * time.Millisecond
	// StaleAfter is the age from which every call takes the slow path.
	StaleAfter = 8 * time.Millisecond
	// LagLimit is how far behind the clock the slow path still uses the
	// state; further behind, it waits for a catch-up.
	LagLimit = 9 * time.Millisecond
)

// templateData is what the templates see. Every field is derived from the
// layout, the node numbers or the validated schema name.
type templateData struct {
	Goose          bool   // rendering a goose migration
	StatementBegin string // "-- +goose StatementBegin\n" in a migration, else ""
	StatementEnd   string // "-- +goose StatementEnd\n" in a migration, else ""

	SchemaName string // the schema, unquoted: public
	Schema     string // the schema as a quoted identifier: "public"
	Layout     string // the layout's String(), for snowflake_layout()
	EpochTime  string // the epoch as RFC 3339 UTC

	Epoch, MaxTimestamp, MaxDelta                 int64
	TimestampShift, DatacenterShift, MachineShift uint
	TimestampBits, DatacenterBits, MachineBits    uint
	SequenceBits                                  uint
	MaxDatacenter, MaxMachine, MaxSequence, MaxID int64
	LowBitsMask                                   int64 // the datacenter, machine and sequence bits all set: 4194303
	Datacenter, Machine                           int64
	TimestampError, DatacenterError, MachineError string // format() strings for range errors
	SequenceError, IDError                        string

	// For snowflake_next_id(), whose state is (unix_ms << SequenceBits) | sequence.
	NodeBits uint  // DatacenterBits + MachineBits
	NodeFrom uint  // 65 - SequenceBits: where the node bits go into the state's 64 bits, 1-based
	MinState int64 // Epoch << SequenceBits: the state of the first ID
	MaxState int64 // (MaxTimestamp << SequenceBits) | MaxSequence: the state of the last ID

	// When snowflake_next_id() catches up with the clock, in milliseconds
	// since the last catch-up: due from CatchUpMs (one call in a few takes
	// the slow path, more as it ages), on every call from StaleMs; the slow
	// path waits for a catch-up rather than use a state more than LagLimitMs
	// behind the clock.
	CatchUpMs, StaleMs, CatchUpSpreadMs, LagLimitMs int64
}

func newTemplateData(o Options, goose bool) (*templateData, error) {
	l := o.Layout
	if l == (snowflake.Layout{}) {
		l = snowflake.Twitter
	}
	schema := o.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	if err := ValidateSchema(schema); err != nil {
		return nil, err
	}
	for _, n := range []struct {
		f snowflake.Field
		v int64
	}{{snowflake.FieldDatacenter, o.Datacenter}, {snowflake.FieldMachine, o.Machine}} {
		if n.v < 0 || n.v > l.Max(n.f) {
			return nil, &snowflake.RangeError{Field: n.f, Value: n.v, Min: 0, Max: l.Max(n.f)}
		}
	}
	msg := func(f snowflake.Field) string {
		// The same words as the Go error, with %s where format() puts the value.
		return snowflake.RangeMessage(f, "%s", l.Min(f), l.Max(f))
	}
	d := &templateData{
		Goose:      goose,
		SchemaName: schema,
		Schema:     QuoteIdentifier(schema),
		Layout:     l.String(),
		EpochTime:  l.MinTime().Format("2006-01-02T15:04:05.000Z07:00"),

		Epoch:           l.Epoch(),
		MaxTimestamp:    l.Max(snowflake.FieldTimestamp),
		MaxDelta:        l.Max(snowflake.FieldTimestamp) - l.Epoch(),
		TimestampShift:  l.Shift(snowflake.FieldTimestamp),
		DatacenterShift: l.Shift(snowflake.FieldDatacenter),
		MachineShift:    l.Shift(snowflake.FieldMachine),
		TimestampBits:   l.Bits(snowflake.FieldTimestamp),
		DatacenterBits:  l.Bits(snowflake.FieldDatacenter),
		MachineBits:     l.Bits(snowflake.FieldMachine),
		SequenceBits:    l.Bits(snowflake.FieldSequence),
		MaxDatacenter:   l.Max(snowflake.FieldDatacenter),
		MaxMachine:      l.Max(snowflake.FieldMachine),
		MaxSequence:     l.Max(snowflake.FieldSequence),
		MaxID:           l.Max(snowflake.FieldID),
		LowBitsMask:     1<<l.Shift(snowflake.FieldTimestamp) - 1,
		Datacenter:      o.Datacenter,
		Machine:         o.Machine,

		TimestampError:  msg(snowflake.FieldTimestamp),
		DatacenterError: msg(snowflake.FieldDatacenter),
		MachineError:    msg(snowflake.FieldMachine),
		SequenceError:   msg(snowflake.FieldSequence),
		IDError:         msg(snowflake.FieldID),

		NodeBits: l.Bits(snowflake.FieldDatacenter) + l.Bits(snowflake.FieldMachine),
		NodeFrom: 65 - l.Bits(snowflake.FieldSequence),
		MinState: l.Epoch() << l.Bits(snowflake.FieldSequence),
		MaxState: l.Max(snowflake.FieldTimestamp)<<l.Bits(snowflake.FieldSequence) | l.Max(snowflake.FieldSequence),

		CatchUpMs: CatchUpAfter.Milliseconds(), StaleMs: StaleAfter.Milliseconds(),
		CatchUpSpreadMs: (StaleAfter - CatchUpAfter).Milliseconds(), LagLimitMs: LagLimit.Milliseconds(),
	}
	if goose {
		d.StatementBegin = "-- +goose StatementBegin\n"
		d.StatementEnd = "-- +goose StatementEnd\n"
	}
	return d, nil
}

func render(o Options, goose bool) ([]byte, error) {
	d, err := newTemplateData(o, goose)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, "snowflake.sql.tmpl", d); err != nil {
		return nil, fmt.Errorf("render sql: %w", err)
	}
	return tidy(b.Bytes()), nil
}

// tidy trims trailing spaces and folds runs of blank lines, so that the
// templates can be laid out for reading without that showing in the SQL.
func tidy(b []byte) []byte {
	lines := strings.Split(string(b), "\n")
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" && (len(out) == 0 || out[len(out)-1] == "") {
			continue
		}
		out = append(out, l)
	}
	return []byte(strings.TrimRight(strings.Join(out, "\n"), "\n") + "\n")
}
