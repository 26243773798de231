package sfgenpg

import (
	"encoding/binary"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sfgen/sfgen"
)

// RegisterPgxTypes makes m, a pgx connection's type map (conn.TypeMap(),
// in a pgxpool.Config's AfterConnect for a pool), read and write
// sfgen.ID and sfgen.NullID as bigints without database/sql's Scanner
// and Valuer. Those work without it, with pgx as with database/sql; pgx
// reaches them through a driver.Value, which costs two small allocations
// and 100 to 150 ns a value read, and an allocation a value written.
// Registered, an ID and a NullID read and write as an int64 does, in
// pgx's binary format, with no allocation (a *sfgen.ID still goes
// through pgx's wrapper for pointers, which allocates its new ID). What
// is read and written, and every error, are the same either way: NULL
// into an ID is sfgen.ErrNullID, a negative value a *sfgen.RangeError.
// It replaces m's codec for int8 by one that hands every other type, and
// the text format, to pgx's own; call it before the connection's first
// query.
func RegisterPgxTypes(m *pgtype.Map) {
	m.RegisterType(&pgtype.Type{Name: "int8", OID: pgtype.Int8OID, Codec: idCodec{}})
}

// idCodec is pgx's int8 codec with plans of its own for sfgen.ID and
// sfgen.NullID in the binary format, the one pgx uses for int8 but in
// the simple protocol.
type idCodec struct{ pgtype.Int8Codec }

func (c idCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if format == pgtype.BinaryFormatCode {
		switch target.(type) {
		case *sfgen.ID:
			return idScanPlan{}
		case *sfgen.NullID:
			return nullIDScanPlan{}
		}
	}
	return c.Int8Codec.PlanScan(m, oid, format, target)
}

func (c idCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if format == pgtype.BinaryFormatCode {
		switch value.(type) {
		case sfgen.ID:
			return idEncodePlan{}
		case sfgen.NullID:
			return nullIDEncodePlan{}
		}
	}
	return c.Int8Codec.PlanEncode(m, oid, format, value)
}

// binaryInt8 reads a binary int8, as pgx does.
func binaryInt8(src []byte) (int64, error) {
	if len(src) != 8 {
		return 0, fmt.Errorf("int8: invalid length: %d", len(src))
	}
	return int64(binary.BigEndian.Uint64(src)), nil
}

type idScanPlan struct{}

func (idScanPlan) Scan(src []byte, dst any) error {
	id, ok := dst.(*sfgen.ID)
	if !ok {
		return pgtype.ErrScanTargetTypeChanged
	}
	if src == nil {
		return id.Scan(nil) // sfgen.ErrNullID
	}
	n, err := binaryInt8(src)
	if err != nil {
		return err
	}
	if n < 0 {
		return id.Scan(n) // ID.Scan's *sfgen.RangeError
	}
	*id = sfgen.ID(n)
	return nil
}

type nullIDScanPlan struct{}

func (nullIDScanPlan) Scan(src []byte, dst any) error {
	id, ok := dst.(*sfgen.NullID)
	if !ok {
		return pgtype.ErrScanTargetTypeChanged
	}
	if src == nil {
		*id = sfgen.NullID{}
		return nil
	}
	n, err := binaryInt8(src)
	if err != nil {
		return err
	}
	if n < 0 {
		return id.Scan(n)
	}
	*id = sfgen.NullID{ID: sfgen.ID(n), Valid: true}
	return nil
}

type idEncodePlan struct{}

func (idEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	id := value.(sfgen.ID)
	if id < 0 {
		_, err := id.Value() // ID.Value's *sfgen.RangeError
		return nil, err
	}
	return binary.BigEndian.AppendUint64(buf, uint64(id)), nil
}

type nullIDEncodePlan struct{}

func (nullIDEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	n := value.(sfgen.NullID)
	if !n.Valid {
		return nil, nil // NULL
	}
	return idEncodePlan{}.Encode(n.ID, buf)
}
