// Package resume raises a schema's generator state above every ID of its
// node already stored in the database, for a database that takes over a
// node's writes (a logical replication subscriber after a switchover, a
// restored copy) while another database made IDs with that node, with a
// clock that may have run ahead of this one's.
//
// The state moves forward only, under the catch-up's turn (release 7 on),
// as a catch-up moves it: no catch-up can move it back in between, and
// the IDs made after it are above every stored ID of the node.
package resume

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/otherscode"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TurnWait bounds how long Run waits for the catch-up's turn.
const TurnWait = 5 * time.Second

// FirstRelease is the first release whose catch-up takes turns, which Run
// takes to move the state.
const FirstRelease = 7

// Errors Run wraps.
var (
	// ErrNotReady: the schema has no sfgen, an older release than
	// FirstRelease, or no node.
	ErrNotReady = errors.New("schema not ready to resume")
	// ErrNoTurn: the catch-up's turn was not had in TurnWait, or the turn
	// table has no row for it.
	ErrNoTurn = errors.New("the catch-up's turn was not had")
	// ErrOthersCode: reading a table would run another role's code with
	// this role's privileges (an *OthersCodeError).
	ErrOthersCode = errors.New("would run another role's code")
)

// An OthersCodeError refuses to read tables whose constraints, indexes,
// policies, partition key or column types reach functions of roles that
// are neither this role nor a superuser, where reading as the table's
// owner would not help (a third role's function) or is not allowed
// (this role is not a member of the owner's). Planning a read alone folds
// an index's constant expressions and predicates, and a partition's
// constraints: such a function's owner, who may replace it at any time,
// would run code as this role.
type OthersCodeError struct {
	Uses []otherscode.Use
}

func (e *OthersCodeError) Error() string {
	var uses []string
	for _, u := range e.Uses {
		uses = append(uses, u.String())
	}
	return fmt.Sprintf("resume reads the tables whose default is sfgen's generator, and reading these would run another role's code with this role's privileges: %s; run resume as a role that owns those functions or may act as the tables' owners (a superuser), or give the functions to the tables' owners (ALTER FUNCTION ... OWNER TO ...), or drop the objects; nothing changed",
		strings.Join(uses, "; "))
}

// Unwrap returns ErrOthersCode.
func (e *OthersCodeError) Unwrap() error { return ErrOthersCode }

// Options say which schema to resume, and an ID to end above besides the
// stored ones.
type Options struct {
	Schema catalog.Schema
	After  snowflake.ID // 0 for none
}

// A Column is a column whose default is the schema's generator, and the
// largest ID of the node stored in it.
type Column struct {
	Table  string       // the table, qualified and quoted as regclass prints it
	Column string       // the column's name
	Max    snowflake.ID // the node's largest ID in it; 0 when it holds none
	Index  string       // the index the search walked; "" for a scan of the table
}

// A Report says what Run found and did.
type Report struct {
	Schema  string
	Layout  snowflake.Layout
	Node    catalog.Node
	Columns []Column
	After   snowflake.ID
	// Above is the ID the generator's next IDs are above: the largest of
	// the columns' Max and After.
	Above snowflake.ID
	// From and To are the generator's state before and after (To = From
	// when it was already above).
	From, To int64
	Raised   bool
}

// Run finds the columns whose default calls the schema's generator
// (snowflake_next_id() or snowflake_next_id_local(), through pg_depend),
// reads the largest ID of the schema's node in each, and raises the
// state, under the catch-up's turn, so that the next ID is above all of
// them and above o.After. db's role must own sfgen's objects (or be a
// superuser) and read the tables.
//
// The reads run under row_security off, so a table with row security
// that would apply to the role fails the read rather than run a policy's
// code. Planning a read folds the constant expressions of the table's
// indexes (and a partition's CHECK constraints): before any read, Run
// reads the catalogs for every function the tables reach (package
// otherscode) and reads a table as this role only when each is this
// role's or a superuser's, as the table's owner (SET LOCAL ROLE) when
// they are that owner's and this role may act as it, and refuses
// otherwise (an *OthersCodeError), reading nothing.
func Run(ctx context.Context, db *sql.DB, o Options) (*Report, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	in, err := catalog.Inspect(ctx, catalog.DB(conn), o.Schema)
	if err != nil {
		return nil, err
	}
	schema := o.Schema.Name()
	switch {
	case in.Release == 0:
		return nil, fmt.Errorf("%w: schema %s has no sfgen", ErrNotReady, schema)
	case in.Release < FirstRelease:
		return nil, fmt.Errorf("%w: schema %s is at sfgen release %d; upgrade it first (sfgen install --schema %s)", ErrNotReady, schema, in.Release, schema)
	case in.Node.State != catalog.NodeSet:
		return nil, fmt.Errorf("%w: schema %s has no node: set the node this database takes over first (sfgen node --schema %s --datacenter N --machine N)", ErrNotReady, schema, schema)
	}
	r := &Report{Schema: schema, Layout: in.Layout, Node: in.Node, After: o.After, Above: o.After}
	if r.Columns, err = columns(ctx, conn, in); err != nil {
		return nil, err
	}
	for _, c := range r.Columns {
		r.Above = max(r.Above, c.Max)
	}
	if err := raise(ctx, conn, in, r); err != nil {
		return nil, err
	}
	return r, nil
}

// columns finds the columns whose default depends on the schema's
// generator and reads each one's largest ID of the schema's node.
func columns(ctx context.Context, conn *sql.Conn, in catalog.Installed) ([]Column, error) {
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	// A policy that would apply fails the read instead of running.
	if _, err := tx.ExecContext(ctx, "SET LOCAL row_security = off"); err != nil {
		return nil, err
	}
	// Base and partitioned tables only: a view's default is no column of
	// rows, and reading a view would run its owner's code.
	rows, err := tx.QueryContext(ctx, `
		SELECT DISTINCT c.oid::pg_catalog.regclass::pg_catalog.text, a.attname::pg_catalog.text,
			c.oid::pg_catalog.int8, r.rolname::pg_catalog.text, c.relowner::pg_catalog.regrole::pg_catalog.text,
			-- SET ROLE needs membership, and from PostgreSQL 16 its SET option.
			pg_catalog.pg_has_role(c.relowner, CASE WHEN pg_catalog.current_setting('server_version_num')::pg_catalog.int4 OPERATOR(pg_catalog.>=) 160000 THEN 'SET' ELSE 'MEMBER' END),
			a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.int8'::pg_catalog.regtype,
			COALESCE((SELECT i.indexrelid::pg_catalog.regclass::pg_catalog.text FROM pg_catalog.pg_index i
				JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) i.indexrelid
				JOIN pg_catalog.pg_am am ON am.oid OPERATOR(pg_catalog.=) ic.relam
				WHERE i.indrelid OPERATOR(pg_catalog.=) c.oid AND i.indkey[0] OPERATOR(pg_catalog.=) a.attnum
					AND i.indpred IS NULL AND i.indexprs IS NULL AND am.amname OPERATOR(pg_catalog.=) 'btree'
				ORDER BY i.indisprimary DESC, 1 LIMIT 1), '')
		FROM pg_catalog.pg_depend d
		JOIN pg_catalog.pg_attrdef ad ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND d.objid OPERATOR(pg_catalog.=) ad.oid
		JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) ad.adrelid
		JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) ad.adrelid AND a.attnum OPERATOR(pg_catalog.=) ad.adnum
		JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) c.relowner
		WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
			AND d.refobjid OPERATOR(pg_catalog.=) ANY (ARRAY[pg_catalog.to_regprocedure($1), pg_catalog.to_regprocedure($2)]::pg_catalog.oid[])
			AND (c.relkind OPERATOR(pg_catalog.=) 'r' OR c.relkind OPERATOR(pg_catalog.=) 'p')
		ORDER BY 1, 2`,
		in.Schema.Quoted()+".snowflake_next_id()", in.Schema.Quoted()+".snowflake_next_id_local()")
	if err != nil {
		return nil, fmt.Errorf("find the columns whose default is schema %s's generator: %w", in.Schema.Name(), err)
	}
	type found struct {
		table, column, index string
		bigint               bool
		oid                  int64
		owner, ownerRole     string // the owner's name, and as regrole writes it
		canBeOwner           bool   // this role may SET ROLE to the owner
		asOwner              bool   // read as the owner (readAs)
	}
	var all []found
	for rows.Next() {
		var f found
		if err := rows.Scan(&f.table, &f.column, &f.oid, &f.owner, &f.ownerRole, &f.canBeOwner, &f.bigint, &f.index); err != nil {
			rows.Close()
			return nil, err
		}
		all = append(all, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Before any read: whose code reading each table could run.
	var refused []otherscode.Use
	asOwner := map[int64]bool{}
	for i := range all {
		f := &all[i]
		if as, ok := asOwner[f.oid]; ok {
			f.asOwner = as
			continue
		}
		var err error
		f.asOwner, refused, err = readAs(ctx, tx, f.oid, f.ownerRole, f.canBeOwner, refused)
		if err != nil {
			return nil, fmt.Errorf("read the functions %s calls: %w", f.table, err)
		}
		asOwner[f.oid] = f.asOwner
	}
	if len(refused) > 0 {
		return nil, &OthersCodeError{Uses: refused}
	}
	l := in.Layout
	shift := l.Shift(snowflake.FieldMachine)
	nodeBits := l.Bits(snowflake.FieldDatacenter) + l.Bits(snowflake.FieldMachine)
	node := in.Node.Datacenter<<l.Bits(snowflake.FieldMachine) | in.Node.Machine
	var out []Column
	for _, f := range all {
		if !f.bigint {
			return nil, fmt.Errorf("column %s.%s defaults to schema %s's generator but is not bigint; change its type to bigint first", f.table, pgident.Quote(f.column), in.Schema.Name())
		}
		col := pgident.Quote(f.column)
		// The node's IDs: those whose node bits are the schema's node.
		where := fmt.Sprintf("%[1]s IS NOT NULL AND ((%[1]s OPERATOR(pg_catalog.>>) %[2]d) OPERATOR(pg_catalog.&) %[3]d) OPERATOR(pg_catalog.=) %[4]d", col, shift, int64(1)<<nodeBits-1, node)
		q := fmt.Sprintf("SELECT pg_catalog.max(%s) FROM %s WHERE %s", col, f.table, where)
		if f.index != "" {
			// A backward walk of the index, which stops at the node's
			// largest ID.
			q = fmt.Sprintf("SELECT %[1]s FROM %[2]s WHERE %[3]s ORDER BY %[1]s DESC LIMIT 1", col, f.table, where)
		}
		m, err := readMax(ctx, tx, q, f.owner, f.asOwner)
		if err != nil {
			return nil, fmt.Errorf("read the largest ID of node %s in %s.%s (as a role that may read every row of it): %w", in.Node, f.table, col, err)
		}
		out = append(out, Column{Table: f.table, Column: f.column, Max: snowflake.ID(m.Int64), Index: f.index})
	}
	return out, nil
}

// readAs decides how to read table oid (and the partitions and
// inheritance children a read of it reads), from the functions not
// owned by a superuser that their objects reach: as this role when each
// is this role's (asOwner false); as the table's owner when each is
// this role's or that owner's (ownerRole, as regrole writes it) and
// this role may act as it (canBeOwner); otherwise it appends to refused
// the functions of neither.
func readAs(ctx context.Context, tx *sql.Tx, oid int64, ownerRole string, canBeOwner bool, refused []otherscode.Use) (asOwner bool, _ []otherscode.Use, _ error) {
	uses, err := otherscode.FindIn(ctx, tx, otherscode.Tree(oid), otherscode.Options{ForRead: true})
	if err != nil {
		return false, refused, err
	}
	var notMine []otherscode.Use
	for _, u := range uses {
		if !u.ByCurrentRole {
			notMine = append(notMine, u)
		}
	}
	if len(notMine) == 0 {
		return false, refused, nil
	}
	for _, u := range notMine {
		if u.Owner != ownerRole || !canBeOwner {
			refused = append(refused, u)
		}
	}
	return true, refused, nil
}

// readMax runs q, a read of one table's largest ID, in tx: as this role,
// or, with asOwner, as the table's owner (SET LOCAL ROLE), so that the
// owner's functions its planning folds run as the owner; then this
// role's role, row_security and search_path again, whatever that code
// set. No row is NULL.
func readMax(ctx context.Context, tx *sql.Tx, q, owner string, asOwner bool) (sql.NullInt64, error) {
	var m sql.NullInt64
	if asOwner {
		if _, err := tx.ExecContext(ctx, "SET LOCAL ROLE "+pgident.Quote(owner)); err != nil {
			return m, err
		}
	}
	err := tx.QueryRowContext(ctx, q).Scan(&m)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	if asOwner && err == nil {
		_, err = tx.ExecContext(ctx, "RESET ROLE; SET LOCAL row_security = off; SET LOCAL search_path = pg_catalog, pg_temp")
	}
	return m, err
}

// stateAbove is the generator state (Unix ms << sequence bits |
// sequence; nextval() takes the one after it) from which every ID of node
// is above id, whatever node id has: an ID orders by its time, then its
// node, then its sequence.
func stateAbove(l snowflake.Layout, node catalog.Node, id snowflake.ID) (int64, error) {
	p, err := l.Decompose(id)
	if err != nil {
		return 0, err
	}
	bits := l.Bits(snowflake.FieldSequence)
	ms := p.Timestamp << bits
	switch ours, its := [2]int64{node.Datacenter, node.Machine}, [2]int64{p.Datacenter, p.Machine}; {
	case ours == its:
		return ms | p.Sequence, nil // after id's sequence, in its millisecond
	case ours[0] > its[0] || ours[0] == its[0] && ours[1] > its[1]:
		return ms - 1, nil // anything in id's millisecond
	default:
		return ms | l.Max(snowflake.FieldSequence), nil // the millisecond after
	}
}

func maxes(cs []Column) []snowflake.ID {
	var ids []snowflake.ID
	for _, c := range cs {
		ids = append(ids, c.Max)
	}
	return ids
}

// raise moves the state to Above's state, if it is below, under the
// catch-up's turn, as a catch-up moves it: the guard at 0 meanwhile, so
// that no session uses a value taken then but one each that read the
// guard before. It leaves the guard at 0, as a catch-up cut short does:
// the first call after it catches up, with the timing of the schema's own
// release (release 7's guard holds the catch-up's millisecond, release
// 8's the fast path's deadline), and until then every call waits for it.
func raise(ctx context.Context, conn *sql.Conn, in catalog.Installed, r *Report) error {
	var target int64
	for _, id := range append([]snowflake.ID{r.After}, maxes(r.Columns)...) {
		s, err := stateAbove(in.Layout, in.Node, id)
		if err != nil {
			return err
		}
		target = max(target, s)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL lock_timeout = '%dms'", TurnWait.Milliseconds())); err != nil {
		return err
	}
	s, private := in.Schema.Quoted(), pgident.Quote(catalog.PrivateSchema(in.Schema.Name()))
	state, guard, key := s+".snowflake_state", s+".snowflake_caught_up", private+".snowflake_catch_up_key"
	var k int64
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(pg_catalog.pg_sequence_last_value($1::pg_catalog.regclass), 0)", key).Scan(&k); err != nil {
		return fmt.Errorf("read the catch-up's turn: %w", err)
	}
	slot := k % sqlgen.CatchUpTurns
	var got int64
	err = tx.QueryRowContext(ctx, "SELECT t.slot FROM "+private+".snowflake_catch_up_turn t WHERE t.slot OPERATOR(pg_catalog.=) $1 FOR UPDATE", slot).Scan(&got)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: %s.snowflake_catch_up_turn has no row for the current turn (a copy made without its rows): run sfgen install --schema %s first", ErrNoTurn, private, in.Schema.Name())
	case err != nil:
		return fmt.Errorf("%w in %v (a session holds it; see pg_locks): %v", ErrNoTurn, TurnWait, err)
	}
	// Holding the current key's row, no catch-up is running; another
	// could have passed the turn on before the lock: read the key again.
	var now int64
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(pg_catalog.pg_sequence_last_value($1::pg_catalog.regclass), 0)", key).Scan(&now); err != nil {
		return err
	}
	if now != k {
		return fmt.Errorf("%w: the turn moved on while it was taken; run sfgen resume again", ErrNoTurn)
	}
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(pg_catalog.pg_sequence_last_value($1::pg_catalog.regclass), 0)", state).Scan(&r.From); err != nil {
		return err
	}
	r.To = r.From
	if r.From >= target {
		return tx.Commit()
	}
	for _, step := range []struct {
		q    string
		args []any
	}{
		{"SELECT pg_catalog.setval($1::pg_catalog.regclass, 0)", []any{guard}},
		{"SELECT pg_catalog.setval($1::pg_catalog.regclass, $2::bigint)", []any{state, target}},
		// Pass the turn on, as a catch-up does (to the same row).
		{"SELECT pg_catalog.setval($1::pg_catalog.regclass, (($2::bigint OPERATOR(pg_catalog./) $3::bigint) OPERATOR(pg_catalog.+) 1) OPERATOR(pg_catalog.*) $3::bigint OPERATOR(pg_catalog.+) $4::bigint)", []any{key, k, int64(sqlgen.CatchUpTurns), slot}},
	} {
		if _, err := tx.ExecContext(ctx, step.q, step.args...); err != nil {
			return fmt.Errorf("raise schema %s's generator state (as the role that owns sfgen's objects, %s): %w", in.Schema.Name(), in.Owner, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	r.To, r.Raised = target, true
	return nil
}
