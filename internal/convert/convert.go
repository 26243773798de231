// Package convert moves an existing table's integer key to sfgen's
// snowflake_next_id(): its one job is 'sfgen convert'. [Prepare] reads
// the table, its key column and the foreign keys that reference it, and
// refuses, changing nothing, what it cannot convert safely; the [Plan] it
// returns holds the one script that converts (Plan.SQL, also a goose
// migration), which [Plan.Apply] runs in one transaction under a
// lock_timeout, retried a few times when the lock is not had in time.
//
// The script takes ACCESS EXCLUSIVE locks on the table and, for an
// integer or smallint key, on every table whose foreign key references it
// (those columns are widened to bigint with the key: a rewrite of each
// table); then, under the locks, checks that every value the key holds
// is below the first ID snowflake_next_id() makes (SQLSTATE SF301
// otherwise) and records that ID, per table and column, in
// snowflake_conversion of sfgen's private schema (catalog.PrivateSchema),
// where 'sfgen audit' finds it ([Legacy]) and counts the values below it
// as legacy. A sequence the old default or a serial column used is kept as
// it was (pg_dump's setval still restores it, and another column it feeds
// goes on using it); an identity's sequence goes with the identity.
//
// Every statement is in sql/convert.sql.tmpl, rendered with text/template
// from names checked by audit.ValidateName and quoted by pgident, with
// every operator, function and type bound to pg_catalog or to sfgen's
// schema.
//
// Before any change, and before it reads the tables' rows, it refuses
// (an *OthersCodeError) tables whose constraints, indexes, statistics,
// triggers, rules, policies, defaults or column types reach a function
// of a role other than the converting one and superusers (package
// otherscode, which reads the catalogs only): a rewrite, an index
// rebuild, a constraint's check or a query's planning would run it with
// the converting role's privileges, and its owner may replace it.
package convert

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/audit"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/otherscode"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlstate"
)

//go:embed sql/convert.sql.tmpl
var sqlFS embed.FS

var statements = template.Must(template.New("").ParseFS(sqlFS, "sql/convert.sql.tmpl"))

// RecordTable is the table, in sfgen's private schema, where conversions
// are recorded.
const RecordTable = "snowflake_conversion"

// Defaults of Options.
const (
	DefaultLockTimeout = 2 * time.Second
	DefaultRetries     = 5
)

// Sentinels for errors.Is. Every refusal (nothing was changed, nor tried)
// is ErrRefused; ErrNeedsRewrite and ErrAhead say which.
var (
	ErrRefused      = errors.New("conversion refused")
	ErrNeedsRewrite = errors.New("conversion needs a rewrite")
	ErrAhead        = errors.New("table holds IDs at or above the first new one")
	ErrLockTimeout  = errors.New("lock not had in time")
	// ErrOthersCode: a table convert would alter has a constraint, an
	// index, a trigger, a rule, a policy, a default or a column type that
	// calls a function of another role (an *OthersCodeError).
	ErrOthersCode = errors.New("would run another role's code")
)

// A RefusedError says why a table is not converted. Kind, when not nil,
// is the sentinel of a particular refusal (ErrAhead).
type RefusedError struct {
	Reason string
	Kind   error
}

func (e *RefusedError) Error() string { return e.Reason }

// Unwrap returns ErrRefused, and Kind.
func (e *RefusedError) Unwrap() []error {
	if e.Kind == nil {
		return []error{ErrRefused}
	}
	return []error{ErrRefused, e.Kind}
}

func refuse(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// A RewriteError refuses a conversion that rewrites tables without
// Options.Rewrite: it says which, and how big.
type RewriteError struct {
	Key      string
	Type     string
	Rewrites []Rewrite
}

func (e *RewriteError) Error() string {
	var ts []string
	for _, r := range e.Rewrites {
		ts = append(ts, r.String())
	}
	return fmt.Sprintf("%s is %s: it and the foreign keys that reference it become bigint, which rewrites %s under an ACCESS EXCLUSIVE lock (no reads or writes until it ends); give --rewrite to do it, or --dry-run to see the SQL; nothing changed",
		e.Key, e.Type, strings.Join(ts, ", "))
}

// Is reports whether target is ErrRefused or ErrNeedsRewrite.
func (e *RewriteError) Is(target error) bool {
	return target == ErrRefused || target == ErrNeedsRewrite
}

// An AheadError refuses a table that holds a value at or above the first
// ID the node makes now.
type AheadError struct {
	Key     string
	Max     int64
	FirstID int64
}

func (e *AheadError) Error() string {
	return fmt.Sprintf("%s holds %d, at or above %d, the first ID the node would make now; new IDs must sort after the old ones, so it is not converted; nothing changed", e.Key, e.Max, e.FirstID)
}

// Is reports whether target is ErrRefused or ErrAhead.
func (e *AheadError) Is(target error) bool { return target == ErrRefused || target == ErrAhead }

// An OthersCode is a function of another role that altering a table
// could run: neither the converting role's (the owner of the tables it
// alters) nor a superuser's.
type OthersCode = otherscode.Use

// An OthersCodeError refuses a conversion whose statements (a rewrite,
// an index rebuild, a constraint's check) could run functions of other
// roles with the converting role's privileges: such a role may replace
// its function at any time, with code that makes it a superuser when a
// superuser runs it.
type OthersCodeError struct {
	Uses []OthersCode
}

func (e *OthersCodeError) Error() string {
	var uses, fixes []string
	for _, u := range e.Uses {
		uses = append(uses, u.String())
		if u.Owner != u.TableOwner && !slices.Contains(fixes, u.Fix()) {
			fixes = append(fixes, u.Fix())
		}
	}
	fix := ""
	if len(fixes) > 0 {
		fix = "make it the table owner's (" + strings.Join(fixes, "; ") + ", run by a superuser), or "
	}
	return fmt.Sprintf("convert would run another role's code with this role's privileges: %s; altering a table (a rewrite, an index rebuild, a constraint's check) can run it, and its owner may replace it at any time: %sdrop the object, convert, and create it again; nothing changed",
		strings.Join(uses, "; "), fix)
}

// Is reports whether target is ErrRefused or ErrOthersCode.
func (e *OthersCodeError) Is(target error) bool {
	return target == ErrRefused || target == ErrOthersCode
}

// Options says what to convert.
type Options struct {
	Sfgen       string // sfgen's schema; "" is public
	TableSchema string // the table's schema; "" is public
	Table       string
	Column      string // "" is the table's single-column primary key
	Rewrite     bool   // allow widening integer and smallint columns (a rewrite)
	LockTimeout time.Duration
	Retries     int // further tries when a lock is not had in time; 0 is DefaultRetries, negative none
	// OnRetry, when set, is called before each retry with the error of the
	// try before (tests use it).
	OnRetry func(try int, err error)
}

// A Rewrite is a table the conversion rewrites.
type Rewrite struct {
	Table string `json:"table"` // schema.table
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"` // table, indexes and TOAST

	tableQ string // Table, quoted
}

func (r Rewrite) String() string {
	return fmt.Sprintf("%s (%d rows, %s)", r.Table, r.Rows, humanBytes(r.Bytes))
}

// A Column is a column the conversion changes or records.
type Column struct {
	Schema string `json:"schema"`
	Table  string `json:"table"`
	Column string `json:"column"`
	Type   string `json:"type"`                 // before
	Via    string `json:"constraint,omitempty"` // for a referencing column, its foreign key

	oid    int64
	attnum int
}

func (c Column) String() string { return c.Schema + "." + c.Table + "." + c.Column }

// A Plan is a checked conversion: what it changes and the script.
type Plan struct {
	Key         Column           `json:"key"`
	Default     string           `json:"old_default"` // "" none
	Identity    string           `json:"identity,omitempty"`
	Sequence    string           `json:"sequence,omitempty"`        // the sequence the old default or a serial used, kept
	SharedWith  []string         `json:"sequence_shared,omitempty"` // other columns whose default uses it
	Referencing []Column         `json:"referencing"`
	Rewrites    []Rewrite        `json:"rewrites"`
	Locks       []string         `json:"locks"`                       // tables locked ACCESS EXCLUSIVE, in order
	Distributed bool             `json:"citus_distributed,omitempty"` // in Citus' metadata: the default is then snowflake_next_id_local()
	MaxID       *int64           `json:"-"`
	FirstID     int64            `json:"-"` // the first ID the node would make at the planning
	Sfgen       string           `json:"sfgen_schema"`
	Record      string           `json:"record"` // private.snowflake_conversion
	Node        catalog.Node     `json:"-"`
	Layout      snowflake.Layout `json:"-"`
	SQL         string           `json:"sql"`

	o        Options
	locksQ   []string // Locks, quoted
	lockOIDs []int64  // Locks' oids
	static   string   // SQL without comments, to tell a change between planning and applying
}

// A Querier is a *sql.DB, *sql.Conn or *sql.Tx.
type Querier = catalog.SQLQuerier

func render(name string, data any) (string, error) {
	var b bytes.Buffer
	if err := statements.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	return b.String(), nil
}

func execTemplate(ctx context.Context, tx *sql.Tx, name string, data any) error {
	stmt, err := render(name, data)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, stmt)
	return err
}

func queryRow(ctx context.Context, q Querier, name string, data any, args []any, dest ...any) error {
	stmt, err := render(name, data)
	if err != nil {
		return err
	}
	return q.QueryRowContext(ctx, stmt, args...).Scan(dest...)
}

func (o Options) withDefaults() Options {
	if o.TableSchema == "" {
		o.TableSchema = "public"
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.Retries == 0 {
		o.Retries = DefaultRetries
	}
	return o
}

// Check validates the options without a database.
func (o Options) Check() error {
	o = o.withDefaults()
	if _, err := catalog.ParseSchema(o.Sfgen); err != nil {
		return err
	}
	for _, n := range []struct{ field, value string }{{"schema", o.TableSchema}, {"table", o.Table}} {
		if err := audit.ValidateName(n.field, n.value); err != nil {
			return err
		}
	}
	if o.Column != "" {
		if err := audit.ValidateName("column", o.Column); err != nil {
			return err
		}
	}
	if o.LockTimeout < time.Millisecond || o.LockTimeout > time.Hour {
		return fmt.Errorf("lock timeout %v out of range: want 1ms to 1h", o.LockTimeout)
	}
	return nil
}

var integerTypes = map[string]bool{"smallint": true, "integer": true, "bigint": true}

// Prepare reads what converting o's table means through q and returns the
// plan, or the reason it refuses (errors.Is(err, ErrRefused)): sfgen not
// installed in o.Sfgen, untrusted (catalog.Inspect), before release 4, or
// without a node; no such table, a partitioned table, a partition or a
// table with inheritance; a table this role does not own; a column that
// is not a key or not an integer; a generated column; one that already
// defaults to snowflake_next_id(); a table that holds a value at or above
// the first ID the node makes now (an *AheadError); a table it alters
// (or whose foreign key it has checked again) whose constraints,
// indexes, statistics, triggers, rules, policies, defaults or column
// types call a function of another role (an *OthersCodeError); a role
// that may not write the record; and, for an integer or smallint key, a
// rewrite that views, rules or policies on the columns would block, or
// one without
// o.Rewrite: then the plan is returned too, with a *RewriteError, so that
// --dry-run can print it.
func Prepare(ctx context.Context, q Querier, o Options) (*Plan, error) {
	return prepare(ctx, q, o, true)
}

// prepare is Prepare; sizes says whether to count the rows of the tables
// rewritten (Apply's second look, under the locks, does not).
func prepare(ctx context.Context, q Querier, o Options, sizes bool) (*Plan, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	sfgen, _ := catalog.ParseSchema(o.Sfgen)
	in, err := catalog.Inspect(ctx, catalog.DB(q), sfgen)
	switch {
	case errors.Is(err, catalog.ErrUntrusted):
		return nil, &RefusedError{Reason: err.Error()}
	case err != nil:
		return nil, err
	case in.Layout.IsZero():
		return nil, refuse("sfgen is not installed in schema %s (no %s there): install it with 'sfgen install --schema %s', or name its schema with --sfgen-schema", sfgen, catalog.FuncLayout, sfgen)
	case in.Release < 4:
		return nil, refuse("schema %s is at sfgen release %d, and convert records its conversions in sfgen's private schema, from release 4: upgrade with 'sfgen install --schema %s'", sfgen, in.Release, sfgen)
	case in.Node.State != catalog.NodeSet:
		return nil, refuse("schema %s has no node, so its snowflake_next_id() makes no IDs: set one with 'sfgen node --schema %s --datacenter N --machine N'", sfgen, sfgen)
	}
	p := &Plan{o: o, Sfgen: sfgen.Name(), Node: in.Node, Layout: in.Layout,
		Record: catalog.PrivateSchema(sfgen.Name()) + "." + RecordTable, Referencing: []Column{}, Rewrites: []Rewrite{}}
	name := o.TableSchema + "." + o.Table
	var oid int64
	var kind, owner string
	var partition, inherits, forced, isOwner bool
	err = queryRow(ctx, q, "table", nil, []any{o.TableSchema, o.Table}, &oid, &kind, &partition, &inherits, &forced, &owner, &isOwner)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, refuse("table %s does not exist (names are matched exactly, as if quoted)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("look up %s: %w", name, err)
	}
	switch {
	case kind == "p":
		return nil, refuse("%s is a partitioned table, which convert does not convert (each partition would need its own check and lock); nothing changed", name)
	case kind != "r":
		return nil, refuse("%s is not a table (relkind %s); nothing changed", name, kind)
	case partition:
		return nil, refuse("%s is a partition, which convert does not convert; nothing changed", name)
	case inherits:
		return nil, refuse("%s has inheritance parents or children, which convert does not convert; nothing changed", name)
	case !isOwner:
		return nil, refuse("%s is owned by role %s: convert alters a table only as its owner, so that no other role's code (a CHECK, an index expression) runs with this role's privileges; run convert as %s; nothing changed", name, owner, owner)
	case forced:
		return nil, refuse("%s forces row security on its owner, which could hide rows from the check that every value is below the first new ID: ALTER TABLE ... NO FORCE ROW LEVEL SECURITY first; nothing changed", name)
	}
	column := o.Column
	if column == "" {
		var n int
		if err := queryRow(ctx, q, "primary_key", nil, []any{oid}, &n, &column); err != nil {
			return nil, fmt.Errorf("read the primary key of %s: %w", name, err)
		}
		switch {
		case n == 0:
			return nil, refuse("%s has no primary key: name the key column with --column", name)
		case n > 1:
			return nil, refuse("%s's primary key has %d columns, and convert converts a key of one column (name it with --column)", name, n)
		}
	}
	var attnum int
	var typ, identity, def, seq string
	var generated, key bool
	err = queryRow(ctx, q, "column", nil, []any{oid, column}, &attnum, &typ, &identity, &generated, &def, &seq, &key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, refuse("column %s.%s does not exist (names are matched exactly, as if quoted)", name, column)
	}
	if err != nil {
		return nil, fmt.Errorf("look up %s.%s: %w", name, column, err)
	}
	p.Key = Column{Schema: o.TableSchema, Table: o.Table, Column: column, Type: typ, oid: oid, attnum: attnum}
	switch {
	case !integerTypes[typ]:
		return nil, refuse("column %s is of type %s, and convert converts bigint, integer and smallint keys; nothing changed", p.Key, typ)
	case generated:
		return nil, refuse("column %s is a generated column; nothing changed", p.Key)
	case !key:
		return nil, refuse("column %s is not a key: convert converts a column that a primary key, a unique constraint or a unique index has alone; nothing changed", p.Key)
	case strings.Contains(def, "snowflake_next_id()"), strings.Contains(def, "snowflake_next_id_local()"):
		return nil, refuse("column %s already defaults to %s; nothing to convert", p.Key, def)
	}
	// A table Citus distributes (or replicates: a reference table)
	// defaults to snowflake_next_id_local(),
	// whose text body records no dependency: with snowflake_next_id(),
	// Citus would copy this node's generator, node included, over every
	// worker's (docs/citus.md).
	distributedBy, distributed, err := catalog.CitusDistributionColumn(ctx, catalog.DB(q), o.TableSchema, o.Table)
	if err != nil {
		return nil, err
	}
	p.Distributed = distributed
	if distributed && distributedBy == column {
		return nil, refuse("column %s is the column Citus distributes table %s by, whose default Citus does not let change (ALTER TABLE ... SET DEFAULT on the distribution column); nothing changed", p.Key, name)
	}
	if p.Distributed && typ != "bigint" {
		return nil, refuse("table %s is a Citus table (distributed or reference), and convert does not change the type of its key there (column %s is %s): widen it to bigint with Citus first; nothing changed", name, p.Key, typ)
	}
	p.Default, p.Identity, p.Sequence = def, map[string]string{"a": "ALWAYS", "d": "BY DEFAULT"}[identity], seq
	if seq != "" && identity == "" {
		var users string
		if err := queryRow(ctx, q, "sequence_users", nil, []any{seq, oid, attnum}, &users); err != nil {
			return nil, fmt.Errorf("read the users of sequence %s: %w", seq, err)
		}
		p.SharedWith = lines(users)
	}
	if err := p.readReferencing(ctx, q); err != nil {
		return nil, err
	}
	// The tables it alters, locked in the order inserts take their locks
	// (a child's, then its foreign key's check of the parent), so that no
	// insert waits on it while it waits on that insert: the referencing
	// tables it widens, the last found first, then the key's. Referencing
	// columns already bigint are recorded, not altered, nor locked.
	locked := map[string]bool{}
	lock := func(c Column) {
		if t := c.Schema + "." + c.Table; !locked[t] {
			locked[t] = true
			p.Locks = append(p.Locks, t)
			p.locksQ = append(p.locksQ, pgident.Quote(c.Schema)+"."+pgident.Quote(c.Table))
			p.lockOIDs = append(p.lockOIDs, c.oid)
		}
	}
	for i := len(p.Referencing) - 1; i >= 0; i-- {
		if c := p.Referencing[i]; c.Type != "bigint" {
			lock(c)
		}
	}
	lock(p.Key)
	if err := p.checkWidened(ctx, q); err != nil {
		return nil, err
	}
	// Before any read of the tables' rows (the sizes counted below, the
	// largest value): none runs code, but the check comes first anyway.
	if err := p.checkOthersCode(ctx, q); err != nil {
		return nil, err
	}
	if sizes {
		if err := p.readSizes(ctx, q); err != nil {
			return nil, err
		}
	}
	if p.Distributed && len(p.Rewrites) > 0 {
		return nil, refuse("table %s is a Citus table (distributed or reference), and convert does not change the type of the columns that reference its key there (%s would be rewritten): widen them to bigint with Citus first; nothing changed", name, p.Rewrites[0].Table)
	}
	d, err := p.data()
	if err != nil {
		return nil, err
	}
	var maxID sql.Null[int64]
	var nowMs int64
	var canRecord bool
	if err := queryRow(ctx, q, "state", d, []any{catalog.PrivateSchema(sfgen.Name())}, &maxID, &nowMs, &canRecord); err != nil {
		return nil, fmt.Errorf("read %s: %w", p.Key, err)
	}
	first, err := in.Layout.Compose(nowMs, in.Node.Datacenter, in.Node.Machine, 0)
	if err != nil {
		return nil, fmt.Errorf("the first ID at the database's clock, %d: %w", nowMs, err)
	}
	p.FirstID = int64(first)
	if maxID.Valid {
		p.MaxID = &maxID.V
		if maxID.V >= p.FirstID {
			return nil, &AheadError{Key: p.Key.String(), Max: maxID.V, FirstID: p.FirstID}
		}
	}
	if !canRecord {
		return nil, refuse("convert records the conversion in %s, and this role may not write there (only sfgen's owner, %s, may): run convert as %s, or a member of it, who must also own %s; nothing changed", p.Record, in.Owner, in.Owner, name)
	}
	if p.SQL, err = render("script", d); err != nil {
		return nil, err
	}
	p.static = static(p.SQL)
	if len(p.Rewrites) > 0 && !o.Rewrite {
		return p, &RewriteError{Key: p.Key.String(), Type: typ, Rewrites: p.Rewrites}
	}
	return p, nil
}

// NextID is the function the key defaults to after the conversion:
// snowflake_next_id, or snowflake_next_id_local on a table Citus
// distributes.
func (p *Plan) NextID() string {
	if p.Distributed {
		return "snowflake_next_id_local"
	}
	return "snowflake_next_id"
}

// columns returns the key and the columns that reference it.
func (p *Plan) columns() []Column { return append([]Column{p.Key}, p.Referencing...) }

// readReferencing reads the columns whose foreign keys reference the key,
// and those that reference them, in turn.
func (p *Plan) readReferencing(ctx context.Context, q Querier) error {
	type at struct {
		oid    int64
		attnum int
	}
	seen := map[at]bool{{p.Key.oid, p.Key.attnum}: true}
	queue := []at{{p.Key.oid, p.Key.attnum}}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		var refs string
		if err := queryRow(ctx, q, "referencing", nil, []any{c.oid, c.attnum}, &refs); err != nil {
			return fmt.Errorf("read the foreign keys that reference %s: %w", p.Key, err)
		}
		for _, line := range lines(refs) {
			f := strings.Split(line, "\t")
			if len(f) != 7 {
				return fmt.Errorf("read the foreign keys that reference %s: unexpected row %q", p.Key, line)
			}
			roid, err1 := strconv.ParseInt(f[0], 10, 64)
			rnum, err2 := strconv.Atoi(f[3])
			if err := errors.Join(err1, err2); err != nil {
				return fmt.Errorf("read the foreign keys that reference %s: %w", p.Key, err)
			}
			k := at{roid, rnum}
			if seen[k] {
				continue
			}
			seen[k] = true
			queue = append(queue, k)
			p.Referencing = append(p.Referencing, Column{Schema: f[1], Table: f[2], Column: f[4], Type: f[5], Via: f[6], oid: roid, attnum: rnum})
		}
	}
	return nil
}

// checkWidened checks the columns that become bigint: of an integer
// type, used by no view, rule or policy, in tables this role owns; and
// lists their tables in p.Rewrites (sizes unknown, -1: readSizes).
func (p *Plan) checkWidened(ctx context.Context, q Querier) error {
	rewritten := map[int64]bool{}
	for _, c := range p.columns() {
		if c.Type == "bigint" {
			continue
		}
		if !integerTypes[c.Type] {
			return refuse("column %s references %s and is of type %s; convert widens only integer and smallint columns; nothing changed", c, p.Key, c.Type)
		}
		var deps string
		if err := queryRow(ctx, q, "dependents", nil, []any{c.oid, c.attnum}, &deps); err != nil {
			return fmt.Errorf("read what depends on %s: %w", c, err)
		}
		if ds := lines(deps); len(ds) > 0 {
			return refuse("column %s would become bigint, and %s use it, which keeps its type from changing: drop them, convert, and create them again; nothing changed", c, strings.Join(ds, ", "))
		}
		if rewritten[c.oid] {
			continue
		}
		rewritten[c.oid] = true
		t := c.Schema + "." + c.Table
		var kind, owner string
		var partition, inherits, forced, isOwner bool
		var oid int64
		if err := queryRow(ctx, q, "table", nil, []any{c.Schema, c.Table}, &oid, &kind, &partition, &inherits, &forced, &owner, &isOwner); err != nil {
			return fmt.Errorf("look up %s: %w", t, err)
		}
		switch {
		case kind != "r" || partition || inherits:
			return refuse("column %s would become bigint, and %s is partitioned, a partition or has inheritance, which convert does not rewrite; nothing changed", c, t)
		case !isOwner:
			return refuse("column %s would become bigint, and %s is owned by role %s: convert alters a table only as its owner, so that no other role's code (a CHECK, an index expression) runs with this role's privileges; run convert as %s; nothing changed", c, t, owner, owner)
		}
		p.Rewrites = append(p.Rewrites, Rewrite{Table: t, Rows: -1, Bytes: -1, tableQ: pgident.Quote(c.Schema) + "." + pgident.Quote(c.Table)})
	}
	return nil
}

// readSizes counts the rows and bytes of the tables p.Rewrites names.
func (p *Plan) readSizes(ctx context.Context, q Querier) error {
	for i := range p.Rewrites {
		r := &p.Rewrites[i]
		d := struct{ TableQ, TableL string }{r.tableQ, pgident.QuoteLiteral(r.tableQ)}
		if err := queryRow(ctx, q, "size", d, nil, &r.Rows, &r.Bytes); err != nil {
			return fmt.Errorf("read the size of %s: %w", r.Table, err)
		}
	}
	return nil
}

// checkOthersCode refuses, with an *OthersCodeError, tables convert
// alters or has PostgreSQL read (checkOIDs) with a constraint, an index,
// a trigger, a rule, a policy, a default or a column type that calls,
// directly or through operators, operator classes, domains and
// SQL-standard bodies, a function whose owner is neither this role (the
// owner of the tables it alters) nor a superuser (package otherscode). It
// reads catalogs only: nothing it finds is called.
func (p *Plan) checkOthersCode(ctx context.Context, q Querier) error {
	uses, err := otherscode.Find(ctx, q, p.checkOIDs(), otherscode.Options{NotCurrentRole: true})
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(p.Locks, ", "), err)
	}
	if len(uses) > 0 {
		return &OthersCodeError{Uses: uses}
	}
	return nil
}

// checkOIDs are the tables whose functions checkOthersCode checks: those
// it alters (p.Locks), and, when the key changes type, the referencing
// tables already bigint, which it does not alter but whose foreign keys
// PostgreSQL checks again with a query over them, whose planning folds
// their indexes' constant parts.
func (p *Plan) checkOIDs() []int64 {
	oids := slices.Clone(p.lockOIDs)
	if p.Key.Type != "bigint" {
		for _, c := range p.Referencing {
			if c.Type == "bigint" && !slices.Contains(oids, c.oid) {
				oids = append(oids, c.oid)
			}
		}
	}
	return oids
}

type scriptRecord struct {
	SchemaL, TableL, ColumnL, TypeL string
	Referencing                     bool
}

type scriptWiden struct{ TableQ, ColumnQ string }

// scriptData is what the script template reads (and "state" its
// TableQ and ColumnQ).
type scriptData struct {
	What, TableQ, ColumnQ, SfgenQ, SfgenL, NameL, RecordQ, LayoutL string
	NextID                                                         string // the default's function: snowflake_next_id, or snowflake_next_id_local on Citus
	OIDs                                                           string // the SQL of an oid[] of the tables locked (Locks, as regclass)
	OthersCode                                                     string // the query of otherscode over checkOIDs' tables, this role's functions left out
	Notes, Locks                                                   []string
	LockTimeoutMs                                                  int64
	DropIdentity                                                   bool
	HeadOnly                                                       bool // the script up to its ALTER TABLEs
	Records                                                        []scriptRecord
	Widen                                                          []scriptWiden
}

func (p *Plan) data() (scriptData, error) {
	q := func(s, t string) string { return pgident.Quote(s) + "." + pgident.Quote(t) }
	lit := pgident.QuoteLiteral
	d := scriptData{
		TableQ: q(p.Key.Schema, p.Key.Table), ColumnQ: pgident.Quote(p.Key.Column),
		SfgenQ: pgident.Quote(p.Sfgen), SfgenL: lit(p.Sfgen), NameL: lit(p.Key.String()),
		RecordQ: q(catalog.PrivateSchema(p.Sfgen), RecordTable), LayoutL: lit(p.Layout.Name()),
		LockTimeoutMs: p.o.LockTimeout.Milliseconds(), DropIdentity: p.Identity != "", Locks: p.locksQ,
	}
	var oids []string
	for _, t := range p.locksQ {
		oids = append(oids, lit(t)+"::pg_catalog.regclass")
	}
	d.OIDs = "ARRAY[" + strings.Join(oids, ", ") + "]::pg_catalog.oid[]"
	var err error
	checked := oids
	if p.Key.Type != "bigint" {
		for _, c := range p.Referencing {
			if c.Type == "bigint" {
				checked = append(checked, lit(q(c.Schema, c.Table))+"::pg_catalog.regclass")
			}
		}
	}
	if d.OthersCode, err = otherscode.Query("ARRAY["+strings.Join(checked, ", ")+"]::pg_catalog.oid[]", otherscode.Options{NotCurrentRole: true}); err != nil {
		return d, err
	}
	d.NextID = p.NextID()
	d.What = oneLine(fmt.Sprintf("%s (%s) to %s.%s(), layout %s, node %s", p.Key, p.Key.Type, p.Sfgen, d.NextID, p.Layout.Name(), p.Node))
	was := "no default"
	switch {
	case p.Identity != "":
		was = "an identity, GENERATED " + p.Identity + ", dropped with its sequence " + p.Sequence
	case p.Default != "":
		was = "default " + p.Default
	}
	d.Notes = append(d.Notes, oneLine("Was: "+was+"."))
	if p.Sequence != "" && p.Identity == "" {
		n := "Sequence " + p.Sequence + " stays as it is (its value, limits and OWNED BY), so pg_dump's setval still restores it"
		if len(p.SharedWith) > 0 {
			n += ", and " + strings.Join(p.SharedWith, ", ") + " go on using it"
		} else {
			n += "; nothing else uses it: drop it once you no longer need to go back"
		}
		d.Notes = append(d.Notes, oneLine(n+"."))
	}
	lockNote := "Locks: ACCESS EXCLUSIVE (no reads or writes meanwhile) on " + strings.Join(p.Locks, ", ") +
		fmt.Sprintf(", waiting at most %v for each", p.o.LockTimeout)
	if len(p.Rewrites) == 0 {
		lockNote += "; catalog changes only, no rewrite, so held for milliseconds"
	} else {
		var rs []string
		for _, r := range p.Rewrites {
			if r.Rows < 0 {
				rs = append(rs, r.Table)
			} else {
				rs = append(rs, r.String())
			}
		}
		lockNote += "; held while it rewrites " + strings.Join(rs, ", ") + " and checks their foreign keys again"
	}
	d.Notes = append(d.Notes, oneLine(lockNote+"."))
	d.Records = append(d.Records, scriptRecord{lit(p.Key.Schema), lit(p.Key.Table), lit(p.Key.Column), lit(p.Key.Type), false})
	for _, c := range p.Referencing {
		d.Records = append(d.Records, scriptRecord{lit(c.Schema), lit(c.Table), lit(c.Column), lit(c.Type), true})
		becomes := ""
		if c.Type != "bigint" {
			d.Widen = append(d.Widen, scriptWiden{q(c.Schema, c.Table), pgident.Quote(c.Column)})
			becomes = ", becomes bigint"
		}
		d.Notes = append(d.Notes, oneLine(fmt.Sprintf("References it: %s (%s, foreign key %s)%s.", c, c.Type, c.Via, becomes)))
	}
	if p.Key.Type != "bigint" {
		d.Widen = append(d.Widen, scriptWiden{d.TableQ, d.ColumnQ})
	}
	d.Notes = append(d.Notes, oneLine(fmt.Sprintf("Records the first ID it makes in %s, where sfgen audit finds it and counts the values below it as legacy.", p.Record)))
	return d, nil
}

// oneLine keeps a note on its comment line: a name with a newline in it
// would end the comment.
func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// static is sql without its comment lines: what Apply compares.
func static(sql string) string {
	var b strings.Builder
	for _, l := range strings.Split(sql, "\n") {
		if !strings.HasPrefix(l, "-- ") || strings.HasPrefix(l, "-- +goose") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// A Result is what Apply did.
type Result struct {
	FirstID int64         // the first ID made after the conversion, as recorded
	Tries   int           // 1, and one more for each retry
	Locked  time.Duration // from the first lock to the commit, on the last try
}

// Apply runs the plan's script in one transaction on db, trying again,
// Options.Retries times, when a lock is not had within the lock timeout
// (SQLSTATE 55P03): sessions that queued behind the waiting lock go on
// meanwhile. Under the locks it reads the table again and refuses,
// changing nothing, when the plan no longer holds; the script's own check
// (SF301) is refused with ErrAhead. Any error leaves the database as it
// was.
func (p *Plan) Apply(ctx context.Context, db *sql.DB) (*Result, error) {
	tries := 1 + max(p.o.Retries, 0)
	r := &Result{}
	var err error
	for r.Tries = 1; ; r.Tries++ {
		err = p.try(ctx, db, r)
		if !isLockTimeout(err) || r.Tries == tries {
			break
		}
		if p.o.OnRetry != nil {
			p.o.OnRetry(r.Tries, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(r.Tries) * 100 * time.Millisecond):
		}
	}
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return r, nil
	case isLockTimeout(err):
		return nil, fmt.Errorf("%w: another session held a lock on %s past the lock timeout (%v) on each of %d tries, so %s is not converted; nothing changed",
			ErrLockTimeout, strings.Join(p.Locks, " or "), p.o.LockTimeout, tries, p.Key)
	case errors.As(err, &pe) && pe.Code == sqlstate.AheadOrUnloaded:
		return nil, &RefusedError{Reason: strings.TrimPrefix(pe.Message, "sfgen convert: ") + "; nothing changed", Kind: ErrAhead}
	}
	return nil, err
}

// isLockTimeout reports whether err is a lock not had in time (55P03),
// or a deadlock the server broke by ending this transaction (40P01): a
// try that changed nothing, to make again.
func isLockTimeout(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "55P03" || pe.Code == "40P01")
}

func (p *Plan) try(ctx context.Context, db *sql.DB, r *Result) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := execTemplate(ctx, tx, "lock_timeout", p.o.LockTimeout.Milliseconds()); err != nil {
		return err
	}
	start := time.Now()
	for _, t := range p.locksQ {
		if err := execTemplate(ctx, tx, "lock", t); err != nil {
			return err
		}
	}
	// Under the locks: the same plan, or nothing.
	again, err := prepare(ctx, tx, p.o, false)
	if err != nil && !errors.Is(err, ErrNeedsRewrite) {
		return err
	}
	if again.static != p.static {
		return refuse("%s changed while convert was planning (a foreign key, default or type): run convert again; nothing changed", p.Key)
	}
	d, err := p.data()
	if err != nil {
		return err
	}
	if err := p.run(ctx, tx, d); err != nil {
		return err
	}
	var first sql.Null[int64]
	if err := queryRow(ctx, tx, "recorded", d, []any{p.Key.Schema, p.Key.Table, p.Key.Column}, &first); err != nil {
		return fmt.Errorf("read the record of %s: %w", p.Key, err)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	r.FirstID, r.Locked = first.V, time.Since(start)
	return nil
}

// run runs the script, p.SQL, in tx: whole, or on a Citus table (whose
// key convert never widens) up to its ALTER TABLEs and then each of them
// alone, as Citus can send them on to its other nodes.
func (p *Plan) run(ctx context.Context, tx *sql.Tx, d scriptData) error {
	if !p.Distributed {
		_, err := tx.ExecContext(ctx, p.SQL)
		return err
	}
	if len(d.Widen) > 0 {
		return fmt.Errorf("convert: a Citus table's columns to widen: %v", p.Rewrites) // refused in prepare
	}
	d.HeadOnly = true
	if err := execTemplate(ctx, tx, "script", d); err != nil {
		return err
	}
	if d.DropIdentity {
		if err := execTemplate(ctx, tx, "drop_identity", d); err != nil {
			return err
		}
	}
	return execTemplate(ctx, tx, "set_default", d)
}

// lines splits a newline-separated list; nil for "".
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func humanBytes(n int64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%d GB", n>>30)
	case n >= 10<<20:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 10<<10:
		return fmt.Sprintf("%d kB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// A LegacyBound is what Legacy found of a column's conversion.
type LegacyBound struct {
	Found   bool
	FirstID int64  // the first ID made after the conversion: values below it are legacy
	Sfgen   string // the sfgen schema whose private schema has the record
	// Unread says, for each record table this role may not read, why.
	Unread []string
}

// Legacy looks, through q, for the conversion of column of table (in
// schema) in the record table of every trusted sfgen schema of the
// database (those catalog.Inspect refuses are passed over, their tables
// not read), and returns its first ID. When several have one, the
// highest wins. A record table of another owner than its sfgen's is not
// read; one this role may not read is said in Unread.
func Legacy(ctx context.Context, q Querier, schema, table, column string) (LegacyBound, error) {
	var b LegacyBound
	var rows string
	if err := queryRow(ctx, q, "record_tables", nil, nil, &rows); err != nil {
		return b, fmt.Errorf("list the conversion records: %w", err)
	}
	for _, line := range lines(rows) {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			return b, fmt.Errorf("list the conversion records: unexpected row %q", line)
		}
		private, name, sfgens, readable, owner := f[0], f[1], f[2] == "t", f[3] == "t", f[4]
		s, err := catalog.ParseSchema(name)
		if err != nil || !sfgens || catalog.PrivateSchema(s.Name()) != private {
			continue
		}
		if !readable {
			b.Unread = append(b.Unread, fmt.Sprintf("this role may not read %s.%s (sfgen's owner, %s, may)", private, RecordTable, owner))
			continue
		}
		// Only sfgen's owner reads it, who can use its schema: read
		// nothing of a schema other roles could plant objects in.
		if _, err := catalog.Inspect(ctx, catalog.DB(q), s); errors.Is(err, catalog.ErrUntrusted) {
			continue
		} else if err != nil {
			return b, err
		}
		var first sql.Null[int64]
		d := struct{ RecordQ string }{pgident.Quote(private) + "." + RecordTable}
		if err := queryRow(ctx, q, "recorded", d, []any{schema, table, column}, &first); err != nil {
			return b, fmt.Errorf("read %s.%s: %w", private, RecordTable, err)
		}
		if first.Valid && (!b.Found || first.V > b.FirstID) {
			b.Found, b.FirstID, b.Sfgen = true, first.V, s.Name()
		}
	}
	return b, nil
}
