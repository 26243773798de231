package idkit

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sfgen/sfgen"
)

// Forms are the names of the ways sfgen writes an ID: "decimal", then
// the encodings' (sfgen.Encodings). --format and serve's page take them.
var Forms = append([]string{"decimal"}, encodingNames()...)

func encodingNames() []string {
	var out []string
	for _, e := range sfgen.Encodings {
		out = append(out, e.String())
	}
	return out
}

// MissingID is the error of an ID not given, to decompose and to serve's
// page and API.
const MissingID = "missing ID; want a decimal integer in [0, 9223372036854775807] or a base32 ID (13 characters)"

// ErrUnknownForm is wrapped by CheckForm's error.
var ErrUnknownForm = errors.New("unknown ID form")

// CheckForm returns nil when form is one of Forms, else an error naming
// them.
func CheckForm(form string) error {
	for _, f := range Forms {
		if f == form {
			return nil
		}
	}
	return fmt.Errorf("%w %q: want %s", ErrUnknownForm, form, strings.Join(Forms, ", "))
}

// FormatID writes id in form (one of Forms).
func FormatID(id sfgen.ID, form string) (string, error) {
	if form == "decimal" {
		return id.String(), nil
	}
	e, err := sfgen.ParseEncoding(form)
	if err != nil {
		return "", err
	}
	return id.Encode(e)
}

// ReadID reads the ID s written in form, one of Forms. With form "" it
// reads decimal, or base32 where s has 13 characters and is not decimal;
// base58 only when asked, since a mistyped decimal ID ("12x4") is often
// a valid base58 one. The error is the one of the form s was read as.
func ReadID(s, form string) (sfgen.ID, error) {
	switch form {
	case "decimal":
		return sfgen.ParseID(s)
	case "":
	default:
		e, err := sfgen.ParseEncoding(form)
		if err != nil {
			return 0, err
		}
		return sfgen.Decode(s, e)
	}
	id, err := sfgen.ParseID(s)
	if err == nil || errors.Is(err, sfgen.ErrOutOfRange) || isDecimal(s) {
		return id, err
	}
	if utf8.RuneCountInString(s) == 13 {
		return sfgen.ParseBase32(s)
	}
	return 0, err
}

// isDecimal reports whether s is an optional sign and ASCII digits.
func isDecimal(s string) bool {
	s = strings.TrimLeft(s, "+-")
	return s != "" && strings.Trim(s, "0123456789") == ""
}
