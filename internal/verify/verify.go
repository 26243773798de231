package verify

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// ErrNotInstalled is returned by Run when the schema lacks sfgen's
// functions.
var ErrNotInstalled = errors.New("sfgen functions are not installed")

// ErrLayoutMismatch is returned by Run (as a *LayoutMismatchError) when
// the installed functions were generated for another layout.
var ErrLayoutMismatch = errors.New("installed functions use another layout")

// Options say what Run checks.
type Options struct {
	Layout    snowflake.Layout // the layout the schema must hold; zero: whichever it records
	Schema    string           // "" means public (catalog.ParseSchema)
	Count     int              // random inputs to check, besides the fixed vectors
	Seed      uint64           // seeds the inputs; the same seed gives the same inputs
	BatchSize int              // inputs per statement; 0 means 8192
	Workers   int              // connections used at once; 0 means 3
	Keep      int              // mismatches kept in full in the report; 0 means 10

	// GeneratorIDs is how many IDs the generator check draws from
	// snowflake_next_id() on each of GeneratorConnections connections at
	// once; 0 means 5000 and 4. A negative GeneratorIDs skips the check.
	GeneratorIDs, GeneratorConnections int

	// Progress, if set, is called after each batch with the number of
	// inputs checked so far. Calls do not overlap.
	Progress func(done int)
}

// A Report is what Run found.
type Report struct {
	Schema      string        `json:"schema"`
	Layout      string        `json:"layout"`
	Seed        uint64        `json:"seed"`
	Vectors     int           `json:"vectors"`      // fixed vectors checked
	TimeVectors int           `json:"time_vectors"` // fixed times checked in snowflake_first_id and snowflake_last_id
	Times       int           `json:"times"`        // random times checked in both (not counted in Checked)
	Checked     int           `json:"checked"`      // random inputs checked
	Valid       int           `json:"valid"`        // inputs Go composed (then decomposed and dated)
	Rejected    int           `json:"rejected"`     // inputs Go rejected: out-of-range fields and negative IDs
	Strings     int           `json:"strings"`      // calls of snowflake_format and snowflake_parse checked (release 8 on), not counted in Checked
	Mismatches  int           `json:"mismatches"`   // calls on which the two sides differ, times and strings included
	Examples    []Mismatch    `json:"examples"`     // the first mismatches, in full
	Elapsed     time.Duration `json:"elapsed_ns"`
	PerSecond   float64       `json:"inputs_per_second"` // random inputs checked per second

	Generator *GeneratorReport `json:"generator,omitempty"` // the check of snowflake_next_id()

	// Release is the sfgen SQL release the schema is at; LatestRelease is
	// this sfgen's (sqlgen.Latest). An older schema lacks release
	// LatestRelease's fixes even when every answer agrees.
	Release       int `json:"release"`
	LatestRelease int `json:"latest_release"`
	// Stale lists the functions whose comments say an older release wrote
	// them, in a schema that says it is at Release: an older sfgen's plain
	// script ran over it.
	Stale []string `json:"stale_functions,omitempty"`
	// IDMakers are the roles besides the owner that may make IDs
	// (catalog.IDMakers): each is trusted not to call nextval() on the
	// state by hand, which could make IDs repeat. "PUBLIC" is every role.
	IDMakers []string `json:"id_makers"`
}

// OK reports whether the run found no mismatch, the generator check found
// no problem, and the schema is at this sfgen's release.
func (r *Report) OK() bool {
	return r.Mismatches == 0 && (r.Generator == nil || r.Generator.OK()) && r.Release == r.LatestRelease && len(r.Stale) == 0
}

// A Mismatch is one input on which Go and the database differ.
type Mismatch struct {
	Check string `json:"check"` // the SQL call, e.g. snowflake_compose(1288834975657, 1, 1, 0)
	Go    string `json:"go"`    // Go's answer
	DB    string `json:"db"`    // the database's answer
	Seed  uint64 `json:"seed"`  // the run's seed
	Batch int    `json:"batch"` // the batch, -1 for the fixed vectors
}

func (m Mismatch) String() string {
	where := fmt.Sprintf("seed %d, batch %d", m.Seed, m.Batch)
	if m.Batch < 0 {
		where = "fixed vector"
	}
	return fmt.Sprintf("%s\n    go: %s\n    db: %s\n    (%s)", m.Check, m.Go, m.DB, where)
}

// Run checks the functions installed in o.Schema of the database behind
// pool against the Go composer: first the fixed vectors and fixed times
// (TimeVectors), then o.Count random inputs and one random time for every
// ten of them, then the generator (see checkGenerator). Each time is
// checked in snowflake_first_id and snowflake_last_id against
// Layout.FirstID and Layout.LastID. It installs
// nothing; it creates session-temporary helper functions (in pg_temp)
// that catch each rejection, and it uses up the IDs the generator check
// draws. A non-nil error means the check could not run; mismatches are in
// the report.
func Run(ctx context.Context, pool *pgxpool.Pool, o Options) (*Report, error) {
	o = o.withDefaults()
	schema, err := catalog.ParseSchema(o.Schema)
	if err != nil {
		return nil, err
	}
	in, err := catalog.Inspect(ctx, catalog.PGX(pool), schema)
	if err != nil {
		return nil, err
	}
	if o.Layout.IsZero() {
		o.Layout = in.Layout
	}
	if err := checkInstalled(in, o.Layout); err != nil {
		return nil, err
	}
	makers, _, err := catalog.IDMakers(ctx, catalog.PGX(pool), schema)
	if err != nil {
		return nil, err
	}
	c := &checker{o: o, schema: schema.Quoted(), prepared: map[*pgconn.PgConn]bool{}, strings: in.Has(catalog.FuncFormat),
		rep: &Report{Schema: schema.Name(), Layout: o.Layout.String(), Seed: o.Seed, Release: in.Release, LatestRelease: sqlgen.Latest, Stale: in.Stale, IDMakers: makers}}
	start := time.Now()
	if err := c.checkVectors(ctx, pool); err != nil {
		return nil, err
	}
	if err := c.checkRandom(ctx, pool); err != nil {
		return nil, err
	}
	c.rep.Elapsed = time.Since(start)
	if s := c.rep.Elapsed.Seconds(); s > 0 {
		c.rep.PerSecond = float64(c.rep.Checked) / s
	}
	if o.GeneratorIDs >= 0 {
		if c.rep.Generator, err = checkGenerator(ctx, pool, in, o.Layout, o.GeneratorConnections, o.GeneratorIDs, o.Keep); err != nil {
			return nil, err
		}
	}
	return c.rep, nil
}

// checkVectors checks the layout's fixed vectors, three negative IDs and
// the fixed times, on one connection.
func (c *checker) checkVectors(ctx context.Context, pool *pgxpool.Pool) error {
	vectors := Vectors(c.o.Layout)
	inputs := make([]Input, len(vectors))
	for i, v := range vectors {
		inputs[i] = v.Input
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	times := timeVectorTimes(c.o.Layout)
	vr, err := c.batch(ctx, conn, -1, inputs, []int64{-1, -4194439168, -1 << 63}, times)
	if err != nil {
		return err
	}
	c.rep.Vectors, c.rep.TimeVectors = len(vectors), len(times)
	c.merge(vr, false)
	return nil
}

// checkRandom checks c.o.Count random inputs in batches of c.o.BatchSize,
// on c.o.Workers connections at once, merging each batch's result into
// the report as it comes; the first error stops them all.
func (c *checker) checkRandom(ctx context.Context, pool *pgxpool.Pool) error {
	o := c.o
	batches := (o.Count + o.BatchSize - 1) / o.BatchSize
	work := make(chan int)
	results := make(chan *batchResult)
	errc := make(chan error, o.Workers)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < o.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pool.Acquire(ctx)
			if err != nil {
				errc <- err
				cancel()
				return
			}
			defer conn.Release()
			for b := range work {
				res, err := c.randomBatch(ctx, conn, b)
				if err != nil {
					errc <- err
					cancel()
					return
				}
				select {
				case results <- res:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(work)
		for b := 0; b < batches; b++ {
			select {
			case work <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	for res := range results {
		c.merge(res, true)
		if o.Progress != nil {
			o.Progress(c.rep.Checked)
		}
	}
	select {
	case err := <-errc:
		return err
	default:
	}
	return ctx.Err()
}

func (o Options) withDefaults() Options {
	if o.BatchSize <= 0 {
		o.BatchSize = 8192
	}
	if o.Workers <= 0 {
		o.Workers = 3 // one more than the cores here, so the database never waits on Go
	}
	if o.Keep <= 0 {
		o.Keep = 10
	}
	if o.GeneratorIDs == 0 {
		o.GeneratorIDs = 5000
	}
	if o.GeneratorConnections <= 0 {
		o.GeneratorConnections = 4
	}
	return o
}

// requiredFunctions are the functions Run calls, by signature.
var requiredFunctions = []string{catalog.FuncLayout, catalog.FuncCompose, catalog.FuncDecompose,
	catalog.FuncTimestamp, catalog.FuncFirstID, catalog.FuncLastID}

// A LayoutMismatchError is a schema that holds sfgen for another layout
// than the one asked for. It wraps ErrLayoutMismatch.
type LayoutMismatchError struct {
	Schema string
	Has    snowflake.Layout // the schema's
	Want   snowflake.Layout // the one asked for
}

func (e *LayoutMismatchError) Error() string {
	return fmt.Sprintf("%v: schema %s has %q, this sfgen uses %q", ErrLayoutMismatch, e.Schema, e.Has.String(), e.Want.String())
}

// Unwrap returns ErrLayoutMismatch.
func (e *LayoutMismatchError) Unwrap() error { return ErrLayoutMismatch }

// checkInstalled returns nil when in holds every function Run calls,
// generated for layout l; otherwise ErrNotInstalled (wrapped with what is
// missing) or a *LayoutMismatchError.
func checkInstalled(in catalog.Installed, l snowflake.Layout) error {
	if missing := in.Missing(requiredFunctions...); len(missing) > 0 {
		return fmt.Errorf("%w in schema %s: missing %v; run 'sfgen install' first", ErrNotInstalled, in.Schema, missing)
	}
	if in.Layout != l {
		return &LayoutMismatchError{Schema: in.Schema.Name(), Has: in.Layout, Want: l}
	}
	return nil
}

// checker runs the batches of one Run.
type checker struct {
	o      Options
	schema string // quoted

	mu       sync.Mutex
	rep      *Report
	prepared map[*pgconn.PgConn]bool // sessions that have the helpers
	strings  bool                    // the schema has the string forms (release 8 on)
}

type batchResult struct {
	checked, valid, rejected, mismatches int
	times                                int // random times checked
	strings                              int // string calls checked
	examples                             []Mismatch
}

func (c *checker) merge(r *batchResult, random bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if random {
		c.rep.Checked += r.checked
		c.rep.Valid += r.valid
		c.rep.Rejected += r.rejected
		c.rep.Times += r.times
	}
	c.rep.Strings += r.strings
	c.rep.Mismatches += r.mismatches
	for _, m := range r.examples {
		if len(c.rep.Examples) < c.o.Keep {
			c.rep.Examples = append(c.rep.Examples, m)
		}
	}
}

// randomBatch draws batch b's inputs and checks them.
func (c *checker) randomBatch(ctx context.Context, conn *pgxpool.Conn, b int) (*batchResult, error) {
	r := batchRand(c.o.Seed, b)
	g := newGenerator(c.o.Layout)
	n := min(c.o.BatchSize, c.o.Count-b*c.o.BatchSize)
	inputs := make([]Input, 0, n)
	var negatives []int64
	for range n {
		switch k := kindOf(r.IntN(100)); k {
		case kindNegative:
			negatives = append(negatives, negativeID(r))
		default:
			inputs = append(inputs, g.input(r, k))
		}
	}
	// Drawn after the inputs, so that a seed gives the inputs it gave
	// before times were checked.
	times := make([]Time, n/timesPerInput)
	for i := range times {
		times[i] = g.time(r)
	}
	res, err := c.batch(ctx, conn, b, inputs, negatives, times)
	if err != nil {
		return nil, err
	}
	res.times = len(times)
	return res, nil
}

// batch checks compose inputs, negative IDs and times on both sides.
func (c *checker) batch(ctx context.Context, conn *pgxpool.Conn, b int, inputs []Input, negatives []int64, times []Time) (*batchResult, error) {
	res := &batchResult{checked: len(inputs) + len(negatives), rejected: len(negatives)}
	l := c.o.Layout
	var valid, invalid []Input
	var validIDs []int64
	var invalidErrs []error
	for _, in := range inputs {
		id, err := l.Compose(in.Timestamp, int64(in.Datacenter), int64(in.Machine), int64(in.Sequence))
		if err != nil {
			invalid = append(invalid, in)
			invalidErrs = append(invalidErrs, err)
			continue
		}
		valid = append(valid, in)
		validIDs = append(validIDs, int64(id))
	}
	res.valid, res.rejected = len(valid), res.rejected+len(invalid)
	mismatch := func(check, goSide, dbSide string) {
		res.mismatches++
		if len(res.examples) < c.o.Keep {
			res.examples = append(res.examples, Mismatch{check, goSide, dbSide, c.o.Seed, b})
		}
	}
	if err := c.checkValid(ctx, conn, valid, validIDs, mismatch); err != nil {
		return nil, err
	}
	if err := c.checkRejected(ctx, conn, invalid, invalidErrs, mismatch); err != nil {
		return nil, err
	}
	if err := c.checkNegative(ctx, conn, negatives, mismatch); err != nil {
		return nil, err
	}
	if err := c.checkTimes(ctx, conn, times, mismatch); err != nil {
		return nil, err
	}
	if c.strings {
		// A stream of its own, so that a seed gives the inputs it gave
		// before the string forms were checked.
		calls := goStringCalls(rand.New(rand.NewPCG(c.o.Seed^stringsStream, uint64(b))), validIDs, negatives)
		if err := c.checkStrings(ctx, conn, calls, mismatch); err != nil {
			return nil, err
		}
		res.strings = len(calls)
	}
	return res, nil
}
