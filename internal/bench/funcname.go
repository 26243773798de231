package bench

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sfgen/sfgen/internal/pgident"
)

// ErrBadFuncName is wrapped by the *FuncNameError that ParseFuncName
// returns for a name it refuses.
var ErrBadFuncName = errors.New("invalid function name")

// A FuncNameError reports a function name (Config.Compare) that
// ParseFuncName refuses, and why.
type FuncNameError struct {
	Value  string // the name given
	Reason string // what is wrong with it
}

func (e *FuncNameError) Error() string {
	return fmt.Sprintf("compare function %q %s; want name or schema.name, each part an identifier: unquoted (letters, digits, _ and $, not starting with a digit; folded to lower case) or in double quotes (\"\" for a quote), at most 63 bytes", e.Value, e.Reason)
}

// Unwrap returns ErrBadFuncName.
func (e *FuncNameError) Unwrap() error { return ErrBadFuncName }

// A FuncName is a function named by Config.Compare, its parts as
// PostgreSQL reads them.
type FuncName struct {
	Schema string // "" when the name is not qualified
	Name   string
	// Text is the name as written, with "()" after it: snowflake.nextval().
	Text string
}

// Call is the call of f with no arguments, written only from its parsed
// parts, each quoted: "snowflake"."nextval"().
func (f FuncName) Call() string {
	c := pgident.Quote(f.Name) + "()"
	if f.Schema != "" {
		c = pgident.Quote(f.Schema) + "." + c
	}
	return c
}

// maxIdent is the longest identifier PostgreSQL keeps (NAMEDATALEN - 1);
// it truncates longer ones.
const maxIdent = 63

// ParseFuncName parses s as PostgreSQL reads a function's name: name or
// schema.name, each part an identifier, either unquoted (letters, digits,
// _ and $, not starting with a digit or $; ASCII letters folded to lower
// case; bytes beyond ASCII count as letters, as PostgreSQL has them) or in
// double quotes, kept as written, with "" for a double quote. An empty
// "()" may follow. Spaces and comments are not allowed.
func ParseFuncName(s string) (FuncName, error) {
	bad := func(format string, args ...any) (FuncName, error) {
		return FuncName{}, &FuncNameError{Value: s, Reason: fmt.Sprintf(format, args...)}
	}
	if !utf8.ValidString(s) {
		return bad("is not valid UTF-8")
	}
	text := strings.TrimSuffix(s, "()")
	var parts []string
	for rest := text; ; {
		at := len(text) - len(rest)
		part, n, reason := ident(rest)
		if reason != "" {
			return bad("has %s at byte %d", reason, at)
		}
		if len(part) > maxIdent {
			return bad("has a part of %d bytes at byte %d", len(part), at)
		}
		parts = append(parts, part)
		rest = rest[n:]
		if rest == "" {
			break
		}
		if rest[0] != '.' {
			return bad("has %q at byte %d", rest[0], len(text)-len(rest))
		}
		rest = rest[1:]
	}
	switch len(parts) {
	case 1:
		return FuncName{Name: parts[0], Text: text + "()"}, nil
	case 2:
		return FuncName{Schema: parts[0], Name: parts[1], Text: text + "()"}, nil
	}
	return bad("has %d dotted parts", len(parts))
}

// ident reads one identifier at the start of s and returns it as
// PostgreSQL reads it and the bytes it took, or why there is none.
func ident(s string) (name string, n int, reason string) {
	if s == "" || s[0] == '.' {
		return "", 0, "an empty part"
	}
	if s[0] == '"' {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch {
			case s[i] == '"' && i+1 < len(s) && s[i+1] == '"':
				b.WriteByte('"')
				i++
			case s[i] == '"':
				if b.Len() == 0 {
					return "", 0, "an empty quoted identifier"
				}
				return b.String(), i + 1, ""
			case s[i] == 0:
				return "", 0, "a NUL byte"
			default:
				b.WriteByte(s[i])
			}
		}
		return "", 0, "an unterminated quoted identifier"
	}
	switch c := s[0]; {
	case c >= '0' && c <= '9':
		return "", 0, "a part starting with a digit"
	case !identStart(c):
		return "", 0, fmt.Sprintf("%q", c)
	}
	i := 1
	for i < len(s) && (identStart(s[i]) || s[i] >= '0' && s[i] <= '9' || s[i] == '$') {
		i++
	}
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s[:i]), i, ""
}

// identStart reports whether c may start an unquoted identifier: a
// letter, _, or a byte beyond ASCII.
func identStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}
