//go:build cgo

package sqlcheck

import (
	"encoding/json"
	"regexp"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// plpgsql checks u, the body of stmt, a CREATE FUNCTION or DO in
// PL/pgSQL. The PL/pgSQL parser gives each expression's text and each
// statement's line; the expressions are found from their line on.
func (u *unit) plpgsql(stmt string) {
	j, err := pg.ParsePlPgSqlToJSON(stmt)
	if err != nil {
		u.report(0, RuleParse, "", "the PL/pgSQL parser rejects the body ("+err.Error()+"), so nothing in it can be checked")
		return
	}
	var fns []any
	if err := json.Unmarshal([]byte(j), &fns); err != nil {
		panic(err)
	}
	u.used = map[int]bool{}
	u.pl(fns, 1)
}

// pl checks the PL/pgSQL nodes in v; line is where the innermost
// statement or declaration around v starts.
func (u *unit) pl(v any, line int) {
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			u.pl(x, line)
		}
	case map[string]any:
		for k, x := range v {
			n, ok := x.(map[string]any)
			if !ok || k[0] < 'A' || k[0] > 'Z' {
				u.pl(x, line)
				continue
			}
			if l := num(n["lineno"]); l > 0 {
				line = l
			}
			u.plNode(k, n, line)
		}
	}
}

func (u *unit) plNode(typ string, n map[string]any, line int) {
	switch typ {
	case "PLpgSQL_expr":
		u.plExpr(n, line, false)
		return
	case "PLpgSQL_var", "PLpgSQL_rec":
		if num(n["lineno"]) > 0 {
			u.declaration(typ, n, line)
		}
	case "PLpgSQL_stmt_case":
		if n["t_expr"] != nil {
			if at := wordIndex(u.raw, "CASE", u.lineStart(line), len(u.raw), false); at >= 0 {
				u.report(at, RuleSyntax, u.raw[at:at+4], "a simple CASE x WHEN v compares with the = operator looked up through search_path; write CASE WHEN x OPERATOR(pg_catalog.=) v")
			}
		}
	case "PLpgSQL_stmt_dynexecute", "PLpgSQL_stmt_dynfors", "PLpgSQL_stmt_return_query", "PLpgSQL_stmt_open":
		k := "query"
		if _, ok := n["dynquery"]; ok || typ == "PLpgSQL_stmt_return_query" || typ == "PLpgSQL_stmt_open" {
			k = "dynquery"
		}
		if e, ok := n[k].(map[string]any); ok {
			u.plExpr(e["PLpgSQL_expr"].(map[string]any), line, true)
			delete(n, k)
		}
	}
	u.pl(n, line)
}

// lineStart is where line (from 1) of u.text starts.
func (u *unit) lineStart(line int) int {
	at := 0
	for ; line > 1 && at >= 0; line-- {
		if i := strings.IndexByte(u.text[at:], '\n'); i >= 0 {
			at += i + 1
		} else {
			return at
		}
	}
	return at
}

// find returns where q stands in u.text from line on, the first time
// not taken yet (blanks in q match anything: PL/pgSQL blanks out INTO).
func (u *unit) find(q string, line int, take bool) int {
	k := len(q) - len(strings.TrimLeft(q, " \t\r\n"))
	if k == len(q) {
		return -1
	}
	anchor := strings.Fields(q[k:])[0]
	for from := u.lineStart(line); from < len(u.text); {
		i := strings.Index(u.text[from:], anchor)
		if i < 0 {
			return -1
		}
		if p := from + i - k; p >= 0 && p+len(q) <= len(u.text) && !u.used[p] && masked(u.text[p:p+len(q)], q) {
			u.used[p] = take
			return p
		}
		from += i + 1
	}
	return -1
}

func masked(s, q string) bool {
	for i := range len(q) {
		if q[i] != ' ' && q[i] != s[i] {
			return false
		}
	}
	return true
}

// plExpr checks a PL/pgSQL expression or statement; with dynamic, also
// the string that EXECUTE runs, when it is a constant or format()'s.
func (u *unit) plExpr(e map[string]any, line int, dynamic bool) {
	q, prefix, mode := str(e["query"]), "SELECT ", num(e["parseMode"])
	if strings.HasPrefix(q, `"__Case__Variable_`) { // a simple CASE's WHEN v is "var IN (v)"
		q = q[strings.Index(q, " IN (")+5 : len(q)-1]
	} else if mode == 0 {
		prefix = ""
	}
	at := u.find(q, line, true)
	if t := strings.TrimSpace(q); at < 0 && strings.HasPrefix(t, "SELECT ") { // PERFORM f() is SELECT f()
		if at = u.find("PERFORM"+t[6:], line, true); at >= 0 {
			q = " SELECT" + t[6:]
		}
	}
	raw := q
	if at < 0 {
		at = u.lineStart(line)
	} else {
		raw = u.raw[at : at+len(q)]
	}
	if mode >= 3 { // x := v: "SELECT x , v"
		q = assignmentAsList(q)
	}
	s := u.sub(prefix, q, raw, at)
	stmts, err := s.parse()
	if dynamic && len(stmts) == 1 {
		s.dynamic(stmts[0].Stmt)
	}
	if err != nil {
		s.checkSQL() // reports it
	}
	s.walkStmts(stmts)
}

var assignRE = regexp.MustCompile(`:=|=`)

// assignmentAsList turns "x := v" (or x = v, x[1] := v, r.f := v) into
// "x , v" at the same offsets.
func assignmentAsList(q string) string {
	m := assignRE.FindStringIndex(q)
	if m == nil {
		return q
	}
	return q[:m[0]] + ", "[:m[1]-m[0]] + q[m[1]:]
}

// dynamic checks the SQL that EXECUTE runs when its expression (a
// SELECT of it) is a string constant or format() of one.
func (u *unit) dynamic(stmt map[string]any) {
	sel, _ := stmt["SelectStmt"].(map[string]any)
	tl, _ := sel["targetList"].([]any)
	if len(tl) != 1 {
		return
	}
	rt, _ := tl[0].(map[string]any)["ResTarget"].(map[string]any)
	v, _ := rt["val"].(map[string]any)
	c, _ := v["A_Const"].(map[string]any)
	format := false
	if f, ok := v["FuncCall"].(map[string]any); ok {
		ns := names(f["funcname"])
		args, _ := f["args"].([]any)
		if ns[len(ns)-1] != "format" || len(args) == 0 {
			return
		}
		c, _ = args[0].(map[string]any)["A_Const"].(map[string]any)
		format = true
	}
	if _, ok := c["sval"]; !ok {
		return
	}
	if lit, ok := u.literal(loc(c)); ok {
		u.data[u.at(loc(c))] = true
		if format {
			lit.text, lit.format = fillPlaceholders(lit.text), true
			lit.blankPlaceholders()
		}
		lit.checkSQL()
	}
}

var recTypeRE = regexp.MustCompile(`^\s+(?i:constant\s+)?((?:"(?:[^"]|"")*"|[\w$]+)(?:\.(?:"(?:[^"]|"")*"|[\w$]+))*)`)

// declaration checks the type a PL/pgSQL variable is declared with, and
// a reg* variable's constant default.
func (u *unit) declaration(typ string, n map[string]any, line int) {
	name := str(n["refname"])
	at := wordIndex(u.text, regexp.QuoteMeta(name), u.lineStart(line), len(u.text), false)
	if u.used[-at-1] { // a variable is in the tree once for each use
		return
	}
	u.used[-at-1] = true
	typName := ""
	if typ == "PLpgSQL_rec" {
		if at < 0 {
			return
		}
		if m := recTypeRE.FindStringSubmatch(u.text[at+len(name):]); m != nil {
			typName = m[1]
		}
	} else {
		dt, _ := n["datatype"].(map[string]any)
		t, _ := dt["PLpgSQL_type"].(map[string]any)
		typName = strings.TrimSpace(str(t["typname"]))
	}
	tat := -1
	if at >= 0 {
		tat = strings.Index(u.text[at:], typName)
	}
	if tat < 0 {
		tat = u.lineStart(line)
	} else {
		tat += at
	}
	u.declType(typName, tat)
	d, _ := n["default_val"].(map[string]any)
	e, _ := d["PLpgSQL_expr"].(map[string]any)
	q := strings.TrimSpace(str(e["query"]))
	ns := splitName(typName)
	if val, _, end, ok := unquote(q, 0); ok && end == len(q) && len(ns) > 0 {
		if p := u.find(q, line, false); p >= 0 {
			u.regString(strings.ToLower(ns[len(ns)-1]), map[string]any{"sval": map[string]any{"sval": val}, "location": float64(p)})
		}
	}
}

// declType checks a declared type written at u.text[at:].
func (u *unit) declType(typName string, at int) {
	upper := strings.ToUpper(typName)
	if strings.HasSuffix(upper, "%TYPE") || strings.HasSuffix(upper, "%ROWTYPE") {
		ns := splitName(typName[:strings.LastIndexByte(typName, '%')])
		if strings.HasSuffix(upper, "%TYPE") {
			ns = ns[:len(ns)-1] // x%TYPE of a variable x needs nothing, tbl.col%TYPE a schema
		}
		if len(ns) > 0 && !u.qualified(ns) {
			u.report(at, RuleType, typName, unqualified("type", ns, "an own schema"))
		}
		return
	}
	u.sub("SELECT NULL::", typName, u.raw[at:min(len(u.raw), at+len(typName))], at).checkSQL()
}

// splitName splits a qualified name into its parts, quotes removed.
func splitName(s string) []string {
	var parts []string
	for _, m := range regexp.MustCompile(`"((?:[^"]|"")*)"|[^."]+`).FindAllStringSubmatch(s, -1) {
		if m[1] != "" {
			parts = append(parts, strings.ReplaceAll(m[1], `""`, `"`))
		} else {
			parts = append(parts, strings.ToLower(strings.TrimSpace(m[0])))
		}
	}
	return parts
}

// blankPlaceholders blanks out the placeholders that stand for SQL other
// than a value or a name (format('... WHERE a%s', ' OR b')), one at a
// time, where the parser stops at one.
func (u *unit) blankPlaceholders() {
	for range 16 {
		_, err := u.parse()
		at := u.errorAt(err)
		if err == nil || at >= len(u.text) || u.raw[at] != '%' {
			return
		}
		n := len(u.text[at:]) - len(strings.TrimLeft(u.text[at:], "_"))
		u.text = u.text[:at] + strings.Repeat(" ", n) + u.text[at+n:]
	}
}
