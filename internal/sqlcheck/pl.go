//go:build cgo

package sqlcheck

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// plpgsql checks u, the body of stmt, a CREATE FUNCTION or DO in
// PL/pgSQL. The PL/pgSQL parser gives each expression's text and each
// statement's line; the expressions are found in u from their line on.
func (u *unit) plpgsql(stmt string) {
	var fns []any
	j, err := pg.ParsePlPgSqlToJSON(stmt)
	if err == nil {
		err = json.Unmarshal([]byte(j), &fns)
	}
	if err != nil {
		u.report(0, RuleParse, "", "the PL/pgSQL parser rejects the body ("+err.Error()+"), so nothing in it can be checked")
	}
	u.used = map[string]bool{}
	u.pl("", fns, 1)
}

// dynamicFields name the expressions whose string EXECUTE runs.
var dynamicFields = map[string]string{"PLpgSQL_stmt_dynexecute": "query", "PLpgSQL_stmt_dynfors": "query",
	"PLpgSQL_stmt_return_query": "dynquery", "PLpgSQL_stmt_open": "dynquery"}

// pl checks the PL/pgSQL node v of type typ ("" if not a node); line is
// where the innermost statement or declaration around it starts.
func (u *unit) pl(typ string, v any, line int) {
	n, _ := v.(map[string]any)
	if l, ok := n["lineno"].(float64); ok && typ != "" {
		line = int(l)
	}
	switch {
	case typ == "PLpgSQL_expr":
		u.plExpr(n, line, false)
		return
	case (typ == "PLpgSQL_var" || typ == "PLpgSQL_rec") && n["lineno"] != nil:
		u.declaration(typ, n, line)
	case typ == "PLpgSQL_stmt_case" && n["t_expr"] != nil:
		if at := wordIndex(u.raw, "CASE", u.lineStart(line), len(u.raw), false); at >= 0 {
			u.report(at, RuleSyntax, u.raw[at:at+4], "a simple CASE x WHEN v compares with the = operator looked up through search_path; write CASE WHEN x OPERATOR(pg_catalog.=) v")
		}
	case dynamicFields[typ] != "":
		if e, ok := n[dynamicFields[typ]].(map[string]any); ok {
			u.plExpr(e["PLpgSQL_expr"].(map[string]any), line, true)
			delete(n, dynamicFields[typ])
		}
	}
	if l, ok := v.([]any); ok {
		for _, x := range l {
			u.pl("", x, line)
		}
	}
	for k, x := range n {
		if k[0] < 'A' || k[0] > 'Z' {
			k = ""
		}
		u.pl(k, x, line)
	}
}

// lineStart is where line (from 1) of u.text starts.
func (u *unit) lineStart(line int) int {
	at := 0
	for ; line > 1; line-- {
		i := strings.IndexByte(u.text[at:], '\n')
		if i < 0 {
			break
		}
		at += i + 1
	}
	return at
}

// find returns where q first stands in u.text from line on, but where
// it was found before (blanks in q match anything: PL/pgSQL blanks INTO
// out); -1 if nowhere.
func (u *unit) find(q string, line int) int {
	k := len(q) - len(strings.TrimLeft(q, " \t\r\n"))
	if k == len(q) {
		return -1
	}
	anchor := strings.Fields(q)[0]
	for from := u.lineStart(line); ; {
		i := strings.Index(u.text[from:], anchor)
		if i < 0 {
			return -1
		}
		p := from + i - k
		if key := fmt.Sprint("e", p); p >= 0 && p+len(q) <= len(u.text) && !u.used[key] && masked(u.text[p:p+len(q)], q) {
			u.used[key] = true
			return p
		}
		from += i + 1
	}
}

func masked(s, q string) bool {
	for i := range len(q) {
		if q[i] != ' ' && q[i] != s[i] {
			return false
		}
	}
	return true
}

var assignRE = regexp.MustCompile(`:=|=`)

// plExpr checks a PL/pgSQL expression or statement; with dynamic, also
// the string that EXECUTE runs when it is a constant or format()'s.
func (u *unit) plExpr(e map[string]any, line int, dynamic bool) {
	q, prefix := str(e["query"]), "SELECT "
	mode, _ := e["parseMode"].(float64)
	if strings.HasPrefix(q, `"__Case__Variable_`) { // a simple CASE's WHEN v is "var IN (v)"
		q = q[strings.Index(q, " IN (")+5 : len(q)-1]
	} else if mode == 0 {
		prefix = ""
	}
	at := u.find(q, line)
	if t := strings.TrimSpace(q); at < 0 && strings.HasPrefix(t, "SELECT ") { // PERFORM f() is SELECT f()
		if at = u.find("PERFORM"+t[6:], line); at >= 0 {
			q = " SELECT" + t[6:]
		}
	}
	raw := q
	if at < 0 {
		at = u.lineStart(line)
	} else {
		raw = u.raw[at : at+len(q)]
	}
	if m := assignRE.FindStringIndex(q); mode >= 3 && m != nil { // x := v is checked as SELECT x , v
		q = q[:m[0]] + ", "[:m[1]-m[0]] + q[m[1]:]
	}
	s := u.sub(prefix, q, raw, at)
	if stmts, err := s.parse(); err != nil {
		s.checkSQL() // reports it
	} else {
		if dynamic && len(stmts) == 1 {
			s.dynamic(stmts[0].Stmt)
		}
		s.walkStmts(stmts)
	}
}

// dynamic checks the SQL that EXECUTE runs when its expression (here a
// SELECT of it) is a string constant or format() of one.
func (u *unit) dynamic(stmt map[string]any) {
	sel, _ := stmt["SelectStmt"].(map[string]any)
	tl, _ := sel["targetList"].([]any)
	rt, _ := append(tl, map[string]any{})[0].(map[string]any)["ResTarget"].(map[string]any)
	v, _ := rt["val"].(map[string]any)
	c, _ := v["A_Const"].(map[string]any)
	f, format := v["FuncCall"].(map[string]any)
	if ns, args := names(f["funcname"]), f["args"]; format && len(ns) > 0 && ns[len(ns)-1] == "format" && args != nil {
		c, _ = args.([]any)[0].(map[string]any)["A_Const"].(map[string]any)
	}
	if lit, ok := u.literal(loc(c)); ok && len(tl) == 1 && c["sval"] != nil {
		u.data[u.at(loc(c))] = true
		if format {
			lit.text, lit.format = fillPlaceholders(lit.text), true
			lit.blankPlaceholders()
		}
		lit.checkSQL()
	}
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

var recordRE = regexp.MustCompile(`^\s+(?i:constant\s+)?([\w$."]+)`)

// declaration checks the type a PL/pgSQL variable is declared with, and
// a reg* variable's constant default. A record's type is read from the
// body (the tree has none).
func (u *unit) declaration(typ string, n map[string]any, line int) {
	name := str(n["refname"])
	at := wordIndex(u.text, regexp.QuoteMeta(name), u.lineStart(line), len(u.text), false)
	if at < 0 || u.used[fmt.Sprint("d", at)] { // a variable is in the tree at each use
		return
	}
	u.used[fmt.Sprint("d", at)] = true
	dt, _ := n["datatype"].(map[string]any)
	t, _ := dt["PLpgSQL_type"].(map[string]any)
	typName := strings.TrimSpace(str(t["typname"]))
	if m := recordRE.FindStringSubmatch(u.text[at+len(name):]); typ == "PLpgSQL_rec" && m != nil {
		typName = m[1]
	}
	tat := at + strings.Index(u.text[at:], typName)
	if tat < at {
		tat = u.lineStart(line)
	}
	if i := strings.LastIndexByte(typName, '%'); i >= 0 { // x%TYPE, tbl.col%TYPE, tbl%ROWTYPE
		s := u.sub("SELECT ", typName[:i], typName[:i], tat)
		stmts, _ := s.parse()
		var ns []string
		each(append(stmts, rawStmt{})[0].Stmt, func(typ string, n map[string]any) {
			if typ == "ColumnRef" {
				ns = names(n["fields"])
			}
		})
		if strings.EqualFold(typName[i:], "%TYPE") && len(ns) > 0 {
			ns = ns[:len(ns)-1] // of a variable it needs nothing; of tbl.col, a schema
		}
		if len(ns) > 0 && !u.qualified(ns) {
			u.report(tat, RuleType, typName, unqualified("type", ns))
		}
	} else {
		u.sub("SELECT NULL::", typName, u.raw[tat:min(len(u.raw), tat+len(typName))], tat).checkSQL()
	}
	d, _ := n["default_val"].(map[string]any)
	e, _ := d["PLpgSQL_expr"].(map[string]any)
	q := strings.TrimSpace(str(e["query"]))
	if val, _, end, ok := unquote(q, 0); ok && end == len(q) {
		if p := strings.Index(u.text[at:], q); p >= 0 {
			ns := strings.Split(typName, ".")
			u.regString(strings.ToLower(ns[len(ns)-1]), map[string]any{"A_Const": map[string]any{"sval": map[string]any{"sval": val}, "location": float64(at + p)}})
		}
	}
}
