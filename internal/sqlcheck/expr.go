package sqlcheck

// This file checks expressions, token by token: operators, calls, casts,
// typed literals, the syntax that looks operators up, FROM items, and
// string bodies that are code.

// token checks the token at c.i (and whatever belongs to it) and moves
// past it.
func (c *checker) token() {
	t := c.cur()
	switch t.kind {
	case kPunct:
		switch t.val {
		case "(":
			c.top().expectRel = false // FROM (subquery) alias
			c.push(fParen, "")
		case "[":
			c.push(fBracket, "")
		case ")", "]":
			c.pop()
		case ",":
			if f := c.top(); f.from {
				f.expectRel = true
			}
		}
		c.i++
	case kOp:
		c.operator()
	case kCast:
		c.i++
		c.typeName()
	case kIdent, kQIdent:
		c.name()
	case kDollar:
		c.dollar()
	case kString:
		c.stringTok()
	default:
		c.i++
	}
}

// operandEnd reports whether token k can end an operand, so that an
// operator after it is infix (and a * after it is a multiplication).
func (c *checker) operandEnd(k int) bool {
	t := c.at(k)
	switch t.kind {
	case kNumber, kString, kDollar, kParam, kQIdent, kFormat:
		return true
	case kPunct:
		return t.val == ")" && !c.opClose[k] || t.val == "]"
	case kIdent:
		if exprIntro[t.val] {
			return false
		}
		switch keywords[t.val] {
		case kwReserved:
			return operandKeywords[t.val]
		case kwTypeFunc:
			return t.val == "current_schema"
		case kwColName:
			return !(t.val == "between" || t.val == "out" || t.val == "inout" || t.val == "setof" || t.val == "national")
		}
		return true
	}
	return false
}

// operandKeywords are the reserved keywords that are values.
var operandKeywords = map[string]bool{
	"null": true, "true": true, "false": true, "end": true, "current_date": true, "current_time": true,
	"current_timestamp": true, "localtime": true, "localtimestamp": true, "current_user": true,
	"current_role": true, "session_user": true, "user": true, "current_catalog": true,
}

// exprIntro are words, keywords or PL/pgSQL's, after which an expression
// starts: not operands, and a name( after them is a call.
var exprIntro = map[string]bool{
	"return": true, "perform": true, "raise": true, "exit": true, "continue": true, "assert": true,
	"elsif": true, "elseif": true, "while": true, "foreach": true, "loop": true, "query": true,
	"next": true, "if": true, "execute": true, "by": true, "escape": true,
	"constant": true, "reverse": true, "returns": true, "minvalue": true, "maxvalue": true,
	"start": true, "restart": true, "cache": true, "increment": true, "cost": true, "at": true,
	"call": true, "slice": true, "strict": true,
}

// parenSyntax are words that are not keywords PostgreSQL's grammar treats
// as syntax before "(", but are syntax there: unreserved keywords and
// PL/pgSQL's words.
var parenSyntax = map[string]bool{
	"over": true, "filter": true, "by": true, "zone": true, "key": true, "include": true,
	"options": true, "reset": true, "conflict": true, "materialized": true, "exclude": true,
	"repeatable": true, "range": true, "cursor": true, "return": true, "execute": true,
	"inherits": true, "perform": true, "raise": true, "assert": true, "elsif": true, "elseif": true,
	"while": true, "query": true, "next": true, "exit": true, "continue": true, "if": true,
	"loop": true, "set": true, "call": true, "strict": true, "rows": true, "groups": true,
	"partition": true, "statistics": true, "atomic": true, "nothing": true, "sets": true,
	"cube": true, "rollup": true, "columns": true, "escape": true,
}

// notTypes are words that, before a string, are not a type: PL/pgSQL's
// RAISE levels and SQLSTATE.
var notTypes = map[string]bool{
	"sqlstate": true, "debug": true, "log": true, "info": true, "notice": true, "warning": true,
	"exception": true, "raise": true, "perform": true, "return": true, "execute": true, "assert": true,
}

// keywordTypeNames are the unreserved and type-or-function-name keywords
// that are also names of types in pg_catalog: before a string they make
// a typed literal, looked up like any type name.
var keywordTypeNames = map[string]bool{"name": true, "text": true, "trigger": true, "unknown": true, "xml": true}

func (c *checker) name() {
	i := c.i
	t := c.cur()
	if c.at(i - 1).punct(".") {
		// A later part of a name whose head is not an identifier: (x).f,
		// %I.f. Nothing to check.
		c.i++
		return
	}
	if t.kind == kIdent && !c.at(i+1).punct(".") && c.keyword() {
		return
	}
	j, parts := c.chain(i)
	next := c.at(j)
	f := c.top()
	switch {
	case next.punct("("):
		c.call(i, j, parts)
		return
	case (next.kind == kString || next.kind == kDollar) && c.typedLiteral(parts):
		r := c.parseType(i)
		if !r.ok {
			c.report(i, j, RuleType, r.reason+" (a typed literal looks its type up like a cast)")
		}
		if reg := c.regType(i); reg != "" {
			c.stringName(j, reg)
		}
		c.i = j + 1
		f.expectRel = false
		return
	case f.expectRel:
		if !c.qualifiedOK(parts) && !(len(parts) == 1 && c.ctes[t.val]) {
			c.report(i, j, RuleRelation, c.schemaHint(parts, "relation", "pg_catalog (or an own schema)"))
		}
	}
	f.expectRel = false
	c.i = j
}

// typedLiteral reports whether a name of parts before a string constant
// is the type of a typed literal (type 'value').
func (c *checker) typedLiteral(parts []token) bool {
	if len(parts) > 1 {
		return true
	}
	t := parts[0]
	if t.kind == kQIdent {
		return true
	}
	switch keywords[t.val] {
	case kwNone:
		return !notTypes[t.val]
	case kwUnreserved, kwTypeFunc:
		return keywordTypeNames[t.val]
	}
	return false
}

// keyword handles the unquoted word at c.i when it starts a construct
// this package knows, and reports whether it did (and moved past it).
func (c *checker) keyword() bool {
	i := c.i
	t := c.cur()
	next := c.at(i + 1)
	f := c.top()
	w := t.val
	switch w {
	case "operator":
		if next.punct("(") {
			c.operatorConstruct()
			return true
		}
	case "cast":
		if next.punct("(") {
			c.push(fCast, "")
			c.i += 2
			return true
		}
	case "as":
		if f.kind == fCast {
			c.i++
			c.typeName()
			return true
		}
		f.expectRel = false
		c.i++
		return true
	case "is":
		j := i + 1
		if c.at(j).is("not") {
			j++
		}
		if c.at(j).is("distinct") && c.at(j+1).is("from") {
			c.report(i, j+2, RuleSyntax, c.text(i, j+2)+" looks up the = operator through search_path; compare with OPERATOR(pg_catalog.=) and IS NULL instead")
			c.i = j + 2
			return true
		}
		c.i = j
		return true
	case "not":
		if !c.operandEnd(i - 1) {
			break
		}
		switch {
		case next.is("in") && c.at(i+2).punct("("):
			c.report(i, i+3, RuleSyntax, "NOT IN looks up the <> operator through search_path; write OPERATOR(pg_catalog.<>) ALL (ARRAY[...])")
			c.i += 2
			return true
		case next.is("like") || next.is("ilike"):
			c.report(i, i+2, RuleSyntax, c.text(i, i+2)+" looks up the "+likeOp(next.val, true)+" operator through search_path; write OPERATOR(pg_catalog."+likeOp(next.val, true)+")")
			c.i += 2
			return true
		case next.is("between"):
			c.report(i, i+2, RuleSyntax, "NOT BETWEEN looks up the < and > operators through search_path; write the comparisons with OPERATOR(pg_catalog.<) and OPERATOR(pg_catalog.>)")
			c.i += 2
			return true
		case next.is("similar") && c.at(i+2).is("to"):
			c.report(i, i+3, RuleSyntax, "NOT SIMILAR TO looks up the !~ operator through search_path; write OPERATOR(pg_catalog.!~) pg_catalog.similar_to_escape(...)")
			c.i += 3
			return true
		}
	case "between":
		if p := c.at(i - 1); !p.is("rows") && !p.is("range") && !p.is("groups") && c.operandEnd(i-1) {
			c.report(i, i+1, RuleSyntax, "BETWEEN looks up the >= and <= operators through search_path; write the comparisons with OPERATOR(pg_catalog.>=) and OPERATOR(pg_catalog.<=)")
			c.i++
			return true
		}
	case "in":
		if next.punct("(") && c.operandEnd(i-1) && !(f.kind == fCall && f.name == "position") {
			c.report(i, i+2, RuleSyntax, "IN (...) looks up the = operator through search_path; write OPERATOR(pg_catalog.=) ANY (ARRAY[...])")
			c.i++
			return true
		}
	case "like", "ilike":
		if c.operandEnd(i - 1) {
			c.report(i, i+1, RuleSyntax, t.val+" looks up the "+likeOp(w, false)+" operator through search_path; write OPERATOR(pg_catalog."+likeOp(w, false)+")")
			c.i++
			return true
		}
	case "similar":
		if next.is("to") && c.operandEnd(i-1) {
			c.report(i, i+2, RuleSyntax, "SIMILAR TO looks up the ~ operator through search_path; write OPERATOR(pg_catalog.~) pg_catalog.similar_to_escape(...)")
			c.i += 2
			return true
		}
	case "nullif":
		if next.punct("(") {
			c.report(i, i+1, RuleSyntax, "NULLIF looks up the = operator through search_path; write CASE WHEN a OPERATOR(pg_catalog.=) b THEN NULL ELSE a END")
			c.push(fCall, w)
			c.i += 2
			return true
		}
	case "case":
		f.caseOpen++
		if !next.is("when") {
			c.report(i, i+1, RuleSyntax, "a simple CASE x WHEN v compares with the = operator looked up through search_path; write CASE WHEN x OPERATOR(pg_catalog.=) v")
		}
		c.i++
		return true
	case "end":
		if f.caseOpen > 0 {
			f.caseOpen--
		}
		c.i++
		return true
	case "natural":
		c.report(i, i+1, RuleSyntax, "NATURAL JOIN looks up the = operator through search_path; write JOIN ... ON a OPERATOR(pg_catalog.=) b")
		c.i++
		return true
	case "join":
		f.join, f.from, f.expectRel = true, true, true
		c.i++
		return true
	case "on":
		f.join, f.expectRel = false, false
		c.i++
		return true
	case "using":
		switch {
		case f.join && next.punct("("):
			c.report(i, i+1, RuleSyntax, "JOIN ... USING looks up the = operator through search_path; write JOIN ... ON a OPERATOR(pg_catalog.=) b")
		case f.from && !f.join:
			f.expectRel = true // DELETE FROM t USING u
		}
		f.join = false
		c.i++
		return true
	case "collate":
		c.i++
		c.collation()
		return true
	case "references":
		c.i++
		c.relation()
		if c.cur().punct("(") && c.match[c.i] > 0 {
			c.i = c.match[c.i] + 1
		}
		return true
	case "from":
		if f.kind != fCall {
			f.from, f.expectRel = true, true
		}
		c.i++
		return true
	case "lateral", "only":
		c.i++
		return true
	case "rows":
		if next.is("from") {
			c.i += 2
			f.expectRel = false
			return true
		}
	case "where", "group", "having", "window", "order", "limit", "offset", "fetch", "for", "union",
		"intersect", "except", "returning", "into", "values", "select":
		f.from, f.expectRel, f.join = false, false, false
		if w == "into" && c.at(i-1).is("insert") {
			c.i++
			c.relation()
			return true
		}
		c.i++
		return true
	case "update":
		f.update = true
		c.i++
		return true
	case "set":
		if f.update {
			c.setList()
			return true
		}
	case "with", "reset", "options":
		if c.ddl && next.punct("(") {
			c.i++
			c.defList()
			return true
		}
	}
	return false
}

func likeOp(w string, not bool) string {
	op := "~~"
	if w == "ilike" {
		op = "~~*"
	}
	if not {
		op = "!" + op
	}
	return op
}

// call checks name( at i, whose name ends at j, and enters its parentheses.
func (c *checker) call(i, j int, parts []token) {
	t := parts[0]
	w := t.val
	prev := c.at(i - 1)
	c.i = j + 1
	if len(parts) == 1 && t.kind == kIdent {
		if parenSyntax[w] {
			c.push(fParen, "")
			return
		}
		switch keywords[w] {
		case kwReserved:
			c.push(fParen, "")
			return
		case kwColName:
			if (w == "substring" || w == "overlay") && !c.sqlStandardArgs(j) {
				c.report(i, i+1, RuleFunction, w+"(a, b, ...) with commas calls a function looked up through search_path (only the "+
					map[string]string{"substring": "FROM/FOR", "overlay": "PLACING/FROM/FOR"}[w]+" form is mapped to pg_catalog); write pg_catalog."+w+"(...)")
			}
			if fromArgs[w] {
				c.push(fCall, w)
			} else {
				c.push(fParen, "") // EXISTS (SELECT ... FROM t), VALUES (...)
			}
			return
		case kwTypeFunc:
			if c.operandEnd(i - 1) {
				c.push(fParen, "") // x LIKE (...), a JOIN (...)
				return
			}
		}
	}
	// Not a call: an alias's column list (FROM f() AS t(a, b), FROM f() t(a)),
	// the column list of a CTE (WITH x(a) AS (...)), of a table (INSERT INTO t (a)).
	after := c.at(c.match[j] + 1)
	if c.match[j] < 0 {
		after = token{}
	}
	if len(parts) == 1 && (prev.is("as") || c.operandEnd(i-1) && prev.kind != kString ||
		after.is("as") && (c.at(c.match[j]+2).punct("(") || c.at(c.match[j]+2).is("materialized") || c.at(c.match[j]+2).is("not"))) {
		c.push(fParen, "")
		return
	}
	if !c.qualifiedOK(parts) {
		c.report(i, j, RuleFunction, c.schemaHint(parts, "function", "pg_catalog (or an own schema)"))
	}
	c.push(fCall, parts[len(parts)-1].val)
}

// fromArgs are the keyword constructs whose arguments can hold a FROM
// (or POSITION's IN) that is not a clause.
var fromArgs = map[string]bool{"extract": true, "substring": true, "overlay": true, "trim": true, "position": true, "normalize": true}

// sqlStandardArgs reports whether the parentheses that open at j hold
// FROM, FOR or PLACING at their own level.
func (c *checker) sqlStandardArgs(j int) bool {
	end := c.match[j]
	if end < 0 {
		return false
	}
	for k := j + 1; k < end; k++ {
		t := c.at(k)
		if t.punct("(") || t.punct("[") {
			if c.match[k] > k {
				k = c.match[k]
			}
			continue
		}
		if t.is("from") && !c.at(k-1).is("distinct") || t.is("for") || t.is("placing") || t.is("similar") {
			return true
		}
	}
	return false
}

// operatorConstruct checks OPERATOR( [schema.] op ) at c.i.
func (c *checker) operatorConstruct() {
	i := c.i
	end := c.match[i+1]
	if end < 0 {
		c.i += 2
		return
	}
	var parts []token
	for k := i + 2; k < end; k++ {
		if t := c.at(k); t.kind == kIdent || t.kind == kQIdent {
			parts = append(parts, t)
		}
	}
	op := c.at(end - 1)
	switch {
	case len(parts) == 0:
		c.report(i, end+1, RuleOperator, "OPERATOR("+op.val+") without a schema looks the operator up through search_path; write OPERATOR(pg_catalog."+op.val+")")
	case !c.allowed(parts[len(parts)-1]):
		s := parts[len(parts)-1]
		c.report(i, end+1, RuleOperator, "operator "+op.val+" is qualified with schema "+string(c.src[s.pos:s.end])+", which is neither pg_catalog nor in Options.OwnSchemas")
	}
	c.opClose[end] = true
	c.i = end + 1
}

// operator checks the operator token at c.i.
func (c *checker) operator() {
	i := c.i
	t := c.cur()
	prev := c.at(i - 1)
	next := c.at(i + 1)
	unary := !c.operandEnd(i - 1)
	c.i++
	switch {
	case t.val == "*" && (unary || prev.punct(".")):
		return // SELECT *, t.*, count(*)
	case t.val == "-" && unary && c.constantFollows(i+1):
		// The grammar folds - before a numeric constant into the constant.
		return
	}
	if (next.is("any") || next.is("all") || next.is("some")) && c.at(i+2).punct("(") {
		c.report(i, i+2, RuleSyntax, t.val+" "+next.val+"(...) looks up the "+t.val+" operator through search_path; write OPERATOR(pg_catalog."+t.val+") "+next.val+" (...)")
		c.i++
		return
	}
	c.report(i, i+1, RuleOperator, "operator "+t.val+" is looked up through search_path; write OPERATOR(pg_catalog."+t.val+")")
}

// constantFollows reports whether a numeric constant, possibly in
// parentheses, starts at k and is not then cast or subscripted (which
// binds tighter than a unary minus).
func (c *checker) constantFollows(k int) bool {
	switch {
	case c.at(k).kind == kNumber:
		k++
	case c.at(k).punct("(") && c.at(k+1).kind == kNumber && c.at(k+2).punct(")"):
		k += 3
	default:
		return false
	}
	return !(c.at(k).kind == kCast || c.at(k).punct("[") || c.at(k).punct("."))
}

// dollar handles a dollar-quoted string: code to check. (COMMENT's text
// never gets here: comment skips it.)
func (c *checker) dollar() {
	i := c.i
	c.i++
	c.nested(i, langSQL, c.format || c.formatArg(i))
}

// stringTok handles a '...' string: data, unless it is the statement that
// PL/pgSQL's EXECUTE runs, directly or as the format of format().
func (c *checker) stringTok() {
	i := c.i
	c.i++
	switch prev, next := c.at(i-1), c.at(i+1); {
	case next.kind == kCast:
		if reg := c.regType(i + 2); reg != "" {
			c.stringName(i, reg)
		}
	case prev.punct("(") && c.at(i-2).is("cast") && next.is("as"):
		if reg := c.regType(i + 2); reg != "" {
			c.stringName(i, reg)
		}
	case prev.punct("(") && (next.punct(",") || next.punct(")")) && c.at(i-2).kind == kIdent && regArgs[c.at(i-2).val] != "":
		c.stringName(i, regArgs[c.at(i-2).val])
	}
	if c.at(i-1).is("execute") && (c.at(i+1).punct(";") || c.at(i+1).is("using") || c.at(i+1).is("into") || c.at(i+1).is("loop") || i+1 >= len(c.toks)) {
		c.nested(i, langSQL, c.format)
		return
	}
	if c.formatArg(i) {
		k := i - 2 // format
		for c.at(k - 1).punct(".") {
			k -= 2
		}
		if c.at(k - 1).is("execute") {
			c.nested(i, langSQL, true)
		}
	}
}

// formatArg reports whether token i is the first argument of format().
func (c *checker) formatArg(i int) bool {
	return c.at(i-1).punct("(") && c.at(i-2).is("format") && (c.at(i+1).punct(",") || c.at(i+1).punct(")"))
}

// setList checks UPDATE's SET col = expr, (a, b) = (...), ...: the = that
// assigns is syntax.
func (c *checker) setList() {
	f := c.top()
	f.update = false
	c.i++
	for !c.eof() {
		if c.cur().punct("(") && c.match[c.i] > 0 {
			c.i = c.match[c.i] + 1
		} else if t := c.cur(); t.kind == kIdent || t.kind == kQIdent {
			c.i, _ = c.chain(c.i)
			for c.cur().punct("[") {
				c.push(fBracket, "")
				c.i++
				c.exprUntil(nil)
				c.pop()
				c.i++
			}
		}
		if c.cur().punct("=") {
			c.i++
		}
		c.exprUntil(stopAt(",", "from", "where", "returning"))
		if !c.cur().punct(",") {
			return
		}
		c.i++
	}
}
