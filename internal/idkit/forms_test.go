package idkit

import (
	"errors"
	"testing"

	"github.com/sfgen/sfgen"
)

func TestReadID(t *testing.T) {
	for _, tc := range []struct {
		in, form string
		want     sfgen.ID
		err      string
	}{
		{"4194439168", "", 4194439168, ""},
		{"0000003X04400", "", 4194439168, ""},
		{"0000003x04400", "", 4194439168, ""},
		{"7Pebdh", "base58", 4194439168, ""},
		{"7Pebdh", "", 0, `id "7Pebdh" is not a decimal integer`}, // base58 only when asked
		{"23", "", 23, ""},                                        // decimal
		{"23", "base58", 60, ""},                                  // unless told
		{"0000000000001", "", 1, ""},                              // 13 digits: decimal
		{"0000000000001", "base32", 1, ""},                        // the same here
		{"-5", "", 0, "id -5 out of range [0, 9223372036854775807]"},
		{"99999999999999999999", "", 0, `id "99999999999999999999" is larger than 9223372036854775807`},
		{"000000000U000", "", 0, `invalid base32 ID "000000000U000": "U" at character 10 is not in Crockford's base32 alphabet (0-9 and A-Z but U, in any case; I and L read as 1, O as 0)`},
		{"ab-c", "base58", 0, `invalid base58 ID "ab-c": "-" at character 3 is not in the base58 alphabet (1-9, A-Z and a-z but I, O and l)`},
		{"7Pebdh", "decimal", 0, `id "7Pebdh" is not a decimal integer`},
		{"7Pebdh", "hex", 0, `unknown ID encoding "hex": want base32 or base58`},
	} {
		id, err := ReadID(tc.in, tc.form)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ReadID(%q, %q) = %d, %v; want error %s", tc.in, tc.form, id, err, tc.err)
			}
			continue
		}
		if err != nil || id != tc.want {
			t.Errorf("ReadID(%q, %q) = %d, %v; want %d", tc.in, tc.form, id, err, tc.want)
		}
	}
}

func TestFormatID(t *testing.T) {
	for form, want := range map[string]string{"decimal": "4194439168", "base32": "0000003X04400", "base58": "7Pebdh"} {
		if s, err := FormatID(4194439168, form); err != nil || s != want {
			t.Errorf("FormatID(4194439168, %q) = %q, %v; want %q", form, s, err, want)
		}
	}
	if err := CheckForm("hex"); !errors.Is(err, ErrUnknownForm) || err.Error() != `unknown ID form "hex": want decimal, base32, base58` {
		t.Errorf("CheckForm(hex) = %v", err)
	}
}
