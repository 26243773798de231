package sqlcheck

import (
	"sort"
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
	return itoa(f.Line) + ":" + itoa(f.Col) + ": " + string(f.Rule) + ": " + f.Text + ": " + f.Reason
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
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

// maxDepth bounds how deeply string bodies are checked inside each other.
const maxDepth = 32

// Check returns every place in sql where a name could resolve through the
// caller's search_path, in the order they appear. See the package
// documentation for what is checked and what is allowed.
func Check(sql []byte, opts Options) []Finding {
	sh := &shared{own: map[string]bool{"pg_catalog": true}}
	for _, s := range opts.OwnSchemas {
		sh.own[normalizeSchema(s)] = true
	}
	c := newChecker(sh, sql, nil, langSQL, false, 0)
	c.run()

	sort.SliceStable(sh.found, func(i, j int) bool { return sh.found[i].Offset < sh.found[j].Offset })
	var out []Finding
	line, col, at := 1, 1, 0
	for _, f := range sh.found {
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

// normalizeSchema turns a schema name as SQL spells it into the name
// itself.
func normalizeSchema(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return lowerASCII(s)
}

type lang int

const (
	langSQL lang = iota
	langPLpgSQL
)

// shared is what the checkers of nested bodies share with the top one.
type shared struct {
	own   map[string]bool // allowed schemas, pg_catalog included
	found []Finding       // Offset set, Line and Col not yet
}

type frameKind int

const (
	fStmt    frameKind = iota // a statement's own level
	fParen                    // ( ... ) that is not a call
	fBracket                  // [ ... ]
	fCall                     // the argument list of a function call or keyword construct
	fCast                     // CAST( ... )
)

// A frame is one level of parentheses and what is going on at that level.
type frame struct {
	kind      frameKind
	name      string // fCall: the function's (last) name
	caseOpen  int    // CASE expressions begun and not yet ended at this level
	from      bool   // in a FROM list
	expectRel bool   // the next name is a FROM item
	join      bool   // a JOIN awaits its ON or USING
	update    bool   // an UPDATE awaits its SET
}

// A block is an open PL/pgSQL construct.
type block struct {
	kind    string // "begin", "if", "loop", "case"
	handler bool   // "begin": in its EXCEPTION section
}

// A checker checks one text: the whole input, or a body inside it.
type checker struct {
	*shared
	src    []byte
	toks   []token
	match  []int // for each ( ) [ ], the index of its partner, or -1
	absOf  func(int) int
	lang   lang
	format bool // a format() string: %s and friends are placeholders
	depth  int

	i       int
	frames  []*frame
	blocks  []*block
	ctes    map[string]bool
	opClose map[int]bool // indexes of ) that close OPERATOR(...)
	ddl     bool         // in a CREATE or ALTER statement: WITH ( ... ) holds options
}

func newChecker(sh *shared, src []byte, absOf func(int) int, l lang, format bool, depth int) *checker {
	if absOf == nil {
		absOf = func(i int) int { return i }
	}
	c := &checker{shared: sh, src: src, toks: lex(src, format), absOf: absOf, lang: l, format: format, depth: depth,
		ctes: map[string]bool{}, opClose: map[int]bool{}}
	c.match = make([]int, len(c.toks))
	var stack []int
	for i, t := range c.toks {
		c.match[i] = -1
		switch {
		case t.punct("(") || t.punct("["):
			stack = append(stack, i)
		case t.punct(")") || t.punct("]"):
			if len(stack) > 0 {
				o := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				c.match[o], c.match[i] = i, o
			}
		}
	}
	// Names that WITH defines: name AS (, name AS [NOT] MATERIALIZED (,
	// and name (columns) AS (.
	for i, t := range c.toks {
		if t.kind != kIdent && t.kind != kQIdent {
			continue
		}
		j := i + 1
		if c.at(j).punct("(") && c.match[j] > 0 {
			j = c.match[j] + 1
		}
		if !c.at(j).is("as") {
			continue
		}
		k := j + 1
		if c.at(k).is("not") {
			k++
		}
		if c.at(k).is("materialized") {
			k++
		}
		if c.at(k).punct("(") {
			c.ctes[t.val] = true
		}
	}
	return c
}

// at returns token i, or a zero token past either end.
func (c *checker) at(i int) token {
	if i < 0 || i >= len(c.toks) {
		return token{}
	}
	return c.toks[i]
}

func (c *checker) cur() token { return c.at(c.i) }

func (c *checker) eof() bool { return c.i >= len(c.toks) }

func (c *checker) top() *frame { return c.frames[len(c.frames)-1] }

func (c *checker) push(k frameKind, name string) {
	c.frames = append(c.frames, &frame{kind: k, name: name})
}

func (c *checker) pop() {
	if len(c.frames) > 1 {
		c.frames = c.frames[:len(c.frames)-1]
	}
}

// text returns the source of tokens a..b-1, white space folded.
func (c *checker) text(a, b int) string {
	if a >= len(c.toks) {
		return ""
	}
	if b > len(c.toks) {
		b = len(c.toks)
	}
	if b <= a {
		b = a + 1
	}
	return strings.Join(strings.Fields(string(c.src[c.toks[a].pos:c.toks[b-1].end])), " ")
}

// report records a finding for tokens a..b-1.
func (c *checker) report(a, b int, r Rule, reason string) {
	if a >= len(c.toks) {
		return
	}
	c.found = append(c.found, Finding{Offset: c.absOf(c.toks[a].pos), Rule: r, Text: c.text(a, b), Reason: reason})
}

// allowed reports whether the identifier token t names pg_catalog or an
// own schema.
func (c *checker) allowed(t token) bool {
	return (t.kind == kIdent || t.kind == kQIdent) && c.own[t.val]
}

// chain reads a possibly qualified name starting at i: identifiers joined
// by dots. It returns the index after it and the identifiers.
func (c *checker) chain(i int) (int, []token) {
	parts := []token{c.at(i)}
	j := i + 1
	for c.at(j).punct(".") && (c.at(j+1).kind == kIdent || c.at(j+1).kind == kQIdent) {
		parts = append(parts, c.at(j+1))
		j += 2
	}
	return j, parts
}

// qualifiedOK reports whether a name of parts is qualified with an
// allowed schema (the next to last part; a format() placeholder such as
// %I counts, since the author supplies it).
func (c *checker) qualifiedOK(parts []token) bool {
	return len(parts) >= 2 && c.allowed(parts[len(parts)-2])
}

func (c *checker) schemaHint(parts []token, what, fix string) string {
	name := parts[len(parts)-1]
	n := string(c.src[name.pos:name.end])
	if len(parts) >= 2 {
		s := parts[len(parts)-2]
		return what + " " + n + " is qualified with schema " + string(c.src[s.pos:s.end]) + ", which is neither pg_catalog nor in Options.OwnSchemas"
	}
	return what + " " + n + " is looked up through search_path; write " + fix + "." + n
}

// run checks every statement of the text.
func (c *checker) run() {
	for !c.eof() {
		before := c.i
		c.statement()
		if c.i == before {
			c.i++
		}
	}
}

// statement checks one statement from c.i on.
func (c *checker) statement() {
	c.frames = []*frame{{kind: fStmt}}
	c.ddl = false
	if c.lang == langPLpgSQL && c.plStatement() {
		return
	}
	c.sqlStatement()
}

// skipStatement moves past the next ; (or to the end).
func (c *checker) skipStatement() {
	for !c.eof() && !c.cur().punct(";") {
		c.i++
	}
	c.i++
}

// rest checks the remaining tokens of a statement as expressions, and
// moves past its ;.
func (c *checker) rest() {
	for !c.eof() {
		c.exprUntil(nil)
		if c.cur().punct(";") {
			c.i++
			return
		}
		if !c.eof() {
			c.i++ // a stray ) or ]
		}
	}
}

// exprUntil checks tokens as an expression up to (not including) a ; or,
// at the level it started on, a token stop accepts or a ) or ] that would
// close an outer level.
func (c *checker) exprUntil(stop func(token) bool) {
	base := len(c.frames)
	for !c.eof() {
		t := c.cur()
		if t.punct(";") {
			break
		}
		if len(c.frames) == base {
			if stop != nil && stop(t) {
				break
			}
			if t.punct(")") || t.punct("]") {
				break
			}
		}
		before := c.i
		c.token()
		if c.i == before {
			c.i++
		}
	}
	if len(c.frames) > base {
		c.frames = c.frames[:base]
	}
}

func stopAt(words ...string) func(token) bool {
	return func(t token) bool {
		for _, w := range words {
			if t.is(w) || t.punct(w) {
				return true
			}
		}
		return false
	}
}

// sqlStatement checks one SQL statement.
func (c *checker) sqlStatement() {
	t := c.cur()
	switch {
	case t.is("create"):
		c.create()
	case t.is("do"):
		c.doStmt()
	case t.is("comment") && c.at(c.i+1).is("on"):
		c.comment()
	case t.is("grant") || t.is("revoke"):
		c.grant()
	case t.is("drop"):
		c.drop()
	case t.is("alter"):
		c.alter()
	case t.is("update"):
		c.i++
		if c.cur().is("only") {
			c.i++
		}
		c.relation()
		c.top().update = true
		c.rest()
	case t.is("insert") && c.at(c.i+1).is("into"):
		c.i += 2
		c.relation()
		if c.cur().is("as") {
			c.i += 2
		}
		if c.cur().punct("(") && c.match[c.i] > 0 {
			c.i = c.match[c.i] + 1
		}
		c.rest()
	case t.is("delete") && c.at(c.i+1).is("from"):
		c.i += 2
		if c.cur().is("only") {
			c.i++
		}
		c.relation()
		c.top().from = true // for USING
		c.rest()
	case t.is("lock"):
		c.i++
		if c.cur().is("table") {
			c.i++
		}
		for {
			if c.cur().is("only") {
				c.i++
			}
			c.relation()
			if !c.cur().punct(",") {
				break
			}
			c.i++
		}
		c.skipStatement()
	case t.is("set") || t.is("reset") || t.is("show") || t.is("begin") || t.is("start") ||
		t.is("commit") || t.is("rollback") || t.is("end") || t.is("savepoint") || t.is("release") ||
		t.is("abort") || t.is("listen") || t.is("unlisten") || t.is("notify") || t.is("discard") ||
		t.is("copy") || t.is("vacuum") || t.is("analyze") || t.is("analyse") ||
		t.is("checkpoint") || t.is("load") || t.is("deallocate") || t.is("security") || t.is("reassign") ||
		t.is("refresh") || t.is("reindex") || t.is("cluster") || t.is("import") || t.is("truncate"):
		// No expressions in these, or none this package understands.
		c.skipStatement()
	default:
		c.rest()
	}
}

// relation checks a table, sequence or view name at c.i and moves past it
// (and a trailing * of inheritance).
func (c *checker) relation() {
	t := c.cur()
	if t.kind != kIdent && t.kind != kQIdent {
		return
	}
	j, parts := c.chain(c.i)
	if !c.qualifiedOK(parts) && !(len(parts) == 1 && c.ctes[t.val]) {
		c.report(c.i, j, RuleRelation, c.schemaHint(parts, "relation", "pg_catalog (or an own schema)"))
	}
	c.i = j
	if c.cur().punct("*") {
		c.i++
	}
}

// ddlName checks the name of an object a DDL statement creates or
// names, at c.i, and moves past it.
func (c *checker) ddlName(r Rule) {
	t := c.cur()
	if t.kind != kIdent && t.kind != kQIdent {
		return
	}
	j, parts := c.chain(c.i)
	if !c.qualifiedOK(parts) {
		what := map[Rule]string{RuleFunction: "function", RuleRelation: "relation", RuleType: "type"}[r]
		reason := c.schemaHint(parts, what, "an own schema")
		if len(parts) == 1 {
			reason = what + " " + string(c.src[t.pos:t.end]) + " is not schema-qualified: DDL creates it in, or looks it up through, the caller's search_path; qualify it with an own schema"
		}
		c.report(c.i, j, r, reason)
	}
	c.i = j
}

// ifExists moves past IF [NOT] EXISTS.
func (c *checker) ifExists() {
	if c.cur().is("if") {
		c.i++
		if c.cur().is("not") {
			c.i++
		}
		if c.cur().is("exists") {
			c.i++
		}
	}
}

func (c *checker) create() {
	c.ddl = true
	c.i++
	if c.cur().is("or") && c.at(c.i+1).is("replace") {
		c.i += 2
	}
	for c.cur().is("temp") || c.cur().is("temporary") || c.cur().is("unlogged") || c.cur().is("global") ||
		c.cur().is("local") || c.cur().is("trusted") || c.cur().is("procedural") || c.cur().is("recursive") ||
		c.cur().is("unique") || c.cur().is("constraint") {
		c.i++
	}
	switch t := c.cur(); {
	case t.is("function") || t.is("procedure"):
		c.i++
		c.createFunction()
	case t.is("aggregate"):
		c.i++
		c.ddlName(RuleFunction)
		if c.cur().punct("(") {
			c.argList()
		}
		if c.cur().punct("(") {
			c.defList()
		}
		c.skipStatement()
	case t.is("sequence"):
		c.i++
		c.ifExists()
		c.ddlName(RuleRelation)
		for !c.eof() && !c.cur().punct(";") {
			switch {
			case c.cur().is("as"):
				c.i++
				c.typeName()
			case c.cur().is("owned") && c.at(c.i+1).is("by"):
				c.i += 2
				c.i, _ = c.chain(c.i)
			default:
				c.exprUntil(stopAt("as", "owned"))
			}
		}
		c.i++
	case t.is("table"):
		c.i++
		c.ifExists()
		c.ddlName(RuleRelation)
		if c.cur().punct("(") {
			c.tableElements()
		}
		c.rest()
	case t.is("view") || t.is("materialized") && c.at(c.i+1).is("view"):
		for !c.cur().is("view") {
			c.i++
		}
		c.i++
		c.ifExists()
		c.ddlName(RuleRelation)
		if c.cur().punct("(") && c.match[c.i] > 0 {
			c.i = c.match[c.i] + 1
		}
		c.rest()
	case t.is("type") || t.is("domain"):
		c.i++
		c.ddlName(RuleType)
		switch {
		case c.cur().is("as") && c.at(c.i+1).punct("("):
			c.i++
			c.argList()
		case c.cur().is("as") && (c.at(c.i+1).is("enum") || c.at(c.i+1).is("range")):
			c.i += 2
			if c.cur().punct("(") {
				c.defList()
			}
		case c.cur().is("as"):
			c.i++
			c.typeName()
		case c.cur().punct("("):
			c.defList()
		}
		c.rest()
	case t.is("index"):
		c.i++
		for !c.eof() && !c.cur().punct(";") && !c.cur().is("on") {
			c.i++
		}
		c.i++
		if c.cur().is("only") {
			c.i++
		}
		c.relation()
		if c.cur().is("using") {
			c.i += 2
		}
		c.rest()
	case t.is("trigger"):
		c.createTrigger()
	case t.is("policy") || t.is("rule"):
		c.rest()
	default:
		// Roles, databases, schemas, extensions, casts, operators and the
		// rest: not understood, so not checked.
		c.skipStatement()
	}
}

// tableElements checks CREATE TABLE's ( column type ..., constraint ... ).
func (c *checker) tableElements() {
	c.push(fParen, "")
	base := len(c.frames)
	c.i++
	for !c.eof() && !c.cur().punct(")") && !c.cur().punct(";") {
		t := c.cur()
		if (t.kind == kIdent || t.kind == kQIdent) && !(t.kind == kIdent && (t.is("constraint") || t.is("primary") ||
			t.is("unique") || t.is("check") || t.is("foreign") || t.is("exclude") || t.is("like"))) {
			c.i++
			c.typeName()
		}
		c.exprUntil(stopAt(","))
		if c.cur().punct(",") {
			c.i++
		}
	}
	c.frames = c.frames[:base-1]
	if c.cur().punct(")") {
		c.i++
	}
}

func (c *checker) createTrigger() {
	for !c.eof() && !c.cur().punct(";") {
		switch t := c.cur(); {
		case t.is("on") || t.is("from"):
			c.i++
			c.relation()
		case t.is("execute") && (c.at(c.i+1).is("function") || c.at(c.i+1).is("procedure")):
			c.i += 2
			j, parts := c.chain(c.i)
			if !c.qualifiedOK(parts) {
				c.report(c.i, j, RuleFunction, c.schemaHint(parts, "function", "pg_catalog (or an own schema)"))
			}
			c.i = j
			if c.cur().punct("(") && c.match[c.i] > 0 {
				c.i = c.match[c.i] + 1
			}
		case t.is("when") && c.at(c.i+1).punct("("):
			c.i++
			c.push(fParen, "")
			c.i++
			c.exprUntil(nil)
			c.pop()
			c.i++
		default:
			c.i++
		}
	}
	c.i++
}

// createFunction checks CREATE FUNCTION or PROCEDURE from its name on,
// and its body.
func (c *checker) createFunction() {
	c.ddlName(RuleFunction)
	if c.cur().punct("(") {
		c.argList()
	}
	language := "sql"
	var bodies []int
	for !c.eof() && !c.cur().punct(";") {
		switch t := c.cur(); {
		case t.is("returns"):
			c.i++
			switch {
			case c.cur().is("null"):
				c.i++
			case c.cur().is("table") && c.at(c.i+1).punct("("):
				c.i++
				c.argList()
			default:
				c.typeName()
			}
		case t.is("language"):
			c.i++
			l := c.cur()
			if l.kind == kString {
				language = strings.ToLower(string(c.src[l.cpos:l.cend]))
			} else {
				language = l.val
			}
			c.i++
		case t.is("as"):
			c.i++
			for c.cur().kind == kString || c.cur().kind == kDollar {
				bodies = append(bodies, c.i)
				c.i++
				if !c.cur().punct(",") {
					break
				}
				c.i++
			}
		case t.is("begin") && c.at(c.i+1).is("atomic"):
			c.i += 2
			c.atomic()
		case t.is("return"):
			c.i++
			c.exprUntil(nil)
		case t.is("support"):
			c.i++
			j, parts := c.chain(c.i)
			if !c.qualifiedOK(parts) {
				c.report(c.i, j, RuleFunction, c.schemaHint(parts, "function", "pg_catalog"))
			}
			c.i = j
		case t.is("transform"):
			c.i++
			for c.cur().is("for") && c.at(c.i+1).is("type") {
				c.i += 2
				c.typeName()
				if c.cur().punct(",") {
					c.i++
				}
			}
		default:
			c.i++
		}
	}
	c.i++
	l := langSQL
	switch language {
	case "sql":
	case "plpgsql":
		l = langPLpgSQL
	default:
		return // C, internal, or a language this package cannot read
	}
	if len(bodies) == 1 {
		c.nested(bodies[0], l, c.format)
	}
}

// atomic checks the statements of BEGIN ATOMIC ... END, from after ATOMIC,
// and moves past the END.
func (c *checker) atomic() {
	saved := c.frames
	for !c.eof() && !c.cur().is("end") {
		before := c.i
		c.frames = []*frame{{kind: fStmt}}
		c.sqlStatement()
		if c.i == before {
			c.i++
		}
	}
	c.frames = saved
	c.i++
}

func (c *checker) doStmt() {
	c.i++
	l := langPLpgSQL
	language := func() {
		if c.cur().is("language") {
			c.i++
			if c.cur().val != "plpgsql" && !(c.cur().kind == kString && strings.EqualFold(string(c.src[c.cur().cpos:c.cur().cend]), "plpgsql")) {
				l = -1
			}
			c.i++
		}
	}
	language()
	body := -1
	if k := c.cur().kind; k == kString || k == kDollar {
		body = c.i
		c.i++
	}
	language()
	c.skipStatement()
	if body >= 0 && l == langPLpgSQL {
		c.nested(body, l, c.format)
	}
}

// nested checks the string or dollar-quoted token at index k as code.
func (c *checker) nested(k int, l lang, format bool) {
	if c.depth >= maxDepth {
		return
	}
	t := c.toks[k]
	var body []byte
	var absOf func(int) int
	switch {
	case t.kind == kDollar:
		body = c.src[t.cpos:t.cend]
		base := t.cpos
		parent := c.absOf
		absOf = func(i int) int { return parent(base + i) }
	case t.kind == kString && (t.prefix == "" || t.prefix == "e"):
		var offs []int
		body, offs = decode(c.src, t)
		parent := c.absOf
		absOf = func(i int) int {
			if i >= len(offs) {
				i = len(offs) - 1
			}
			return parent(offs[i])
		}
	default:
		return
	}
	sub := newChecker(c.shared, body, absOf, l, format, c.depth+1)
	sub.run()
}

// comment checks COMMENT ON: the object's name and signature, not the
// comment.
func (c *checker) comment() {
	c.i += 2
	c.objectRef()
	for !c.eof() && !c.cur().punct(";") && !c.cur().is("is") {
		c.i++
	}
	c.skipStatement()
}

// objectRef checks "kind name" as COMMENT ON, DROP and GRANT ... ON write
// it, for the kinds whose names resolve through search_path, and moves
// past it. Other kinds are left for the caller to skip.
func (c *checker) objectRef() {
	t := c.cur()
	switch {
	case t.is("function") || t.is("procedure") || t.is("routine") || t.is("aggregate"):
		c.i++
		c.ifExists()
		for {
			if c.cur().kind != kIdent && c.cur().kind != kQIdent {
				return
			}
			c.ddlName(RuleFunction)
			if c.cur().punct("(") {
				c.argList()
			}
			if !c.cur().punct(",") {
				return
			}
			c.i++
		}
	case t.is("table") || t.is("sequence") || t.is("view") || t.is("index") ||
		t.is("materialized") || t.is("foreign") || t.is("column"):
		for c.cur().is("materialized") || c.cur().is("foreign") || c.cur().is("view") || c.cur().is("table") ||
			c.cur().is("sequence") || c.cur().is("index") || c.cur().is("concurrently") {
			c.i++
		}
		if t.is("column") {
			c.i++
			j, parts := c.chain(c.i)
			if len(parts) < 3 || !c.allowed(parts[len(parts)-3]) {
				c.report(c.i, j, RuleRelation, "the table of column "+c.text(c.i, j)+" is looked up through search_path; qualify it with an own schema")
			}
			c.i = j
			return
		}
		c.ifExists()
		for {
			if c.cur().kind != kIdent && c.cur().kind != kQIdent {
				return
			}
			c.ddlName(RuleRelation)
			if !c.cur().punct(",") {
				return
			}
			c.i++
		}
	case t.is("type") || t.is("domain"):
		c.i++
		c.ifExists()
		for {
			if c.cur().kind != kIdent && c.cur().kind != kQIdent {
				return
			}
			c.ddlName(RuleType)
			if !c.cur().punct(",") {
				return
			}
			c.i++
		}
	case t.is("trigger") || t.is("policy") || t.is("rule") || t.is("constraint"):
		for !c.eof() && !c.cur().punct(";") && !c.cur().is("on") {
			c.i++
		}
		if c.cur().is("on") {
			c.i++
			if c.cur().is("domain") {
				c.i++
				c.ddlName(RuleType)
				return
			}
			c.ddlName(RuleRelation)
		}
	}
}

func (c *checker) grant() {
	for !c.eof() && !c.cur().punct(";") {
		if c.cur().is("on") {
			c.i++
			switch t := c.cur(); {
			case t.is("all") || t.is("schema") || t.is("database") || t.is("language") || t.is("large") ||
				t.is("tablespace") || t.is("parameter") || t.is("foreign"):
			case t.kind == kIdent && keywords[t.val] == kwNone || t.kind == kQIdent:
				for {
					c.ddlName(RuleRelation)
					if !c.cur().punct(",") {
						break
					}
					c.i++
				}
			default:
				c.objectRef()
			}
			continue
		}
		c.i++
	}
	c.i++
}

func (c *checker) drop() {
	c.i++
	c.objectRef()
	c.skipStatement()
}

func (c *checker) alter() {
	c.ddl = true
	c.i++
	switch t := c.cur(); {
	case t.is("function") || t.is("procedure") || t.is("routine") || t.is("aggregate"):
		c.objectRef()
		c.skipStatement() // options only: SET x = y, OWNER TO, RENAME TO
	case t.is("table") || t.is("sequence") || t.is("view") || t.is("index") || t.is("materialized") || t.is("foreign"):
		c.objectRef()
		c.rest()
	case t.is("type") || t.is("domain"):
		c.objectRef()
		c.rest()
	default:
		c.skipStatement()
	}
}

// defList moves past ( name [= value], ... ), checking the values as
// expressions but not the = that gives them.
func (c *checker) defList() {
	end := c.match[c.i]
	c.push(fParen, "")
	c.i++
	for !c.eof() && (end < 0 || c.i < end) && !c.cur().punct(";") {
		if c.cur().kind == kIdent || c.cur().kind == kQIdent {
			c.i, _ = c.chain(c.i)
		}
		if c.cur().punct("=") {
			c.i++
		}
		c.exprUntil(stopAt(","))
		if c.cur().punct(",") {
			c.i++
		} else {
			break
		}
	}
	c.pop()
	if c.cur().punct(")") {
		c.i++
	}
}

// argList checks a parenthesized list of arguments or columns with their
// types: [mode] [name] type [DEFAULT expr | = expr], ... at c.i.
func (c *checker) argList() {
	end := c.match[c.i]
	if end < 0 {
		c.i++
		return
	}
	c.push(fParen, "")
	c.i++
	for c.i < end {
		if t := c.cur(); t.is("in") || t.is("out") || t.is("inout") || t.is("variadic") {
			c.i++
		}
		if c.cur().punct("*") || c.cur().is("order") {
			c.i++
			continue
		}
		if r := c.parseType(c.i); !c.argEnd(r.end, end) {
			c.i++ // a name
		}
		c.typeName()
		if c.cur().is("default") || c.cur().punct("=") {
			c.i++
			c.exprUntil(stopAt(","))
		}
		for c.i < end && !c.cur().punct(",") {
			c.i++
		}
		if c.cur().punct(",") {
			c.i++
		}
	}
	c.pop()
	c.i = end + 1
}

func (c *checker) argEnd(i, end int) bool {
	t := c.at(i)
	return i >= end || t.punct(",") || t.is("default") || t.punct("=") || t.is("order")
}

// A typeRef is a type name parseType read.
type typeRef struct {
	end    int    // the index after it
	ok     bool   // a keyword type, or qualified with an allowed schema
	reason string // why not
	nameTo int    // the index after its name (before modifiers and array bounds)
}

// keywordTypes are the first words of the types that PostgreSQL's grammar
// maps to pg_catalog itself (SimpleTypename's Numeric, Bit, Character,
// ConstDatetime and ConstInterval).
var keywordTypes = map[string]bool{
	"int": true, "integer": true, "smallint": true, "bigint": true, "real": true, "float": true,
	"double": true, "decimal": true, "dec": true, "numeric": true, "boolean": true,
	"bit": true, "character": true, "char": true, "varchar": true, "national": true, "nchar": true,
	"timestamp": true, "time": true, "interval": true,
}

var intervalFields = map[string]bool{"year": true, "month": true, "day": true, "hour": true, "minute": true, "second": true}

// parseType reads a type name at i without reporting anything.
func (c *checker) parseType(i int) typeRef {
	j := i
	if c.at(j).is("setof") {
		j++
	}
	t := c.at(j)
	r := typeRef{ok: true}
	mods := func() {
		if c.at(j).punct("(") && c.match[j] > j {
			j = c.match[j] + 1
		}
	}
	switch {
	case t.kind == kIdent && keywordTypes[t.val] && !c.at(j+1).punct(".") && !(t.val == "double" && !c.at(j+1).is("precision")):
		j++
		switch t.val {
		case "double":
			j++
		case "national":
			j++ // CHARACTER or CHAR
			if c.at(j).is("varying") {
				j++
			}
		case "bit", "character", "char", "nchar":
			if c.at(j).is("varying") {
				j++
			}
		case "interval":
			for intervalFields[c.at(j).val] && c.at(j).kind == kIdent || c.at(j).is("to") {
				j++
			}
		}
		r.nameTo = j
		mods()
		if t.val == "timestamp" || t.val == "time" {
			if (c.at(j).is("with") || c.at(j).is("without")) && c.at(j+1).is("time") && c.at(j+2).is("zone") {
				j += 3
			}
		}
	case t.kind == kIdent || t.kind == kQIdent:
		var parts []token
		j, parts = c.chain(j)
		r.nameTo = j
		pct := c.at(j).punct("%") && (c.at(j+1).is("type") || c.at(j+1).is("rowtype"))
		if pct {
			j += 2
			r.nameTo = j
		}
		switch {
		case pct && len(parts) == 1:
			// a PL/pgSQL variable's type
		case pct:
			if len(parts) < 3 || !c.allowed(parts[len(parts)-3]) {
				r.ok = false
				r.reason = "%TYPE of " + c.text(i, r.nameTo-2) + " looks its table up through search_path; qualify it with an own schema"
			}
		case !c.qualifiedOK(parts):
			r.ok = false
			name := parts[len(parts)-1]
			n := string(c.src[name.pos:name.end])
			if len(parts) >= 2 {
				r.reason = c.schemaHint(parts, "type", "pg_catalog")
			} else {
				r.reason = "type " + n + " is looked up through search_path; write pg_catalog." + n + " (or a keyword type such as integer or boolean)"
			}
		}
		mods()
	default:
		r.end = i
		r.nameTo = i
		return r
	}
	for {
		if c.at(j).punct("[") && c.match[j] > j {
			j = c.match[j] + 1
			continue
		}
		if c.at(j).is("array") {
			j++
			continue
		}
		break
	}
	r.end = j
	return r
}

// typeName checks the type name at c.i and moves past it.
func (c *checker) typeName() {
	start := c.i
	if c.cur().is("setof") {
		start++
	}
	r := c.parseType(c.i)
	if !r.ok {
		c.report(start, r.nameTo, RuleType, r.reason)
	}
	if r.end > c.i {
		c.i = r.end
	}
}

// collation checks the collation name at c.i and moves past it.
func (c *checker) collation() {
	t := c.cur()
	if t.kind != kIdent && t.kind != kQIdent {
		return
	}
	j, parts := c.chain(c.i)
	if !c.qualifiedOK(parts) {
		c.report(c.i, j, RuleCollation, c.schemaHint(parts, "collation", "pg_catalog"))
	}
	c.i = j
}
