//go:build cgo

package sqlcheck

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/pganalyze/pg_query_go/v6/parser"
)

// Supported is true when Check can run: it needs cgo for the parser.
const Supported = true

// A run is one call of Check.
type run struct {
	own   map[string]bool
	found []Finding
	data  map[int]bool // input offsets of string constants that are data or checked already
}

// A unit is one text that is parsed: the input, a function body, a
// string that EXECUTE runs, a PL/pgSQL expression.
type unit struct {
	*run
	text, raw  string // what is parsed; what is written (format()'s placeholders), for Finding.Text
	pos        []int  // pos[i] is the input offset of text[i]; nil: i
	format     bool   // in a format() string: names of underscores are placeholders
	depth      int
	stmt, end  int             // where the statement being walked is in text
	ctes, used map[string]bool // its WITH's names; PL/pgSQL: what was found where
}

// maxDepth bounds how deeply bodies and strings are checked inside each other.
const maxDepth = 32

// check finds what Check does in text (with format, a format() string).
func check(text string, own map[string]bool, format bool) []Finding {
	u := &unit{run: &run{own: own, data: map[int]bool{}}, text: text, raw: text, format: format}
	u.checkSQL(false)
	return u.found
}

// at maps an offset in u.text to one in the input.
func (u *unit) at(i int) int {
	if u.pos == nil {
		return i
	}
	return u.pos[max(0, min(i, len(u.pos)-1))]
}

// child is a unit one level below u for text (raw as written) whose byte
// i is at u.text[pos(i)].
func (u *unit) child(text, raw string, pos func(int) int) *unit {
	c := &unit{run: u.run, text: text, raw: raw, format: u.format, depth: u.depth + 1}
	for i := range len(text) + 1 {
		c.pos = append(c.pos, u.at(pos(i)))
	}
	return c
}

// sub is a unit for text, at i in u, with prefix before it.
func (u *unit) sub(prefix, text, raw string, i int) *unit {
	return u.child(prefix+text, prefix+raw, func(j int) int { return i + max(0, j-len(prefix)) })
}

// literal is a unit for the value of the string constant at u.text[at:].
func (u *unit) literal(at int) (*unit, bool) {
	val, pos, _, ok := unquote(u.text, at)
	raw, _, _, _ := unquote(u.raw, at)
	if !ok || len(raw) != len(val) || u.depth >= maxDepth {
		return nil, false
	}
	return u.child(val, raw, func(i int) int { return pos[i] }), true
}

// report reports r at at: text, if not given, is the 10 bytes there.
func (u *unit) report(at int, r Rule, text, reason string) {
	text = cmp.Or(text, u.raw[max(0, min(at, len(u.raw))):min(len(u.raw), at+10)])
	text = cmp.Or(strings.Join(strings.Fields(text), " "), "(end of text)")
	u.found = append(u.found, Finding{Offset: u.at(at), Rule: r, Text: text, Reason: reason})
}

type rawStmt struct {
	Stmt     map[string]any
	Location int `json:"stmt_location"`
	Len      int `json:"stmt_len"`
}

// parse parses u.text as SQL statements; if it cannot, errAt is where in
// u.text the parser stopped (a character count taken for bytes).
func (u *unit) parse() (stmts []rawStmt, errAt int, err error) {
	j, err := pg.ParseToJSON(u.text)
	var tree struct{ Stmts []rawStmt }
	var pe *parser.Error
	if errors.As(err, &pe) {
		errAt = max(0, min(pe.Cursorpos-1, len(u.text)-1))
	} else if err == nil {
		err = json.Unmarshal([]byte(j), &tree)
	}
	return tree.Stmts, errAt, err
}

// checkSQL checks u as SQL statements, or reports that they do not parse;
// with dynamic, also the SQL that one statement, EXECUTE's expression, runs.
func (u *unit) checkSQL(dynamic bool) {
	stmts, errAt, err := u.parse()
	if err != nil {
		u.report(errAt, RuleParse, "", "the parser rejects the SQL ("+err.Error()+"), so nothing in it can be checked")
	}
	if dynamic && len(stmts) == 1 {
		u.dynamic(stmts[0].Stmt)
	}
	u.walkStmts(stmts)
}

func (u *unit) walkStmts(stmts []rawStmt) {
	for _, s := range stmts {
		u.stmt, u.end, u.ctes = s.Location, s.Location+s.Len, map[string]bool{}
		if s.Len == 0 {
			u.end = len(u.text)
		}
		each(s.Stmt, 0, func(typ string, n map[string]any, _ int) {
			if typ == "CommonTableExpr" {
				u.ctes[str(n["ctename"])] = true
			}
		})
		each(s.Stmt, 0, u.node)
	}
}

// typedFields are the fields that hold a node of one type, which the JSON
// does not name.
var typedFields = map[string]string{
	"typeName": "TypeName", "returnType": "TypeName", "argType": "TypeName", "ofTypename": "TypeName",
	"relation": "RangeVar", "sequence": "RangeVar", "view": "RangeVar", "pktable": "RangeVar", "rel": "RangeVar",
	"table": "RangeVar", "typevar": "RangeVar", "collClause": "CollateClause", "func": "ObjectWithArgs",
}

// each calls fn on every node in v, parents first, with the line (of
// PL/pgSQL) it is on.
func each(v any, line int, fn func(typ string, n map[string]any, line int)) {
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			each(x, line, fn)
		}
	case map[string]any:
		for k, x := range v {
			typ, l := typedFields[k], line
			if k[0] >= 'A' && k[0] <= 'Z' {
				typ = k
			}
			if n, ok := x.(map[string]any); ok && typ != "" {
				if f, ok := n["lineno"].(float64); ok {
					l = int(f)
				}
				fn(typ, n, l)
			}
			each(x, l, fn)
		}
	}
}

// get follows path through the nodes from v: nil where it breaks off.
func get(v any, path ...string) map[string]any {
	m, _ := v.(map[string]any)
	for _, k := range path {
		m, _ = m[k].(map[string]any)
	}
	return m
}

func str(v any) string {
	if m, ok := v.(map[string]any); ok {
		v = get(m, "String")["sval"]
	}
	s, _ := v.(string)
	return s
}

// loc is a node's location, -1 if it has none.
func loc(n map[string]any) int {
	if f, ok := n["location"].(float64); ok {
		return int(f)
	}
	return -1
}

// names turns a list of String nodes (or a List node of them) into strings.
func names(v any) []string {
	if m, ok := v.(map[string]any); ok {
		v = get(m, "List")["items"]
	}
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		out = append(out, str(x))
	}
	return out
}

// qualified reports whether ns is qualified with an allowed schema (or
// holds a placeholder).
func (u *unit) qualified(ns []string) bool {
	placeholder := func(n string) bool { return n != "" && strings.Trim(n, "_") == "" }
	return u.format && slices.ContainsFunc(ns, placeholder) || len(ns) >= 2 && u.own[ns[len(ns)-2]]
}

// unqualified is the reason to report a name ns of a kind.
func unqualified(kind string, ns []string) string {
	if len(ns) >= 2 {
		return fmt.Sprintf("%s %s is qualified with schema %s, which is neither pg_catalog nor in Options.OwnSchemas", kind, ns[len(ns)-1], ns[len(ns)-2])
	}
	return fmt.Sprintf("%s %s is looked up through search_path; qualify it with pg_catalog or an own schema", kind, strings.Join(ns, "."))
}

// node checks one node of a statement's parse tree or, on line of its
// body, of a PL/pgSQL function's.
func (u *unit) node(typ string, n map[string]any, line int) {
	at := loc(n)
	switch typ {
	case "A_Expr":
		if kind, ns := str(n["kind"]), names(n["name"]); syntaxStops[kind] != "" {
			u.syntax(at, syntaxStops[kind], ns[0])
		} else {
			u.operator(ns, at, kind == "AEXPR_OP_ANY" || kind == "AEXPR_OP_ALL")
		}
	case "SubLink":
		if t := str(n["subLinkType"]); t == "ANY_SUBLINK" && n["operName"] == nil {
			u.syntax(at, "IN", "=")
		} else if t == "ANY_SUBLINK" || t == "ALL_SUBLINK" {
			u.operator(names(n["operName"]), at, true)
		}
	case "CaseExpr", "PLpgSQL_stmt_case": // a simple CASE x WHEN v if it has an x
		if typ == "PLpgSQL_stmt_case" {
			at = wordIndex(u.raw, "CASE", u.lineStart(line), len(u.raw), false)
		}
		if (n["arg"] != nil || n["t_expr"] != nil) && at >= 0 {
			u.report(at, RuleSyntax, u.raw[at:at+4], "a simple CASE x WHEN v compares with the = operator looked up through search_path; write CASE WHEN x OPERATOR(pg_catalog.=) v")
		}
	case "JoinExpr":
		u.join(n)
	case "FuncCall":
		ns := names(n["funcname"])
		if str(n["funcformat"]) != "COERCE_SQL_SYNTAX" && !u.qualified(ns) && at >= 0 {
			u.report(at, RuleFunction, nameAt(u.raw, at), unqualified("function", ns))
		}
		if args, _ := n["args"].([]any); len(args) > 0 {
			u.regString(ns[len(ns)-1], args[0])
		}
	case "TypeName":
		ns := names(n["names"])
		if pct, _ := n["pct_type"].(bool); pct {
			ns = ns[:len(ns)-1] // a column's type: the table needs a schema
		}
		// The grammar maps json to pg_catalog, but before PostgreSQL 16 it was a name.
		if at >= 0 && (!u.qualified(ns) || ns[0] == "pg_catalog" && ns[1] == "json" && !strings.Contains(nameAt(u.raw, at), ".")) {
			u.report(at, RuleType, nameAt(u.raw, at), unqualified("type", ns)+" (int, bigint, boolean... are keywords that need none)")
		}
	case "TypeCast":
		if c := get(n, "arg", "A_Const"); c != nil && at < 0 { // a typed literal: its string is data
			u.data[u.at(loc(c))] = true
		}
		tn := names(get(n, "typeName")["names"])
		u.regString(tn[len(tn)-1], n["arg"])
	case "CollateClause":
		if ns := names(n["collname"]); !u.qualified(ns) {
			at = skip(u.raw, at+len("COLLATE"), " \t\r\n") // the parser locates COLLATE
			u.report(at, RuleCollation, nameAt(u.raw, at), unqualified("collation", ns))
		}
	case "RangeVar":
		ns := slices.DeleteFunc([]string{str(n["schemaname"]), str(n["relname"])}, func(s string) bool { return s == "" })
		if !u.qualified(ns) && !(len(ns) == 1 && u.ctes[ns[0]]) {
			u.report(at, RuleRelation, nameAt(u.raw, at), unqualified("relation", ns))
		}
	case "ObjectWithArgs", "CreateTrigStmt": // the function they name
		u.ddlName(append(names(n["objname"]), names(n["funcname"])...), RuleFunction, true)
	case "DropStmt", "CommentStmt": // the relations they name
		objs, _ := n["objects"].([]any) // DROP's; COMMENT ON's object is one
		kind := strings.TrimPrefix(str(n["removeType"])+str(n["objtype"]), "OBJECT_")
		for _, o := range append(objs, n["object"]) {
			if get(o, "List") != nil && strings.Contains(" TABLE SEQUENCE VIEW MATVIEW INDEX FOREIGN_TABLE ", " "+kind+" ") {
				u.ddlName(names(o), RuleRelation, true)
			}
		}
	case "DefElem":
		if ns := names(n["arg"]); str(n["defname"]) == "owned_by" && len(ns) >= 2 {
			u.ddlName(ns[:len(ns)-1], RuleRelation, true)
		}
	case "CreateFunctionStmt", "DoStmt":
		u.body(typ, n)
	case "A_Const":
		u.dollarCode(n)
	case "PLpgSQL_expr":
		u.plExpr(n, line, false)
	case "PLpgSQL_var", "PLpgSQL_rec":
		if n["lineno"] != nil {
			u.declaration(typ, n, line)
		}
	case "PLpgSQL_stmt_dynexecute", "PLpgSQL_stmt_dynfors", "PLpgSQL_stmt_return_query", "PLpgSQL_stmt_open":
		if e := get(n, dynamicFields[typ], "PLpgSQL_expr"); e != nil {
			u.plExpr(e, line, true)
			delete(n, dynamicFields[typ]) // not to be checked again
		}
	}
}

// syntaxStops are the A_Expr kinds that are syntax, with the word their
// text ends with.
var syntaxStops = map[string]string{"AEXPR_DISTINCT": "FROM", "AEXPR_NOT_DISTINCT": "FROM", "AEXPR_NULLIF": "NULLIF",
	"AEXPR_IN": "IN", "AEXPR_LIKE": "LIKE", "AEXPR_ILIKE": "ILIKE", "AEXPR_SIMILAR": "TO", "AEXPR_BETWEEN": "BETWEEN",
	"AEXPR_NOT_BETWEEN": "BETWEEN", "AEXPR_BETWEEN_SYM": "BETWEEN", "AEXPR_NOT_BETWEEN_SYM": "BETWEEN"}

// syntax reports syntax at at that looks up operator op; its text is the
// words up to stop.
func (u *unit) syntax(at int, stop, op string) {
	text := phrase(u.raw, at, stop)
	if stop == "IN" {
		text += " ("
	}
	u.report(at, RuleSyntax, text, text+" looks up an operator ("+op+") through search_path; write it with OPERATOR(pg_catalog.op)")
}

// operator checks the operator ns at at; with subquery, of op ANY/ALL/SOME
// (...), which is syntax unless written OPERATOR(op) ANY.
func (u *unit) operator(ns []string, at int, subquery bool) {
	switch op := ns[len(ns)-1]; {
	case u.qualified(ns): // nothing to report
	case strings.EqualFold(phrase(u.raw, at, "OPERATOR"), "OPERATOR"):
		u.report(at, RuleOperator, u.raw[at:at+strings.IndexByte(u.raw[at:], ')')+1], unqualified("operator", ns))
	case subquery:
		text := op + " " + strings.Fields(phrase(u.raw, at+len(op), "") + " ANY")[0]
		u.report(at, RuleSyntax, text, text+" (...) looks up the "+op+" operator through search_path; write OPERATOR(pg_catalog."+op+")"+text[len(op):])
	default:
		if u.format {
			op = strings.ReplaceAll(op, "%", "%%")
		} else if at+len(op) <= len(u.raw) {
			op = u.raw[at : at+len(op)] // != is <>
		}
		u.report(at, RuleOperator, op, "operator "+op+" is looked up through search_path; write OPERATOR(pg_catalog."+op+")")
	}
}

// join checks NATURAL JOIN and JOIN ... USING, which the tree does not
// locate: they are found before and after the right-hand item.
func (u *unit) join(n map[string]any) {
	first, last := -1, -1
	each(n["rarg"], 0, func(_ string, n map[string]any, _ int) {
		if l := loc(n); l >= 0 && (first < 0 || l < first) {
			first = l
		}
		last = max(last, loc(n))
	})
	const reason = " looks up the = operator through search_path; write JOIN ... ON a OPERATOR(pg_catalog.=) b"
	if b, _ := n["isNatural"].(bool); b {
		if at := wordIndex(u.raw, "NATURAL", u.stmt, first, true); at >= 0 {
			u.report(at, RuleSyntax, u.raw[at:at+7], "NATURAL JOIN"+reason)
		}
	}
	if at := wordIndex(u.raw, "USING", last, len(u.raw), false); n["usingClause"] != nil && at >= 0 {
		u.report(at, RuleSyntax, u.raw[at:at+5], "JOIN ... USING"+reason)
	}
}

// regTemplates turn the string that a reg* type or function reads as a
// name into SQL that names the same.
var regTemplates = map[string]string{
	"SELECT FROM %s":          "regclass regconfig regdictionary to_regclass nextval currval setval pg_sequence_last_value",
	"SELECT NULL::%s":         "regtype to_regtype",
	"DROP FUNCTION %s":        "regproc regprocedure to_regproc to_regprocedure",
	"SELECT 1 OPERATOR(%s) 1": "regoper to_regoper",
	"DROP OPERATOR %s":        "regoperator to_regoperator",
	"SELECT NULL COLLATE %s":  "regcollation to_regcollation",
}

// regString checks arg, if a string constant, as the name reg (a reg*
// type or a function that takes a name) reads it.
func (u *unit) regString(reg string, arg any) {
	c := get(arg, "A_Const")
	sv, isStr := c["sval"].(map[string]any)
	for tmpl, regs := range regTemplates {
		if at := loc(c); isStr && slices.Contains(strings.Fields(regs), reg) {
			u.data[u.at(at)] = true
			if len(check(fmt.Sprintf(tmpl, str(sv["sval"])), u.own, u.format)) > 0 {
				_, _, end, _ := unquote(u.raw, at)
				u.report(at, RuleString, u.raw[at:max(at, end)], "the string is read as "+reg+", which looks "+str(sv["sval"])+" up through search_path; qualify it with pg_catalog or an own schema")
			}
		}
	}
}

// ddlName checks a name that DDL creates (named false) or names; the tree
// does not locate it, so it is found from the statement's start.
func (u *unit) ddlName(ns []string, r Rule, named bool) {
	if len(ns) == 0 || u.qualified(ns) && (named || len(ns) >= 2 && ns[len(ns)-2] != "pg_catalog") {
		return
	}
	at, text := u.stmt, strings.Join(ns, ".")
	for _, m := range nameRE(ns).FindAllStringSubmatchIndex(u.raw[u.stmt:], -1) {
		if at, text = u.stmt+m[2], u.raw[u.stmt+m[2]:u.stmt+m[3]]; !u.data[u.at(at)] {
			break
		}
	}
	u.data[u.at(at)] = true
	reason := unqualified(string(r), ns)
	if !named {
		reason = string(r) + " " + text + " is created without an own schema; qualify it with one of Options.OwnSchemas"
	}
	u.report(at, r, text, reason)
}

// dollarCode checks a dollar-quoted string constant as code (a statement,
// an expression or the rest of one) if it parses as one: it may be run.
func (u *unit) dollarCode(n map[string]any) {
	at := loc(n)
	if _, ok := n["sval"]; !ok || at < 0 || u.data[u.at(at)] || !dollarRE.MatchString(u.text[at:]) {
		return
	}
	for _, prefix := range []string{"", "SELECT ", "SELECT NULL "} {
		if s, ok := u.literal(at); ok {
			s = s.sub(prefix, s.text, s.raw, 0)
			if stmts, _, err := s.parse(); err == nil {
				s.walkStmts(stmts)
				return
			}
		}
	}
}

// body checks the body of CREATE FUNCTION or DO in SQL or PL/pgSQL.
func (u *unit) body(typ string, n map[string]any) {
	lang, opts := "plpgsql", n["args"]
	if typ == "CreateFunctionStmt" {
		u.ddlName(names(n["funcname"]), RuleFunction, false)
		lang, opts = "sql", n["options"]
	}
	at := -1
	l, _ := opts.([]any)
	for _, o := range l {
		d := get(o, "DefElem")
		if str(d["defname"]) == "language" {
			lang = strings.ToLower(str(d["arg"]))
		} else if str(d["defname"]) == "as" && len(names(d["arg"])) <= 1 { // not a C function's file and symbol
			at = int(d["arg_location"].(float64))
		}
	}
	if b, ok := u.literal(at); ok && lang == "sql" {
		b.checkSQL(false)
	} else if ok && lang == "plpgsql" {
		b.plpgsql(u.text[u.stmt:u.end])
	}
}
