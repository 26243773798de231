//go:build cgo

package sqlcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/pganalyze/pg_query_go/v6/parser"
)

// Supported is true when Check can run: it needs cgo for the parser.
const Supported = true

// A run is one call of Check.
type run struct {
	own   map[string]bool
	found []Finding
	data  map[int]bool // offsets in the input of string constants that are data or already checked
}

// A unit is one text that is parsed: the input, a function body, a
// string that EXECUTE runs, a PL/pgSQL expression.
type unit struct {
	*run
	text   string // what is parsed
	raw    string // what is written (text but for format() placeholders), for Finding.Text
	pos    []int  // pos[i] is the input offset of text[i]; nil: i itself
	format bool   // a format() string: names of underscores are placeholders
	depth  int
	stmt   int             // where the statement being walked starts in text
	end    int             // and where it ends
	ctes   map[string]bool // names the statement's WITH clauses define
	used   map[int]bool    // PL/pgSQL: where expressions were found
}

// maxDepth bounds how deeply bodies and strings are checked inside each other.
const maxDepth = 32

func check(sql []byte, own map[string]bool) []Finding {
	r := &run{own: own, data: map[int]bool{}}
	u := &unit{run: r, text: string(sql), raw: string(sql)}
	u.checkSQL()
	return r.found
}

// at maps an offset in u.text to one in the input.
func (u *unit) at(i int) int {
	if u.pos == nil {
		return i
	}
	return u.pos[max(0, min(i, len(u.pos)-1))]
}

// sub is a unit for text[i:] of u with prefix before it (which maps to i).
func (u *unit) sub(prefix, text, raw string, i int) *unit {
	s := &unit{run: u.run, text: prefix + text, raw: prefix + raw, format: u.format, depth: u.depth + 1}
	for j := range len(prefix) + len(text) + 1 {
		s.pos = append(s.pos, u.at(i+max(0, j-len(prefix))))
	}
	return s
}

// literal is a unit for the string constant at text[at:], if there is one.
func (u *unit) literal(at int) (*unit, bool) {
	val, pos, _, ok := unquote(u.text, at)
	raw, _, _, _ := unquote(u.raw, at)
	if !ok || len(raw) != len(val) || u.depth >= maxDepth {
		return nil, false
	}
	s := &unit{run: u.run, text: val, raw: raw, format: u.format, depth: u.depth + 1}
	for _, p := range pos {
		s.pos = append(s.pos, u.at(p))
	}
	return s, true
}

func (u *unit) report(at int, r Rule, text, reason string) {
	if text == "" {
		text = strings.TrimSpace(u.raw[max(0, min(at, len(u.raw))):min(len(u.raw), at+10)])
	}
	u.found = append(u.found, Finding{Offset: u.at(at), Rule: r, Text: strings.Join(strings.Fields(text), " "), Reason: reason})
}

// errorAt is where in u.text the parser's error err is, or 0.
func (u *unit) errorAt(err error) int {
	var pe *parser.Error
	at := 0
	if errors.As(err, &pe) {
		for n := 1; n < pe.Cursorpos && at < len(u.text); n++ {
			_, size := utf8.DecodeRuneInString(u.text[at:])
			at += size
		}
	}
	return at
}

// parse parses u.text as SQL statements.
func (u *unit) parse() ([]rawStmt, error) {
	j, err := pg.ParseToJSON(u.text)
	if err != nil {
		return nil, err
	}
	var tree struct{ Stmts []rawStmt }
	if err := json.Unmarshal([]byte(j), &tree); err != nil {
		panic(err)
	}
	return tree.Stmts, nil
}

// checkSQL checks u as SQL statements, and reports it if it does not
// parse.
func (u *unit) checkSQL() {
	stmts, err := u.parse()
	if err != nil {
		u.report(u.errorAt(err), RuleParse, "", "the parser rejects the SQL ("+err.Error()+"), so nothing in it can be checked")
	}
	u.walkStmts(stmts)
}

type rawStmt struct {
	Stmt     map[string]any
	Location int `json:"stmt_location"`
	Len      int `json:"stmt_len"`
}

func (u *unit) walkStmts(stmts []rawStmt) {
	for _, s := range stmts {
		u.stmt, u.end, u.ctes = s.Location, s.Location+s.Len, map[string]bool{}
		if s.Len == 0 {
			u.end = len(u.text)
		}
		each(s.Stmt, func(typ string, n map[string]any) bool {
			if typ == "CommonTableExpr" {
				u.ctes[str(n["ctename"])] = true
			}
			return true
		})
		each(s.Stmt, u.node)
	}
}

// each calls fn on every node of v, parents first; fn returns whether to
// go into the node.
func each(v any, fn func(typ string, n map[string]any) bool) {
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			each(x, fn)
		}
	case map[string]any:
		for k, x := range v {
			n, ok := x.(map[string]any)
			typ := typedFields[k]
			if k[0] >= 'A' && k[0] <= 'Z' {
				typ = k
			}
			if ok && typ != "" {
				if fn(typ, n) {
					each(n, fn)
				}
				continue
			}
			each(x, fn)
		}
	}
}

// typedFields are the fields that hold a node of one type, which the
// JSON does not name.
var typedFields = map[string]string{
	"typeName": "TypeName", "returnType": "TypeName", "argType": "TypeName", "ofTypename": "TypeName",
	"relation": "RangeVar", "sequence": "RangeVar", "view": "RangeVar", "pktable": "RangeVar", "rel": "RangeVar",
	"table": "RangeVar", "typevar": "RangeVar", "collClause": "CollateClause", "func": "ObjectWithArgs",
}

func str(v any) string {
	if m, ok := v.(map[string]any); ok {
		if s, ok := m["String"].(map[string]any); ok {
			v = s["sval"]
		}
	}
	s, _ := v.(string)
	return s
}

func num(v any) int {
	if f, ok := v.(float64); ok {
		return int(f)
	}
	return 0
}

// loc is a node's location, -1 if it has none.
func loc(n map[string]any) int {
	if f, ok := n["location"].(float64); ok {
		return int(f)
	}
	return -1
}

// names turns a list of String nodes (or a List of them) into strings.
func names(v any) []string {
	if m, ok := v.(map[string]any); ok {
		l, _ := m["List"].(map[string]any)
		v = l["items"]
	}
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		out = append(out, str(x))
	}
	return out
}

// span is the first and last location in the subtree v.
func span(v any) (first, last int) {
	first, last = -1, -1
	each(map[string]any{"X": v}, func(_ string, n map[string]any) bool {
		if l := loc(n); l >= 0 {
			if first < 0 || l < first {
				first = l
			}
			last = max(last, l)
		}
		return true
	})
	return first, last
}

// qualified reports whether the last name of ns is qualified with an
// allowed schema (or a placeholder).
func (u *unit) qualified(ns []string) bool {
	for _, n := range ns {
		if u.format && isPlaceholder(n) {
			return true
		}
	}
	return len(ns) >= 2 && u.own[ns[len(ns)-2]]
}

// unqualified is the reason for a name ns of kind that is not qualified.
func unqualified(kind string, ns []string, with string) string {
	if len(ns) >= 2 {
		return fmt.Sprintf("%s %s is qualified with schema %s, which is neither pg_catalog nor in Options.OwnSchemas", kind, ns[len(ns)-1], ns[len(ns)-2])
	}
	return fmt.Sprintf("%s %s is looked up through search_path; qualify it with %s", kind, strings.Join(ns, "."), with)
}

const anySchema = "pg_catalog (or an own schema)"

// node checks one node of a statement's parse tree.
func (u *unit) node(typ string, n map[string]any) bool {
	switch typ {
	case "A_Expr":
		u.aExpr(n)
	case "SubLink":
		u.subLink(n)
	case "CaseExpr":
		if n["arg"] != nil {
			u.report(loc(n), RuleSyntax, phrase(u.raw, loc(n), "CASE"), "a simple CASE x WHEN v compares with the = operator looked up through search_path; write CASE WHEN x OPERATOR(pg_catalog.=) v")
		}
	case "JoinExpr":
		u.join(n)
	case "FuncCall":
		u.funcCall(n)
	case "TypeName":
		u.typeName(n)
	case "TypeCast":
		u.typeCast(n)
	case "CollateClause":
		if ns := names(n["collname"]); !u.qualified(ns) {
			at := loc(n) + len(phrase(u.raw, loc(n), "COLLATE"))
			for at < len(u.raw) && (u.raw[at] == ' ' || u.raw[at] == '\n' || u.raw[at] == '\t') {
				at++
			}
			u.report(at, RuleCollation, nameAt(u.raw, at), unqualified("collation", ns, "pg_catalog"))
		}
	case "RangeVar":
		ns := append(names(nil), str(n["schemaname"]), str(n["relname"]))
		if ns[0] == "" && u.ctes[ns[1]] {
			break
		}
		if ns[0] == "" {
			ns = ns[1:]
		}
		if !u.qualified(ns) {
			u.report(loc(n), RuleRelation, nameAt(u.raw, loc(n)), unqualified("relation", ns, anySchema))
		}
	case "ObjectWithArgs":
		u.ddlName(names(n["objname"]), RuleFunction, true)
	case "CreateTrigStmt":
		u.ddlName(names(n["funcname"]), RuleFunction, true)
	case "DropStmt", "CommentStmt":
		u.ddlRelations(n)
	case "DefElem":
		if str(n["defname"]) == "owned_by" {
			if ns := names(n["arg"]); len(ns) >= 2 && !u.qualified(ns[:len(ns)-1]) {
				u.ddlName(ns[:len(ns)-1], RuleRelation, true)
			}
		}
	case "CreateFunctionStmt", "DoStmt":
		u.body(typ, n)
	case "A_Const":
		u.dollarCode(n)
	}
	return true
}

func (u *unit) aExpr(n map[string]any) {
	kind, _ := n["kind"].(string)
	ns, at := names(n["name"]), loc(n)
	switch kind {
	case "", "AEXPR_OP":
		u.operator(ns, at)
	case "AEXPR_OP_ANY", "AEXPR_OP_ALL":
		u.opSubquery(ns, at)
	case "AEXPR_DISTINCT", "AEXPR_NOT_DISTINCT":
		u.syntax(at, "FROM", "the = operator")
	case "AEXPR_NULLIF":
		u.report(at, RuleSyntax, phrase(u.raw, at, "NULLIF"), "NULLIF looks up the = operator through search_path; write CASE WHEN a OPERATOR(pg_catalog.=) b THEN NULL ELSE a END")
	case "AEXPR_IN":
		u.syntax(at, "IN", "the "+ns[0]+" operator")
	case "AEXPR_LIKE", "AEXPR_ILIKE":
		u.syntax(at, strings.TrimPrefix(kind, "AEXPR_"), "the "+ns[0]+" operator")
	case "AEXPR_SIMILAR":
		u.syntax(at, "TO", "the "+ns[0]+" operator")
	default: // the BETWEENs
		u.syntax(at, "BETWEEN", "the < and > operators")
	}
}

// syntax reports syntax at at that looks ops up by name; its text is the
// words up to stop.
func (u *unit) syntax(at int, stop, ops string) {
	text := phrase(u.raw, at, stop)
	if strings.EqualFold(stop, "IN") {
		text += " ("
	}
	u.report(at, RuleSyntax, text, text+" looks up "+ops+" through search_path; write it with OPERATOR(pg_catalog.op)")
}

func (u *unit) operator(ns []string, at int) {
	if u.qualified(ns) {
		return
	}
	op := ns[len(ns)-1]
	if u.format {
		op = strings.ReplaceAll(op, "%", "%%")
	}
	if !u.format && at+len(op) <= len(u.raw) {
		op = u.raw[at : at+len(op)] // != is <>
	}
	text, reason := op, "operator "+op+" is looked up through search_path; write OPERATOR(pg_catalog."+op+")"
	if p := phrase(u.raw, at, "OPERATOR"); strings.EqualFold(p, "OPERATOR") {
		text = u.raw[at : at+strings.IndexByte(u.raw[at:], ')')+1]
		reason = unqualified("operator", ns, "pg_catalog")
	}
	u.report(at, RuleOperator, text, reason)
}

// opSubquery checks op ANY/ALL/SOME (...).
func (u *unit) opSubquery(ns []string, at int) {
	if strings.EqualFold(phrase(u.raw, at, "OPERATOR"), "OPERATOR") {
		u.operator(ns, at) // OPERATOR(op) ANY: the operator's schema is the question
		return
	} else if u.qualified(ns) {
		return
	}
	op := ns[len(ns)-1]
	w := phrase(u.raw, at+len(op), "")
	if i := strings.IndexByte(w, ' '); i >= 0 {
		w = w[:i]
	}
	u.report(at, RuleSyntax, op+" "+w, op+" "+w+" (...) looks up the "+op+" operator through search_path; write OPERATOR(pg_catalog."+op+") "+w+" (...)")
}

func (u *unit) subLink(n map[string]any) {
	switch t, _ := n["subLinkType"].(string); {
	case t == "ANY_SUBLINK" && n["operName"] == nil:
		u.syntax(loc(n), "IN", "the = operator")
	case t == "ANY_SUBLINK" || t == "ALL_SUBLINK":
		u.opSubquery(names(n["operName"]), loc(n))
	}
}

func (u *unit) join(n map[string]any) {
	first, last := span(n["rarg"])
	const reason = " looks up the = operator through search_path; write JOIN ... ON a OPERATOR(pg_catalog.=) b"
	if b, _ := n["isNatural"].(bool); b {
		if at := wordIndex(u.raw, "NATURAL", u.stmt, first, true); at >= 0 {
			u.report(at, RuleSyntax, u.raw[at:at+7], "NATURAL JOIN"+reason)
		}
	}
	if n["usingClause"] != nil {
		if at := wordIndex(u.raw, "USING", last, len(u.raw), false); at >= 0 {
			u.report(at, RuleSyntax, u.raw[at:at+5], "JOIN ... USING"+reason)
		}
	}
}

func (u *unit) funcCall(n map[string]any) {
	ns, args := names(n["funcname"]), n["args"]
	if f, _ := n["funcformat"].(string); f != "COERCE_SQL_SYNTAX" && !u.qualified(ns) && loc(n) >= 0 {
		u.report(loc(n), RuleFunction, nameAt(u.raw, loc(n)), unqualified("function", ns, anySchema))
	}
	if l, _ := args.([]any); len(l) > 0 {
		if c, ok := l[0].(map[string]any)["A_Const"].(map[string]any); ok {
			u.regString(ns[len(ns)-1], c)
		}
	}
}

func (u *unit) typeName(n map[string]any) {
	ns, at := names(n["names"]), loc(n)
	if pct, _ := n["pct_type"].(bool); pct {
		ns = ns[:len(ns)-1] // a column's type: the table needs a schema
	}
	if at < 0 || u.qualified(ns) && !(ns[0] == "pg_catalog" && newKeywordTypes[ns[1]] && !strings.Contains(nameAt(u.raw, at), ".")) {
		return
	}
	if p := phrase(u.raw, at, "SETOF"); strings.EqualFold(p, "SETOF") {
		at += strings.Index(strings.ToUpper(u.raw[at:]), "SETOF") + 5
		for at < len(u.raw) && strings.ContainsRune(" \t\r\n", rune(u.raw[at])) {
			at++
		}
	}
	u.report(at, RuleType, nameAt(u.raw, at), unqualified("type", ns, "pg_catalog (int, bigint, boolean... are keywords that need none)"))
}

// newKeywordTypes are types the grammar maps to pg_catalog that were
// names looked up through search_path before PostgreSQL 16.
var newKeywordTypes = map[string]bool{"json": true}

func (u *unit) typeCast(n map[string]any) {
	arg, _ := n["arg"].(map[string]any)
	c, ok := arg["A_Const"].(map[string]any)
	if !ok {
		return
	}
	if loc(n) < 0 { // a typed literal: the string is data
		u.data[u.at(loc(c))] = true
	}
	tn, _ := n["typeName"].(map[string]any)
	ns := names(tn["names"])
	u.regString(ns[len(ns)-1], c)
}

// regTemplates turns the string that a reg* type or function reads as
// a name into SQL that names the same thing.
var regTemplates = map[string]string{
	"regclass": "SELECT FROM %s", "regconfig": "SELECT FROM %s", "regdictionary": "SELECT FROM %s",
	"to_regclass": "SELECT FROM %s", "nextval": "SELECT FROM %s", "currval": "SELECT FROM %s",
	"setval": "SELECT FROM %s", "pg_sequence_last_value": "SELECT FROM %s",
	"regtype": "SELECT NULL::%s", "to_regtype": "SELECT NULL::%s",
	"regproc": "DROP FUNCTION %s", "regprocedure": "DROP FUNCTION %s", "to_regproc": "DROP FUNCTION %s", "to_regprocedure": "DROP FUNCTION %s",
	"regoper": "SELECT 1 OPERATOR(%s) 1", "to_regoper": "SELECT 1 OPERATOR(%s) 1",
	"regoperator": "DROP OPERATOR %s", "to_regoperator": "DROP OPERATOR %s",
	"regcollation": "SELECT NULL COLLATE %s", "to_regcollation": "SELECT NULL COLLATE %s",
}

// regString checks a string constant c read as a name by reg (a reg*
// type or a function that takes a name).
func (u *unit) regString(reg string, c map[string]any) {
	tmpl, ok := regTemplates[reg]
	sv, isStr := c["sval"].(map[string]any)
	if !ok || !isStr {
		return
	}
	at := loc(c)
	u.data[u.at(at)] = true
	probe := &unit{run: &run{own: u.own, data: map[int]bool{}}, format: u.format}
	probe.text = fmt.Sprintf(tmpl, str(sv["sval"]))
	probe.raw = probe.text
	probe.checkSQL()
	if len(probe.found) > 0 {
		_, _, end, _ := unquote(u.raw, at)
		u.report(at, RuleString, u.raw[at:max(at, end)], "the string is read as "+reg+", which looks "+str(sv["sval"])+" up through search_path; qualify it with pg_catalog or an own schema")
	}
}

// ddlName checks a name that DDL creates (named false) or names, which
// has no location in the tree: it is found from the statement's start.
func (u *unit) ddlName(ns []string, r Rule, named bool) {
	if len(ns) == 0 || u.qualified(ns) && (named || ns[len(ns)-2] != "pg_catalog") {
		return
	}
	at, text := u.stmt, strings.Join(ns, ".")
	for _, m := range nameRE(ns).FindAllStringSubmatchIndex(u.raw[u.stmt:], -1) {
		if at, text = u.stmt+m[2], u.raw[u.stmt+m[2]:u.stmt+m[3]]; !u.data[u.at(at)] {
			break
		}
	}
	u.data[u.at(at)] = true
	reason := unqualified(string(r), ns, anySchema)
	if !named {
		reason = string(r) + " " + text + " is created without an own schema; qualify it with one of Options.OwnSchemas"
	}
	u.report(at, r, text, reason)
}

// ddlRelations checks the tables, sequences and views that DROP and
// COMMENT ON name.
func (u *unit) ddlRelations(n map[string]any) {
	kind, _ := n["removeType"].(string)
	objs, _ := n["objects"].([]any)
	if k, ok := n["objtype"].(string); ok {
		kind, objs = k, []any{n["object"]}
	}
	switch kind {
	case "OBJECT_TABLE", "OBJECT_SEQUENCE", "OBJECT_VIEW", "OBJECT_MATVIEW", "OBJECT_INDEX", "OBJECT_FOREIGN_TABLE":
		for _, o := range objs {
			if _, ok := o.(map[string]any)["List"]; ok {
				u.ddlName(names(o), RuleRelation, true)
			}
		}
	}
}

// dollarCode checks a dollar-quoted string constant as code (a statement
// or else an expression) when it parses as one: it may be run later.
func (u *unit) dollarCode(n map[string]any) {
	at := loc(n)
	if _, ok := n["sval"]; !ok || at < 0 || u.data[u.at(at)] || dollarTag(u.text[at:]) == "" {
		return
	}
	s, ok := u.literal(at)
	if !ok {
		return
	}
	for _, prefix := range []string{"", "SELECT ", "SELECT NULL "} { // a statement, an expression, the rest of one
		e := s.sub(prefix, s.text, s.raw, 0)
		if stmts, err := e.parse(); err == nil {
			e.walkStmts(stmts)
			return
		}
	}
}

// body checks the body of CREATE FUNCTION or DO written in SQL or
// PL/pgSQL.
func (u *unit) body(typ string, n map[string]any) {
	if typ == "CreateFunctionStmt" {
		u.ddlName(names(n["funcname"]), RuleFunction, false)
	}
	lang, at := "plpgsql", -1
	opts, _ := n["options"].([]any)
	if typ == "DoStmt" {
		opts, lang = n["args"].([]any), "plpgsql"
	} else if n["sql_body"] == nil {
		lang = "sql"
	}
	for _, o := range opts {
		d := o.(map[string]any)["DefElem"].(map[string]any)
		switch str(d["defname"]) {
		case "language":
			lang = strings.ToLower(str(d["arg"]))
		case "as":
			if l, ok := d["arg"].(map[string]any)["List"]; !ok || len(l.(map[string]any)["items"].([]any)) == 1 {
				at = num(d["arg_location"])
			}
		}
	}
	b, ok := u.literal(at)
	switch {
	case at < 0 || !ok:
	case lang == "sql":
		b.checkSQL()
	case lang == "plpgsql":
		b.plpgsql(u.text[u.stmt:u.end])
	}
}
