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
	each(fns, 1, u.node)
}

// dynamicFields name the expressions whose string EXECUTE runs.
var dynamicFields = map[string]string{"PLpgSQL_stmt_dynexecute": "query", "PLpgSQL_stmt_dynfors": "query",
	"PLpgSQL_stmt_return_query": "dynquery", "PLpgSQL_stmt_open": "dynquery"}

// lineStart is where line (from 1) of u.text starts.
func (u *unit) lineStart(line int) int {
	lines := strings.SplitAfterN(u.text, "\n", max(1, line))
	return len(u.text) - len(lines[len(lines)-1])
}

// find returns where q first stands in u.text from line on, but where it
// was found before (a blank in q matches anything: PL/pgSQL blanks INTO
// out); if nowhere, the line's start and false.
func (u *unit) find(q string, line int) (int, bool) {
	from := u.lineStart(line)
	pattern := strings.ReplaceAll(regexp.QuoteMeta(q), " ", "(?s:.)")
	if strings.HasPrefix(q, "PERFORM") { // a keyword: any case
		pattern = "(?i:PERFORM)" + pattern[len("PERFORM"):]
	}
	re := regexp.MustCompile(pattern)
	for _, m := range re.FindAllStringIndex(u.text[from:], -1) {
		if key := fmt.Sprint("e", from+m[0]); strings.TrimSpace(q) != "" && !u.used[key] {
			u.used[key] = true
			return from + m[0], true
		}
	}
	return from, false
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
	at, found := u.find(q, line)
	// PERFORM f() is SELECT f(), with the white space after PERFORM.
	if rest, ok := strings.CutPrefix(strings.TrimSpace(q), "SELECT"); !found && ok && strings.TrimLeft(rest, " \t\r\n") != rest {
		if at, found = u.find("PERFORM"+rest, line); found {
			q = " SELECT" + rest
		}
	}
	raw := q
	if found {
		raw = u.raw[at : at+len(q)]
	}
	if m := assignRE.FindStringIndex(q); mode >= 3 && m != nil { // x := v is checked as SELECT x , v
		q = q[:m[0]] + ", "[:m[1]-m[0]] + q[m[1]:]
	}
	u.sub(prefix, q, raw, at).checkSQL(dynamic)
}

// dynamic checks the SQL that EXECUTE runs when its expression (here a
// SELECT of it) is a string constant or format() of one.
func (u *unit) dynamic(stmt map[string]any) {
	tl, _ := get(stmt, "SelectStmt")["targetList"].([]any)
	v := get(append(tl, nil)[0], "ResTarget", "val")
	c, f := get(v, "A_Const"), get(v, "FuncCall")
	if ns, args := names(f["funcname"]), f["args"]; f != nil && ns[len(ns)-1] == "format" && args != nil {
		c = get(args.([]any)[0], "A_Const")
	}
	if lit, ok := u.literal(loc(c)); ok && len(tl) == 1 && c["sval"] != nil {
		u.data[u.at(loc(c))] = true
		if f != nil { // format()'s string
			lit.text, lit.format = fillPlaceholders(lit.text), true
			lit.blankPlaceholders()
		}
		lit.checkSQL(false)
	}
}

// blankPlaceholders blanks out the placeholders that stand for SQL other
// than a value or a name (format('... WHERE a%s', ' OR b')), one at a
// time, where the parser stops at one.
func (u *unit) blankPlaceholders() {
	for range 16 {
		_, at, err := u.parse()
		if err == nil || at >= len(u.text) || u.raw[at] != '%' {
			return
		}
		n := skip(u.text, at, "_")
		u.text = u.text[:at] + strings.Repeat(" ", n-at) + u.text[n:]
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
	typName := strings.TrimSpace(str(get(n, "datatype", "PLpgSQL_type")["typname"]))
	if m := recordRE.FindStringSubmatch(u.text[at+len(name):]); typ == "PLpgSQL_rec" && m != nil {
		typName = m[1]
	}
	tat := at + strings.Index(u.text[at:], typName)
	if tat < at {
		tat = u.lineStart(line)
	}
	if i := strings.LastIndexByte(typName, '%'); i >= 0 { // x%TYPE, tbl.col%TYPE, tbl%ROWTYPE
		ns := splitName(typName[:i])
		if strings.EqualFold(typName[i:], "%TYPE") {
			ns = ns[:len(ns)-1] // of a variable it needs nothing; of tbl.col, a schema
		}
		if len(ns) > 0 && !u.qualified(ns) {
			u.report(tat, RuleType, typName, unqualified("type", ns))
		}
	} else {
		u.sub("SELECT NULL::", typName, u.raw[tat:min(len(u.raw), tat+len(typName))], tat).checkSQL(false)
	}
	q := strings.TrimSpace(str(get(n, "default_val", "PLpgSQL_expr")["query"]))
	p := strings.Index(u.text[at:], q)
	if val, _, end, ok := unquote(q, 0); ok && end == len(q) && p >= 0 {
		reg := strings.ToLower(typName[strings.LastIndexByte(typName, '.')+1:])
		u.regString(reg, map[string]any{"A_Const": map[string]any{"sval": map[string]any{"sval": val}, "location": float64(at + p)}})
	}
}

// splitName splits a qualified name into its parts as PostgreSQL folds them.
func splitName(s string) (ns []string) {
	for _, p := range regexp.MustCompile(`"(?:[^"]|"")*"|[^."\s]+`).FindAllString(s, -1) {
		if p[0] == '"' {
			ns = append(ns, strings.ReplaceAll(p[1:len(p)-1], `""`, `"`))
		} else {
			ns = append(ns, strings.ToLower(p))
		}
	}
	return ns
}
