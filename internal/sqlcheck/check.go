package sqlcheck

import (
	"sort"
	"strconv"
	"strings"
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
	RuleParse     Rule = "parse"     // SQL or PL/pgSQL that PostgreSQL's parser rejects, so it is not checked
)

// A Finding is one place where a name could resolve through the caller's
// search_path.
type Finding struct {
	// Line and Col are where it starts: Line from 1, Col the 1-based byte
	// offset within the line (as go/token counts).
	Line, Col int
	// Offset is the byte offset in the checked SQL. A finding inside a
	// function body given as a '...' string points into that string.
	Offset int
	// Rule is the kind of lookup.
	Rule Rule
	// Text is the construct as written, white space folded: "<",
	// "IS DISTINCT FROM", "nextval", "timestamptz".
	Text string
	// Reason says what is looked up and how to write it instead.
	Reason string
}

// String formats f as "line:col: rule: text: reason".
func (f Finding) String() string {
	return strconv.Itoa(f.Line) + ":" + strconv.Itoa(f.Col) + ": " + string(f.Rule) + ": " + f.Text + ": " + f.Reason
}

// Options say which schemas, besides pg_catalog, a name may be qualified
// with.
type Options struct {
	// OwnSchemas are the schemas whose objects the SQL may name
	// qualified, as SQL spells them: quoted ("public", "My Schema") or
	// not (public, which is folded to lower case). Objects the SQL
	// creates must be qualified with one of them.
	OwnSchemas []string
}

// Check returns every place in sql where a name could resolve through the
// caller's search_path, in the order they appear. See the package
// documentation for what is checked and what is allowed. It needs cgo
// (see Supported).
func Check(sql []byte, opts Options) []Finding {
	own := map[string]bool{"pg_catalog": true}
	for _, s := range opts.OwnSchemas {
		own[normalizeSchema(s)] = true
	}
	found := check(sql, own)
	sort.SliceStable(found, func(i, j int) bool { return found[i].Offset < found[j].Offset })
	var out []Finding
	line, col, at := 1, 1, 0
	for i, f := range found {
		if i > 0 && f.Offset == found[i-1].Offset && f.Rule == found[i-1].Rule {
			continue // the tree holds some nodes twice (a signature's argument types)
		}
		for ; at < f.Offset && at < len(sql); at++ {
			if sql[at] == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		f.Line, f.Col = line, col
		out = append(out, f)
	}
	return out
}

// SkipUnsupported skips t, saying why, when Check cannot run in this
// build.
func SkipUnsupported(t interface{ Skip(...any) }) {
	if !Supported {
		t.Skip("internal/sqlcheck needs cgo for PostgreSQL's parser (pg_query_go): build with CGO_ENABLED=1 and a C compiler")
	}
}

// normalizeSchema turns a schema name as SQL spells it into the name
// itself.
func normalizeSchema(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return strings.ToLower(s)
}
