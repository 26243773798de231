package sfgenpg_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/sfgenpg"
)

// TestRegisterPgxTypes reads and writes IDs over two pgx connections, one
// with RegisterPgxTypes and one without, and wants the same values and
// the same errors from both: scanning bigints, NULL and negative numbers
// into an ID, a NullID and a *ID, in rows and in arrays; writing an ID,
// a NullID (valid or not), a *ID and a negative ID; and the simple
// protocol, which reads text. Then that a registered map reads an ID
// with no allocation.
func TestRegisterPgxTypes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := pgtest.DSN(t)
	plain, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(context.Background())
	registered, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer registered.Close(context.Background())
	sfgenpg.RegisterPgxTypes(registered.TypeMap())

	// read scans query's one column into a new target of each kind and
	// prints what it got, or the error.
	read := func(conn *pgx.Conn, query string, args ...any) string {
		var id sfgen.ID
		var null sfgen.NullID
		var ptr *sfgen.ID
		var ids []sfgen.ID
		out := ""
		for _, dst := range []any{&id, &null, &ptr} {
			err := conn.QueryRow(ctx, query, args...).Scan(dst)
			out += fmt.Sprintf("%v %v|", err, errors.Is(err, sfgen.ErrNullID) || errors.Is(err, sfgen.ErrOutOfRange))
		}
		var ptrs string
		if ptr != nil {
			ptrs = ptr.String()
		}
		err := conn.QueryRow(ctx, "SELECT array["+query[len("SELECT "):]+"]", args...).Scan(&ids)
		return out + fmt.Sprintf("%d %+v %s %v %v", id, null, ptrs, ids, err)
	}
	id := sfgen.ID(1724551110456668202)
	var nilID *sfgen.ID
	for _, c := range []struct {
		query string
		args  []any
	}{
		{"SELECT 1724551110456668202::bigint", nil},
		{"SELECT 0::bigint", nil},
		{"SELECT NULL::bigint", nil},
		{"SELECT -1::bigint", nil},
		{"SELECT (-9223372036854775807 - 1)::bigint", nil},
		{"SELECT $1::bigint", []any{id}},
		{"SELECT $1::bigint", []any{&id}},
		{"SELECT $1::bigint", []any{nilID}},
		{"SELECT $1::bigint", []any{sfgen.NullID{ID: id, Valid: true}}},
		{"SELECT $1::bigint", []any{sfgen.NullID{}}},
		{"SELECT $1::bigint", []any{sfgen.ID(-1)}},
		{"SELECT $1::bigint", []any{sfgen.NullID{ID: -5, Valid: true}}},
		{"SELECT $1::bigint", []any{pgx.QueryExecModeSimpleProtocol, id}},
		{"SELECT $1::bigint", []any{pgx.QueryExecModeSimpleProtocol, sfgen.NullID{}}},
		{"SELECT $1::bigint", []any{pgx.QueryExecModeSimpleProtocol, sfgen.ID(-1)}},
		{"SELECT 7::bigint", []any{pgx.QueryExecModeSimpleProtocol}},
		{"SELECT NULL::bigint", []any{pgx.QueryExecModeSimpleProtocol}},
		{"SELECT -7::bigint", []any{pgx.QueryExecModeSimpleProtocol}},
	} {
		want, got := read(plain, c.query, c.args...), read(registered, c.query, c.args...)
		t.Logf("%s %v: %s", c.query, c.args, got)
		if got != want {
			t.Errorf("%s %v:\nregistered %s\nplain      %s", c.query, c.args, got, want)
		}
	}
	// int64 and the other int8 targets still go to pgx's codec.
	var n int64
	var s string
	if err := registered.QueryRow(ctx, "SELECT 42::bigint").Scan(&n); err != nil || n != 42 {
		t.Errorf("an int64 over the registered map: %d, %v", n, err)
	}
	if err := registered.QueryRow(ctx, "SELECT 42::bigint").Scan(&s); err != nil || s != "42" {
		t.Errorf("a string over the registered map: %q, %v", s, err)
	}

	m := pgtype.NewMap()
	sfgenpg.RegisterPgxTypes(m)
	src := binary.BigEndian.AppendUint64(nil, uint64(id))
	var got sfgen.ID
	var null sfgen.NullID
	for _, dst := range []any{&got, &null} {
		plan := m.PlanScan(pgtype.Int8OID, pgtype.BinaryFormatCode, dst)
		if allocs := testing.AllocsPerRun(100, func() {
			if err := plan.Scan(src, dst); err != nil {
				t.Fatal(err)
			}
		}); allocs != 0 {
			t.Errorf("scanning into a %T allocates %v times", dst, allocs)
		}
	}
	if got != id || null != (sfgen.NullID{ID: id, Valid: true}) {
		t.Errorf("scanned %d and %+v, want %d", got, null, id)
	}
}
