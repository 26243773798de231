package catalog

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"
	"text/template"

	"github.com/sfgen/sfgen/internal/pgident"

	snowflake "github.com/sfgen/sfgen"
)

// The signatures of the functions Inspect looks for, as to_regprocedure
// reads them in a schema. Installed.Has takes them.
const (
	FuncLayout    = "snowflake_layout()"
	FuncRelease   = "snowflake_release()"
	FuncNode      = "snowflake_node()"
	FuncNextID    = "snowflake_next_id()"
	FuncCompose   = "snowflake_compose(bigint, integer, integer, integer)"
	FuncDecompose = "snowflake_decompose(bigint)"
	FuncTimestamp = "snowflake_timestamp(bigint)"
	FuncFirstID   = "snowflake_first_id(timestamptz)"
	FuncLastID    = "snowflake_last_id(timestamptz)"
	FuncLeaseTake = "snowflake_lease_take(pg_catalog.text, bigint)"
	FuncFormat    = "snowflake_format(bigint, pg_catalog.text)"
	FuncParse     = "snowflake_parse(pg_catalog.text, pg_catalog.text)"
)

// inspected are the functions Inspect looks for, in one catalog read.
var inspected = []string{FuncLayout, FuncRelease, FuncNode, FuncNextID, FuncCompose, FuncDecompose,
	FuncTimestamp, FuncFirstID, FuncLastID, FuncLeaseTake, FuncFormat, FuncParse}

// A Row is one row of a query's answer: a *sql.Row or a pgx.Row.
type Row interface{ Scan(dest ...any) error }

// A Querier runs a query that returns one row: a pgx handle through
// [PGX], a database/sql one through [DB].
type Querier interface {
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// A SQLQuerier is a *sql.DB, *sql.Conn or *sql.Tx.
type SQLQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// DB adapts a database/sql handle to Querier.
func DB(q SQLQuerier) Querier { return sqlQuerier{q} }

type sqlQuerier struct{ q SQLQuerier }

func (s sqlQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return s.q.QueryRowContext(ctx, query, args...)
}

// A PGXQuerier is a *pgx.Conn, pgx.Tx, *pgxpool.Pool or *pgxpool.Conn,
// whose QueryRow returns R, a pgx.Row. (This package names no pgx type,
// so that importing it brings in the standard library alone.)
type PGXQuerier[R Row] interface {
	QueryRow(ctx context.Context, query string, args ...any) R
}

// PGX adapts a pgx handle to Querier: catalog.PGX(conn).
func PGX[R Row](q PGXQuerier[R]) Querier { return pgxQuerier[R]{q} }

type pgxQuerier[R Row] struct{ q PGXQuerier[R] }

func (p pgxQuerier[R]) QueryRow(ctx context.Context, query string, args ...any) Row {
	return p.q.QueryRow(ctx, query, args...)
}

// A NodeState says whether a schema has a node.
type NodeState uint8

const (
	// NoNodeFunction: the schema has no snowflake_node() (no sfgen).
	NoNodeFunction NodeState = iota
	// NodeUnset: from release 3 on, a first install without a node leaves
	// snowflake_node_bits() a PL/pgSQL function that raises SQLSTATE SF201
	// until snowflake_set_node() sets one, so snowflake_next_id() refuses.
	NodeUnset
	// NodeSet: snowflake_node() returns the node.
	NodeSet
)

// A Node is the node a schema's snowflake_next_id() puts in its IDs.
type Node struct {
	State               NodeState
	Datacenter, Machine int64 // when State is NodeSet
}

// String returns "datacenter D, machine M", or "no node".
func (n Node) String() string {
	if n.State != NodeSet {
		return "no node"
	}
	return fmt.Sprintf("datacenter %d, machine %d", n.Datacenter, n.Machine)
}

// An Installed is what Inspect found in a schema.
type Installed struct {
	Schema Schema
	// Layout is the layout snowflake_layout() names (every release has
	// it); the zero Layout for a schema without sfgen.
	Layout snowflake.Layout
	// Release is what snowflake_release() says; 1 for a schema with
	// snowflake_layout() but not it (release 1 had none); 0 for one
	// without sfgen.
	Release int
	// Stale lists, sorted, the functions of MarkedFunctions whose
	// comments lack Release's marker (ReleaseMarker): an older
	// release's plain script put its definitions back over Release's.
	// Release 1's functions carry no marker, so it is empty below 2.
	Stale []string
	// Node is the schema's node, read from snowflake_node() when set.
	Node Node
	// NativeLibrary is the library of snowflake_next_id() when it is the
	// native generator (a C function); "" when it is the SQL one or none.
	NativeLibrary string
	// Owner is the role that owns sfgen's functions (snowflake_layout()'s
	// owner), or the connecting role where there is no sfgen.
	Owner string
	// Foreign lists, sorted, the objects under sfgen's names that are not
	// sfgen's: functions of another owner or of a signature no release
	// made (overloads), relations of another owner ("function
	// public.snowflake_node(integer) owned by mallory").
	Foreign []string
	// Writers lists, sorted, the roles (PUBLIC for every role) that can
	// create objects in the schema other than superusers and the roles
	// that can act as its owner or Owner.
	Writers []string

	functions map[string]bool
}

// Has reports whether the schema has the function with signature sig, one
// of the Func constants.
func (i Installed) Has(sig string) bool { return i.functions[sig] }

// Missing returns those of sigs the schema lacks, in order.
func (i Installed) Missing(sigs ...string) []string {
	var out []string
	for _, s := range sigs {
		if !i.functions[s] {
			out = append(out, s)
		}
	}
	return out
}

// Effective is the release the preflight counts the schema at: Release,
// or 1 for a stale mix (which may be running release 1's code).
func (i Installed) Effective() int {
	if len(i.Stale) > 0 && i.Release <= Latest {
		return 1
	}
	return i.Release
}

//go:embed sql/inspect.sql.tmpl sql/fleet.sql.tmpl
var sqlFS embed.FS

// statements are the package's statements: Inspect's, and ReadDatabase's
// (fleet.sql.tmpl).
var statements = template.Must(template.New("").Funcs(template.FuncMap{"literal": pgident.QuoteLiteral}).ParseFS(sqlFS, "sql/inspect.sql.tmpl", "sql/fleet.sql.tmpl"))

// Inspect reads what schema holds of sfgen through q, in two statements:
// one of the system catalogs, then one that reads the release, layout
// and node from the text of sfgen's functions (snowflake_layout(),
// snowflake_release(), snowflake_node_bits()), calling none: their owner
// may be a weaker role than the caller, who could have replaced them (no
// sfgen command runs another role's code). In a schema without sfgen it
// returns an Installed with the zero Layout, release 0 and no node.
//
// A schema where objects under sfgen's names are not sfgen's, or where
// roles other than sfgen's owner (and superusers) can create objects,
// is not one whose functions sfgen calls: Inspect then calls none and
// returns what the catalog said with an *UntrustedError
// (errors.Is(err, ErrUntrusted)).
//
// An install that commits while Inspect reads can leave a statement's
// snapshot and the latest catalog (which name look-ups read) apart, so
// that one answer mixes two states: Inspect then reads again, a few
// times, and returns an error matching ErrCatalogChanged if the catalog
// kept changing (or q is a transaction whose snapshot is older than the
// catalog: repeatable read or serializable).
func Inspect(ctx context.Context, q Querier, schema Schema) (Installed, error) {
	if schema.IsZero() {
		return Installed{}, fmt.Errorf("inspect: no schema given")
	}
	for range inspectAttempts {
		in, changed, err := inspectOnce(ctx, q, schema)
		if !changed {
			return in, err
		}
	}
	return Installed{}, fmt.Errorf("schema %s: %w while it was read %d times (an install or another change committing; if this runs in a repeatable-read transaction, inspect before it takes its snapshot)", schema, ErrCatalogChanged, inspectAttempts)
}

// ErrCatalogChanged is returned by Inspect when sfgen's functions in the
// schema kept changing while it read them.
var ErrCatalogChanged = errors.New("sfgen's functions changed")

// inspectAttempts is how many times Inspect reads a schema whose catalog
// changes under it: an install commits a few times, each once.
const inspectAttempts = 5

// inspectOnce is one read of Inspect; changed reports that the catalog
// changed under one of its statements, whose answers are then not used.
func inspectOnce(ctx context.Context, q Querier, schema Schema) (_ Installed, changed bool, _ error) {
	in := Installed{Schema: schema, functions: map[string]bool{}}
	functions, err := render("functions", nil)
	if err != nil {
		return Installed{}, false, err
	}
	var have, foreign, writers string
	var unset bool
	if err := q.QueryRow(ctx, functions, schema.Name(), inspected, KnownFunctionNames, KnownFunctions, KnownRelations, PrivateSchema(schema.Name())).
		Scan(&have, &unset, &in.NativeLibrary, &in.Owner, &foreign, &writers, &changed); err != nil {
		return Installed{}, false, fmt.Errorf("read sfgen's functions in schema %s: %w", schema, err)
	}
	if changed {
		return Installed{}, true, nil
	}
	for _, f := range lines(have) {
		in.functions[f] = true
	}
	in.Foreign, in.Writers = lines(foreign), lines(writers)
	if len(in.Foreign) > 0 || len(in.Writers) > 0 {
		// Calling sfgen's functions here could be ambiguous (an overload
		// with defaults) or call another role's code: none is called.
		return in, false, &UntrustedError{Schema: schema, Owner: in.Owner, Foreign: in.Foreign, Writers: in.Writers}
	}
	switch {
	case unset:
		in.Node.State = NodeUnset
	case in.functions[FuncNode]:
		in.Node.State = NodeSet
	}
	if !in.functions[FuncLayout] && in.Node.State != NodeSet {
		return in, false, nil
	}
	reads, err := render("reads", readsData)
	if err != nil {
		return Installed{}, false, err
	}
	var spec, stale string
	var bits int64
	if err := q.QueryRow(ctx, reads, schema.Name(), MarkedFunctions).Scan(&spec, &in.Release, &stale, &bits, &changed); err != nil {
		return Installed{}, false, fmt.Errorf("read the sfgen release, layout and node of schema %s: %w", schema, err)
	}
	if changed {
		return Installed{}, true, nil
	}
	in.Stale = lines(stale)
	if in.functions[FuncLayout] {
		if in.Layout, err = snowflake.ParseLayout(spec); err != nil {
			return Installed{}, false, fmt.Errorf("schema %s: snowflake_layout() returns %q, not a layout this sfgen reads: %w", schema, spec, err)
		}
	}
	if in.Node.State == NodeSet {
		if bits < 0 {
			return Installed{}, false, fmt.Errorf("schema %s: snowflake_node_bits() is not the function snowflake_set_node() writes (SELECT n::bigint), so its node cannot be read without calling it; set the node again as the owner: sfgen node --schema %s --datacenter N --machine N", schema, schema)
		}
		l := in.Layout
		if l.IsZero() {
			l = snowflake.Twitter() // an install from before release 1, which had no layout function
		}
		in.Node.Datacenter = bits >> l.Shift(snowflake.FieldDatacenter) & l.Max(snowflake.FieldDatacenter)
		in.Node.Machine = bits >> l.Shift(snowflake.FieldMachine) & l.Max(snowflake.FieldMachine)
	}
	return in, false, nil
}

// lines splits a newline-separated list; nil for "".
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// readsData is what the "reads" statement is rendered with: the forms of
// snowflake_node_bits()'s body that it reads the node from.
var readsData = struct{ NodeBitsText, NodeBitsFenced string }{NodeBitsText, NodeBitsFenced}

func render(name string, data any) (string, error) {
	var b bytes.Buffer
	if err := statements.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	return b.String(), nil
}

// TurnRows counts the rows of the catch-up's turn table (release 7 on, in
// schema's private schema); exists is false where there is no such table,
// or the role may not read it (only the owner may).
// A copy made without the rows of sfgen's tables (pg_dump --schema-only)
// has none, and snowflake_next_state() cannot catch up there.
func TurnRows(ctx context.Context, q Querier, schema Schema) (n int64, exists bool, err error) {
	table := pgident.Quote(PrivateSchema(schema.Name())) + ".snowflake_catch_up_turn"
	// By name in the catalogs: a look-up of the name (to_regclass) needs
	// USAGE on the private schema, which only the owner has.
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
		WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relname OPERATOR(pg_catalog.=) 'snowflake_catch_up_turn'
			AND pg_catalog.has_schema_privilege(n.oid, 'USAGE') AND pg_catalog.has_table_privilege(c.oid, 'SELECT'))`,
		PrivateSchema(schema.Name())).Scan(&exists); err != nil || !exists {
		return 0, exists, err
	}
	if err := q.QueryRow(ctx, "SELECT pg_catalog.count(*) FROM "+table).Scan(&n); err != nil {
		return 0, true, fmt.Errorf("count the rows of %s: %w", table, err)
	}
	return n, true, nil
}

// DefaultGenerator returns the schema whose sfgen generator
// (snowflake_next_id() or snowflake_next_id_local()) the column's default
// calls, as pg_depend records it, whether there is one, and the layout
// that schema's snowflake_layout() says in its comment ("" when it has
// none). It reads the catalogs only: it calls no function, so no code of
// the schema's owner runs (a schema another role made could hold a
// snowflake_layout() of its own).
func DefaultGenerator(ctx context.Context, q Querier, tableSchema, table, column string) (schema, layoutComment string, found bool, err error) {
	err = q.QueryRow(ctx, `SELECT COALESCE(g.nspname, ''), COALESCE(g.comment, '') FROM (SELECT n.nspname::pg_catalog.text AS nspname,
			(SELECT pg_catalog.obj_description(l.oid, 'pg_proc') FROM pg_catalog.pg_proc l
				WHERE l.pronamespace OPERATOR(pg_catalog.=) p.pronamespace AND l.proname OPERATOR(pg_catalog.=) 'snowflake_layout'
					AND l.pronargs OPERATOR(pg_catalog.=) 0) AS comment
		FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace cn ON cn.oid OPERATOR(pg_catalog.=) c.relnamespace
		JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) c.oid
		JOIN pg_catalog.pg_attrdef ad ON ad.adrelid OPERATOR(pg_catalog.=) c.oid AND ad.adnum OPERATOR(pg_catalog.=) a.attnum
		JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND d.objid OPERATOR(pg_catalog.=) ad.oid
			AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
		JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) d.refobjid
		JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
		WHERE cn.nspname OPERATOR(pg_catalog.=) $1 AND c.relname OPERATOR(pg_catalog.=) $2 AND a.attname OPERATOR(pg_catalog.=) $3
			AND p.proname IN ('snowflake_next_id', 'snowflake_next_id_local') AND p.pronargs OPERATOR(pg_catalog.=) 0
		ORDER BY 1 LIMIT 1) g RIGHT JOIN (SELECT 1) one ON true`, tableSchema, table, column).Scan(&schema, &layoutComment)
	if err != nil {
		return "", "", false, err
	}
	// "The Snowflake layout these functions were generated for: LAYOUT.
	// Generated by sfgen release N."
	const prefix, suffix = "generated for: ", ". Generated by sfgen"
	if i := strings.Index(layoutComment, prefix); i >= 0 {
		layoutComment = layoutComment[i+len(prefix):]
		if j := strings.Index(layoutComment, suffix); j >= 0 {
			layoutComment = layoutComment[:j]
		} else {
			layoutComment = ""
		}
	} else {
		layoutComment = ""
	}
	return schema, layoutComment, schema != "", nil
}

// SchemasWithSfgen returns the schemas of the database q reaches whose
// snowflake_layout() says, in its comment, that sfgen generated it, in
// name order: where sfgen is installed, for a message that names them
// when a command was pointed at a schema without it. It reads the
// catalogs only, and lists no schema the role may not use.
func SchemasWithSfgen(ctx context.Context, q Querier) ([]string, error) {
	var list string
	err := q.QueryRow(ctx, `SELECT COALESCE(pg_catalog.string_agg(n.nspname::pg_catalog.text, E'\n' ORDER BY n.nspname), '')
		FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
		WHERE p.proname OPERATOR(pg_catalog.=) 'snowflake_layout' AND p.pronargs OPERATOR(pg_catalog.=) 0
			AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
			AND pg_catalog.strpos(COALESCE(pg_catalog.obj_description(p.oid, 'pg_proc'), ''), 'Generated by sfgen') OPERATOR(pg_catalog.>) 0`).Scan(&list)
	if err != nil {
		return nil, err
	}
	return lines(list), nil
}
