package sqlcheck

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A Rule names what kind of search_path lookup a Finding is.
type Rule string

// The rules; the package documentation describes each.
const (
	RuleOperator  Rule = "operator"  // an operator not written OPERATOR(pg_catalog.op)
	RuleSyntax    Rule = "syntax"    // syntax that looks an operator up by name
	RuleFunction  Rule = "function"  // a function called, or named in DDL, without an allowed schema
	RuleType      Rule = "type"      // a type name that is neither a keyword type nor qualified
	RuleCollation Rule = "collation" // a COLLATE without an allowed schema
	RuleRelation  Rule = "relation"  // a table, sequence or view name without an allowed schema
	RuleString    Rule = "string"    // a string read as a name (regclass '...') without an allowed schema
	RuleParse     Rule = "parse"     // SQL or PL/pgSQL that PostgreSQL's parser rejects: not checked
)

// A Finding is one place where a name could resolve through the caller's
// search_path.
type Finding struct {
	Line, Col int    // where it starts: Line from 1, Col the 1-based byte in the line
	Offset    int    // where it starts in the SQL (in a '...' body, in that string)
	Rule      Rule   // the kind of lookup
	Text      string // the construct as written, white space folded: "<", "IS DISTINCT FROM", "nextval"
	Reason    string // what is looked up and how to write it instead
}

// String formats f as "line:col: rule: text: reason".
func (f Finding) String() string {
	return strconv.Itoa(f.Line) + ":" + strconv.Itoa(f.Col) + ": " + string(f.Rule) + ": " + f.Text + ": " + f.Reason
}

// Options say which schemas, besides pg_catalog, a name may be qualified
// with.
type Options struct {
	// OwnSchemas are those schemas as SQL spells them, quoted ("My Schema")
	// or not (folded to lower case). What the SQL creates must be in one.
	OwnSchemas []string
}

// Check returns every place in sql where a name could resolve through the
// caller's search_path, in order. It needs cgo: see SkipUnsupported.
func Check(sql []byte, opts Options) []Finding {
	own := map[string]bool{"pg_catalog": true}
	for _, s := range opts.OwnSchemas {
		if s = strings.TrimSpace(s); strings.HasPrefix(s, `"`) {
			own[strings.ReplaceAll(strings.Trim(s, `"`), `""`, `"`)] = true
		} else {
			own[strings.ToLower(s)] = true
		}
	}
	var found []Finding
	if at := invalidUTF8(sql); at >= 0 { // the server refuses it too
		found = []Finding{{Offset: at, Rule: RuleParse, Text: strconv.Quote(string(sql[at:min(len(sql), at+4)])),
			Reason: "the SQL is not valid UTF-8, which PostgreSQL refuses, so nothing in it can be checked"}}
	} else {
		found = check(string(sql), own, false)
	}
	slices.SortStableFunc(found, func(a, b Finding) int { return a.Offset - b.Offset })
	// The tree holds some nodes twice (a signature's argument types).
	found = slices.CompactFunc(found, func(a, b Finding) bool { return a.Offset == b.Offset && a.Rule == b.Rule })
	for i, f := range found {
		found[i].Line = 1 + bytes.Count(sql[:f.Offset], []byte("\n"))
		found[i].Col = f.Offset - bytes.LastIndexByte(sql[:f.Offset], '\n')
	}
	return found
}

// invalidUTF8 returns where sql stops being UTF-8, or -1.
func invalidUTF8(sql []byte) int {
	for i := 0; i < len(sql); {
		r, n := utf8.DecodeRune(sql[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// SkipUnsupported skips t, saying why, when Check cannot run in this build.
func SkipUnsupported(t interface{ Skip(...any) }) {
	if !Supported {
		t.Skip("internal/sqlcheck needs cgo for PostgreSQL's parser (pg_query_go): build with CGO_ENABLED=1 and a C compiler")
	}
}
