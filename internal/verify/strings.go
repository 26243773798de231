package verify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	snowflake "github.com/sfgen/sfgen"
)

// SQLSTATEs of the string forms' rejections, as text.sql.tmpl raises them.
const (
	invalidText      = "22P02" // a string that is not an ID in its encoding
	invalidParameter = "22023" // an unknown encoding
)

// stringsStream tells the string forms' random stream from the inputs'.
const stringsStream = 0x5374_7269_6e67_7321 // "Strings!"

// stringHelpers catch what snowflake_format and snowflake_parse raise, one
// call at a time (added to helpers; %[1]s is the quoted schema).
const stringHelpers = `
CREATE OR REPLACE FUNCTION pg_temp.sfgen_try_format(id bigint, encoding pg_catalog.text,
    OUT s pg_catalog.text, OUT state pg_catalog.text, OUT message pg_catalog.text)
LANGUAGE plpgsql AS $fn$
BEGIN
    s := %[1]s.snowflake_format(id, encoding);
EXCEPTION WHEN OTHERS THEN
    state := SQLSTATE;
    message := SQLERRM;
END
$fn$;

CREATE OR REPLACE FUNCTION pg_temp.sfgen_try_parse(s pg_catalog.text, encoding pg_catalog.text,
    OUT id bigint, OUT state pg_catalog.text, OUT message pg_catalog.text)
LANGUAGE plpgsql AS $fn$
BEGIN
    id := %[1]s.snowflake_parse(s, encoding);
EXCEPTION WHEN OTHERS THEN
    state := SQLSTATE;
    message := SQLERRM;
END
$fn$;
`

// A stringCall is one call of snowflake_format (S empty and ID set) or
// snowflake_parse (S set), with Go's answer.
type stringCall struct {
	format   bool
	id       int64
	s        string
	encoding string
	want     string // Go's answer: the string, the ID in decimal, or "error STATE: message"
}

func (c stringCall) String() string {
	if c.format {
		return fmt.Sprintf("snowflake_format(%d, '%s')", c.id, c.encoding)
	}
	return fmt.Sprintf("snowflake_parse(%s, '%s')", sqlString(c.s), c.encoding)
}

// sqlString is s as an SQL literal, for a report.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// goStringCalls are the calls that check ids (and negatives, which format
// refuses) in both encodings: each formatted, its string parsed back, for
// base32 also in a spelling Crockford allows (any case, I and L for 1, O
// for 0), and one malformed string for one ID in four of each encoding,
// drawn from r. Go answers each.
func goStringCalls(r *rand.Rand, ids, negatives []int64) []stringCall {
	var calls []stringCall
	for _, e := range snowflake.Encodings {
		for _, n := range slices.Concat(ids, negatives) {
			s, err := snowflake.ID(n).Encode(e)
			calls = append(calls, stringCall{format: true, id: n, encoding: e.String(), want: goStringAnswer(s, err)})
			if err != nil {
				continue
			}
			calls = append(calls, parseCall(s, e))
			if e == snowflake.Base32 {
				calls = append(calls, parseCall(crockfordSpelling(r, s), e))
			}
			if r.IntN(4) == 0 {
				calls = append(calls, parseCall(malformed(r, s, e), e))
			}
		}
	}
	return calls
}

func parseCall(s string, e snowflake.Encoding) stringCall {
	id, err := snowflake.Decode(s, e)
	return stringCall{s: s, encoding: e.String(), want: goStringAnswer(strconv.FormatInt(int64(id), 10), err)}
}

// goStringAnswer is Go's answer as stringCall.want writes it.
func goStringAnswer(v string, err error) string {
	var ee *snowflake.EncodingError
	switch {
	case err == nil:
		return v
	case errors.As(err, &ee):
		return "error " + invalidText + ": " + err.Error()
	case errors.Is(err, snowflake.ErrUnknownEncoding):
		return "error " + invalidParameter + ": " + err.Error()
	}
	return goAnswer(err) // a range error
}

// crockfordSpelling is base32 s with each letter in a random case and
// each 1 or 0 in a random one of the letters read as it.
func crockfordSpelling(r *rand.Rand, s string) string {
	b := []byte(s)
	for i, ch := range b {
		switch {
		case ch == '1':
			b[i] = "1ILil"[r.IntN(5)]
		case ch == '0':
			b[i] = "0Oo"[r.IntN(3)]
		case ch >= 'A' && ch <= 'Z' && r.IntN(2) == 0:
			b[i] = ch + 'a' - 'A'
		}
	}
	return string(b)
}

// malformed spoils s, a string of encoding e, in one of the ways a
// parser must refuse (or, by chance, into another valid string, which
// both sides must then read alike).
func malformed(r *rand.Rand, s string, e snowflake.Encoding) string {
	foreign := []string{"U", "u", "-", " ", "\"", "\\", "'", "%s", "é", "😀", "\t", "0", "O", "I", "l", "\x7f"}
	rs := []rune(s)
	i := r.IntN(len(rs))
	switch r.IntN(5) {
	case 0: // a character too few or too many
		if r.IntN(2) == 0 && len(rs) > 1 {
			return string(slices.Delete(rs, i, i+1))
		}
		return string(slices.Insert(rs, i, rs[i]))
	case 1: // a character from outside the alphabet (some are inside the other one)
		return string(rs[:i]) + foreign[r.IntN(len(foreign))] + string(rs[i+1:])
	case 2: // above the largest ID, or with a leading zero digit
		if e == snowflake.Base32 {
			return string("89ABCDEFGHJKMNPQRSTVWXYZ"[r.IntN(24)]) + string(rs[1:])
		}
		if len(rs) < 11 {
			return "1" + s
		}
		return "NQm6nKp8q" + string("FGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"[r.IntN(44)]) + string(rs[10:])
	case 3: // far too long: the message gives its length, not the text
		return strings.Repeat(s, 3+r.IntN(3))
	}
	return "" // empty
}

// checkStrings runs calls on the database, in one statement with each
// call caught on its own, and reports each answer that differs from
// Go's; it also reports base32 strings the database wrote for ids
// (sorted) that do not sort as ids do.
func (c *checker) checkStrings(ctx context.Context, conn *pgxpool.Conn, calls []stringCall, report reportFunc) error {
	if len(calls) == 0 {
		return nil
	}
	if err := c.prepare(ctx, conn); err != nil {
		return err
	}
	formats := make([]bool, len(calls))
	ids := make([]int64, len(calls))
	strs := make([]string, len(calls))
	encodings := make([]string, len(calls))
	for i, call := range calls {
		formats[i], ids[i], strs[i], encodings[i] = call.format, call.id, call.s, call.encoding
	}
	rows, _ := conn.Query(ctx, `
SELECT CASE WHEN u.format THEN f.s ELSE p.id::pg_catalog.text END,
    CASE WHEN u.format THEN f.state ELSE p.state END,
    CASE WHEN u.format THEN f.message ELSE p.message END
FROM ROWS FROM (pg_catalog.unnest($1::boolean[]), pg_catalog.unnest($2::bigint[]), pg_catalog.unnest($3::pg_catalog.text[]), pg_catalog.unnest($4::pg_catalog.text[])) WITH ORDINALITY AS u(format, id, s, encoding, i)
LEFT JOIN LATERAL pg_temp.sfgen_try_format(u.id, u.encoding) AS f ON u.format
LEFT JOIN LATERAL pg_temp.sfgen_try_parse(u.s, u.encoding) AS p ON NOT u.format
ORDER BY u.i`, formats, ids, strs, encodings)
	i := 0
	var got, state, msg pgtype.Text
	type written struct {
		id int64
		s  string
	}
	var base32 []written
	_, err := pgx.ForEachRow(rows, []any{&got, &state, &msg}, func() error {
		call := calls[i]
		i++
		answer := got.String
		if state.Valid {
			answer = "error " + state.String + ": " + msg.String
		}
		if answer != call.want {
			report(call.String(), call.want, answer)
		}
		if call.format && call.encoding == "base32" && !state.Valid {
			base32 = append(base32, written{call.id, got.String})
		}
		return nil
	})
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42883" { // undefined_function: no string forms (release 7 or older)
			return fmt.Errorf("schema has no snowflake_format or snowflake_parse (release 8 on): %w", err)
		}
		return err
	}
	slices.SortFunc(base32, func(a, b written) int { return cmp.Compare(a.id, b.id) })
	for j := 1; j < len(base32); j++ {
		if a, b := base32[j-1], base32[j]; a.id < b.id && a.s >= b.s {
			report(fmt.Sprintf("base32 order of %d < %d", a.id, b.id), "strings in the same order", fmt.Sprintf("%q >= %q", a.s, b.s))
		}
	}
	return nil
}
