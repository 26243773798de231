package sfgen_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	sfgen "github.com/sfgen/sfgen"
)

// bigEncode is an independent oracle: id in the alphabet's base by
// math/big, left-padded with the zero digit to width (0: no padding).
func bigEncode(id int64, alphabet string, width int) string {
	n := big.NewInt(id)
	base := big.NewInt(int64(len(alphabet)))
	var out []byte
	for n.Sign() > 0 {
		var d big.Int
		n.DivMod(n, base, &d)
		out = append(out, alphabet[d.Int64()])
	}
	for len(out) < width || len(out) == 0 {
		out = append(out, alphabet[0])
	}
	slices.Reverse(out)
	return string(out)
}

const (
	crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	bitcoin   = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
)

func TestEncodings(t *testing.T) {
	for _, tc := range []struct {
		id             sfgen.ID
		base32, base58 string
	}{
		{0, "0000000000000", "1"},
		{1, "0000000000001", "2"},
		{31, "000000000000Z", "Y"},
		{32, "0000000000010", "Z"},
		{57, "000000000001S", "z"},
		{58, "000000000001T", "21"},
		{4194439168, "0000003X04400", "7Pebdh"}, // the README's worked example
		{math.MaxInt64, "7ZZZZZZZZZZZZ", "NQm6nKp8qFC"},
	} {
		if got := tc.id.Base32(); got != tc.base32 || got != bigEncode(int64(tc.id), crockford, 13) {
			t.Errorf("ID(%d).Base32() = %q; want %q (oracle %q)", tc.id, got, tc.base32, bigEncode(int64(tc.id), crockford, 13))
		}
		if got := tc.id.Base58(); got != tc.base58 || got != bigEncode(int64(tc.id), bitcoin, 0) {
			t.Errorf("ID(%d).Base58() = %q; want %q (oracle %q)", tc.id, got, tc.base58, bigEncode(int64(tc.id), bitcoin, 0))
		}
		for _, e := range sfgen.Encodings {
			s, err := tc.id.Encode(e)
			if err != nil {
				t.Fatal(err)
			}
			back, err := sfgen.Decode(s, e)
			if err != nil || back != tc.id {
				t.Errorf("Decode(%q, %s) = %d, %v; want %d", s, e, back, err, tc.id)
			}
		}
	}
	if s, err := sfgen.ID(-1).Encode(sfgen.Base32); s != "" || !errors.Is(err, sfgen.ErrOutOfRange) || err.Error() != "id -1 out of range [0, 9223372036854775807]" {
		t.Errorf("Encode of -1 = %q, %v; want the id's range error", s, err)
	}
	if sfgen.ID(-1).Base32() != "" || sfgen.ID(-1).Base58() != "" {
		t.Errorf("Base32/Base58 of -1 are not empty")
	}
}

// TestParseEncodedRejects: each malformed string gets one message,
// which the SQL of release 8 raises word for word (internal/verify
// compares them on a database).
func TestParseEncodedRejects(t *testing.T) {
	for _, tc := range []struct {
		enc  sfgen.Encoding
		in   string
		want string
	}{
		{sfgen.Base32, "", `invalid base32 ID "": want 13 characters`},
		{sfgen.Base32, "7ZZ", `invalid base32 ID "7ZZ": want 13 characters`},
		{sfgen.Base32, "00000000000000", `invalid base32 ID "00000000000000": want 13 characters`},
		{sfgen.Base32, strings.Repeat("0", 40), `invalid base32 ID of 40 characters: want 13 characters`},
		{sfgen.Base32, "000000000U000", `invalid base32 ID "000000000U000": "U" at character 10 is not in Crockford's base32 alphabet (0-9 and A-Z but U, in any case; I and L read as 1, O as 0)`},
		{sfgen.Base32, "00000000000é0", `invalid base32 ID "00000000000\u00E90": "\u00E9" at character 12 is not in Crockford's base32 alphabet (0-9 and A-Z but U, in any case; I and L read as 1, O as 0)`},
		{sfgen.Base32, "8000000000000", `invalid base32 ID "8000000000000": above "7ZZZZZZZZZZZZ", the largest ID`},
		{sfgen.Base32, "Z00000000000-", `invalid base32 ID "Z00000000000-": "-" at character 13 is not in Crockford's base32 alphabet (0-9 and A-Z but U, in any case; I and L read as 1, O as 0)`},
		{sfgen.Base58, "", `invalid base58 ID "": want 1 to 11 characters`},
		{sfgen.Base58, "NQm6nKp8qFCx", `invalid base58 ID "NQm6nKp8qFCx": want 1 to 11 characters`},
		{sfgen.Base58, "12", `invalid base58 ID "12": a leading "1" (the zero digit)`},
		{sfgen.Base58, "a0b", `invalid base58 ID "a0b": "0" at character 2 is not in the base58 alphabet (1-9, A-Z and a-z but I, O and l)`},
		{sfgen.Base58, `a"\`, `invalid base58 ID "a\"\\": "\"" at character 2 is not in the base58 alphabet (1-9, A-Z and a-z but I, O and l)`},
		{sfgen.Base58, "x\ty", `invalid base58 ID "x\u0009y": "\u0009" at character 2 is not in the base58 alphabet (1-9, A-Z and a-z but I, O and l)`},
		{sfgen.Base58, "😀", `invalid base58 ID "\u1F600": "\u1F600" at character 1 is not in the base58 alphabet (1-9, A-Z and a-z but I, O and l)`},
		{sfgen.Base58, "NQm6nKp8qFD", `invalid base58 ID "NQm6nKp8qFD": above "NQm6nKp8qFC", the largest ID`},
		{sfgen.Base58, "zzzzzzzzzzz", `invalid base58 ID "zzzzzzzzzzz": above "NQm6nKp8qFC", the largest ID`},
	} {
		id, err := sfgen.Decode(tc.in, tc.enc)
		var ee *sfgen.EncodingError
		if !errors.As(err, &ee) || !errors.Is(err, sfgen.ErrSyntax) || err.Error() != tc.want {
			t.Errorf("Decode(%q, %s) = %d, %v;\nwant %s", tc.in, tc.enc, id, err, tc.want)
		}
	}
}

// TestParseBase32Lenient: case and Crockford's substitutions.
func TestParseBase32Lenient(t *testing.T) {
	for in, want := range map[string]sfgen.ID{
		"0000003x04400": 4194439168,
		"o00000O000001": 1,
		"000000000000i": 1,
		"000000000000L": 1,
		"000000000000l": 1,
		"7zzzzzzzzzzzz": math.MaxInt64,
	} {
		if id, err := sfgen.ParseBase32(in); err != nil || id != want {
			t.Errorf("ParseBase32(%q) = %d, %v; want %d", in, id, err, want)
		}
	}
}

func TestParseEncoding(t *testing.T) {
	for _, e := range sfgen.Encodings {
		if got, err := sfgen.ParseEncoding(e.String()); err != nil || got != e {
			t.Errorf("ParseEncoding(%q) = %v, %v", e, got, err)
		}
	}
	_, err := sfgen.ParseEncoding("hex")
	if !errors.Is(err, sfgen.ErrUnknownEncoding) || err.Error() != `unknown ID encoding "hex": want base32 or base58` {
		t.Errorf("ParseEncoding(hex): %v", err)
	}
	if _, err := sfgen.Decode("1", sfgen.Encoding(9)); !errors.Is(err, sfgen.ErrUnknownEncoding) {
		t.Errorf("Decode with Encoding(9): %v", err)
	}
}

// TestBase32Sorts: base32 strings sort as their IDs do.
func TestBase32Sorts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ids := make([]sfgen.ID, 10000)
	for i := range ids {
		ids[i] = sfgen.ID(r.Int64() >> r.IntN(63))
	}
	strs := make([]string, len(ids))
	slices.Sort(ids)
	for i, id := range ids {
		strs[i] = id.Base32()
	}
	if !slices.IsSorted(strs) {
		t.Error("base32 strings of sorted IDs are not sorted")
	}
}

// FuzzEncodings: every non-negative ID encodes as math/big writes it and
// decodes back; any string either decodes to the ID whose canonical
// encoding it matches (base58 exactly, base32 up to case and the
// substitutions) or is refused with an EncodingError.
func FuzzEncodings(f *testing.F) {
	f.Add(int64(4194439168), "0000003X04400")
	f.Add(int64(0), "1")
	f.Add(int64(math.MaxInt64), "NQm6nKp8qFC")
	f.Fuzz(func(t *testing.T, n int64, s string) {
		if n >= 0 {
			id := sfgen.ID(n)
			if got, want := id.Base32(), bigEncode(n, crockford, 13); got != want {
				t.Fatalf("Base32(%d) = %q; oracle %q", n, got, want)
			}
			if got, want := id.Base58(), bigEncode(n, bitcoin, 0); got != want {
				t.Fatalf("Base58(%d) = %q; oracle %q", n, got, want)
			}
		}
		if id, err := sfgen.ParseBase58(s); err == nil {
			if id.Base58() != s {
				t.Fatalf("ParseBase58(%q) = %d, which encodes as %q", s, id, id.Base58())
			}
		} else if _, ok := err.(*sfgen.EncodingError); !ok {
			t.Fatalf("ParseBase58(%q): %T %v", s, err, err)
		}
		if id, err := sfgen.ParseBase32(s); err == nil {
			canon := strings.NewReplacer("I", "1", "L", "1", "O", "0").Replace(strings.ToUpper(s))
			if id.Base32() != canon {
				t.Fatalf("ParseBase32(%q) = %d, which encodes as %q", s, id, id.Base32())
			}
		} else if _, ok := err.(*sfgen.EncodingError); !ok {
			t.Fatalf("ParseBase32(%q): %T %v", s, err, err)
		}
	})
}

func ExampleID_Base32() {
	id := sfgen.ID(4194439168)
	fmt.Println(id.Base32(), id.Base58())
	back, _ := sfgen.ParseBase32("0000003x04400") // any case; I and L read as 1, O as 0
	fmt.Println(back)
	_, err := sfgen.ParseBase58("0")
	fmt.Println(err)
	// Output:
	// 0000003X04400 7Pebdh
	// 4194439168
	// invalid base58 ID "0": "0" at character 1 is not in the base58 alphabet (1-9, A-Z and a-z but I, O and l)
}
