package sqlcheck

// This file reads PL/pgSQL's own statements (pl_gram.y) around the SQL
// expressions and queries they hold, so that their syntax (:= and =
// assignments, DECLARE, RAISE ... USING option = value, FOR ... IN,
// EXCEPTION WHEN condition) is not taken for operators or calls.

func (c *checker) topBlock() *block {
	if len(c.blocks) == 0 {
		return nil
	}
	return c.blocks[len(c.blocks)-1]
}

func (c *checker) popBlock() {
	if len(c.blocks) > 0 {
		c.blocks = c.blocks[:len(c.blocks)-1]
	}
}

// plUntil checks an expression up to the word w at its own level and
// outside any CASE, and moves past w.
func (c *checker) plUntil(w string) {
	c.exprUntil(func(t token) bool { return t.is(w) && c.top().caseOpen == 0 })
	if c.cur().is(w) {
		c.i++
	}
}

// plStatement checks the PL/pgSQL statement at c.i, and reports whether
// it was one (false: an SQL statement, for sqlStatement).
func (c *checker) plStatement() bool {
	t := c.cur()
	b := c.topBlock()
	switch {
	case t.punct("<<") && c.at(c.i+2).punct(">>"):
		c.i += 3 // <<label>>
	case t.punct("#") && c.at(c.i+1).kind == kIdent:
		// #variable_conflict use_column, #print_strict_params on
		c.i += 2
		if k := c.cur().kind; k == kIdent || k == kNumber {
			c.i++
		}
	case t.is("declare"):
		c.declare()
	case t.is("begin"):
		c.blocks = append(c.blocks, &block{kind: "begin"})
		c.i++
	case t.is("exception") && b != nil && b.kind == "begin":
		b.handler = true
		c.i++
	case t.is("when") && b != nil && b.kind == "begin" && b.handler:
		// WHEN condition [OR condition ...] THEN: names and SQLSTATE 'xxxxx'.
		for !c.eof() && !c.cur().is("then") && !c.cur().punct(";") {
			c.i++
		}
		c.i++
	case t.is("when") && b != nil && b.kind == "case":
		c.i++
		c.plUntil("then")
	case t.is("end"):
		c.i++
		if w := c.cur(); w.is("if") || w.is("loop") || w.is("case") {
			c.i++
		}
		if k := c.cur().kind; k == kIdent || k == kQIdent {
			c.i++ // END label
		}
		if c.cur().punct(";") {
			c.i++
		}
		c.popBlock()
	case t.is("if"):
		c.blocks = append(c.blocks, &block{kind: "if"})
		c.i++
		c.plUntil("then")
	case t.is("elsif") || t.is("elseif"):
		c.i++
		c.plUntil("then")
	case t.is("else"):
		c.i++
	case t.is("loop"):
		c.blocks = append(c.blocks, &block{kind: "loop"})
		c.i++
	case t.is("while"):
		c.i++
		c.plUntil("loop")
		c.blocks = append(c.blocks, &block{kind: "loop"})
	case t.is("for"):
		c.forLoop()
	case t.is("foreach"):
		for !c.eof() && !c.cur().is("array") && !c.cur().punct(";") {
			c.i++
		}
		c.i++
		c.plUntil("loop")
		c.blocks = append(c.blocks, &block{kind: "loop"})
	case t.is("case"):
		if !c.at(c.i + 1).is("when") {
			c.report(c.i, c.i+1, RuleSyntax, "a simple CASE x WHEN v compares with the = operator looked up through search_path; write CASE WHEN x OPERATOR(pg_catalog.=) v")
		}
		c.blocks = append(c.blocks, &block{kind: "case"})
		c.i++
		c.exprUntil(func(t token) bool { return t.is("when") && c.top().caseOpen == 0 })
	case t.is("raise"):
		c.raise()
	case t.is("get") || t.is("fetch") || t.is("move") || t.is("close") || t.is("null") && c.at(c.i+1).punct(";"):
		// GET DIAGNOSTICS x = ROW_COUNT; FETCH c INTO x: no expressions
		// (FETCH's count is a constant).
		c.skipStatement()
	case t.is("exit") || t.is("continue"):
		c.i++
		if k := c.cur(); (k.kind == kIdent || k.kind == kQIdent) && !k.is("when") {
			c.i++
		}
		if c.cur().is("when") {
			c.i++
		}
		c.rest()
	case t.is("open"):
		c.i += 2 // OPEN cursor, then (args) or [NO SCROLL] FOR query
		c.rest()
	case t.is("return") || t.is("perform") || t.is("assert") || t.is("call") || t.is("execute"):
		c.i++
		c.rest()
	default:
		return c.assignment()
	}
	return true
}

// assignment checks "target := expr" or "target = expr" at c.i, and
// reports whether there was one.
func (c *checker) assignment() bool {
	t := c.cur()
	if t.kind != kIdent && t.kind != kQIdent {
		return false
	}
	j, _ := c.chain(c.i)
	for c.at(j).punct("[") && c.match[j] > j {
		j = c.match[j] + 1
	}
	if a := c.at(j); !(a.kind == kAssign || a.punct("=")) {
		return false
	}
	// The target's subscripts are expressions.
	for c.i < j {
		c.token()
	}
	c.frames = c.frames[:1]
	c.i = j + 1
	c.rest()
	return true
}

// declare checks a DECLARE section up to its BEGIN.
func (c *checker) declare() {
	c.i++
	for !c.eof() && !c.cur().is("begin") {
		before := c.i
		switch {
		case c.cur().is("declare"):
			c.i++
			continue
		case c.cur().punct("<<"):
			return
		}
		c.frames = []*frame{{kind: fStmt}}
		c.i++ // the name
		switch {
		case c.cur().is("alias"):
			c.skipStatement()
			continue
		case c.cur().is("cursor") || c.cur().is("scroll") || c.cur().is("no"):
			for !c.eof() && !c.cur().is("cursor") && !c.cur().punct(";") {
				c.i++
			}
			c.i++
			if c.cur().punct("(") {
				c.argList()
			}
			if c.cur().is("for") || c.cur().is("is") {
				c.i++
			}
			c.rest()
			continue
		case c.cur().is("constant"):
			c.i++
		}
		typeAt := c.i
		c.typeName()
		if c.cur().is("collate") {
			c.i++
			c.collation()
		}
		if c.cur().is("not") && c.at(c.i+1).is("null") {
			c.i += 2
		}
		if c.cur().is("default") || c.cur().kind == kAssign || c.cur().punct("=") {
			c.i++
			if reg := c.regType(typeAt); reg != "" && c.cur().kind == kString && c.at(c.i+1).punct(";") {
				c.stringName(c.i, reg) // x regclass := 'name';
			}
		}
		c.rest()
		if c.i == before {
			c.i++
		}
	}
}

// raise checks RAISE [level] ['format' [, expr ...]] [USING option = expr, ...].
func (c *checker) raise() {
	c.i++
	if notTypes[c.cur().val] && c.cur().kind == kIdent && !c.cur().is("raise") {
		c.i++ // the level
	}
	switch t := c.cur(); {
	case t.kind == kString:
		c.i++
	case t.is("sqlstate"):
		c.i += 2
	case (t.kind == kIdent || t.kind == kQIdent) && !t.is("using"):
		c.i++ // a condition name
	}
	for !c.eof() && !c.cur().punct(";") {
		switch {
		case c.cur().punct(","):
			c.i++
			c.exprUntil(stopAt(",", "using"))
		case c.cur().is("using"):
			c.i++
			for !c.eof() && !c.cur().punct(";") {
				c.i++ // the option's name
				if c.cur().punct("=") || c.cur().kind == kAssign {
					c.i++
				}
				c.exprUntil(stopAt(","))
				if !c.cur().punct(",") {
					break
				}
				c.i++
			}
		default:
			c.exprUntil(stopAt(",", "using"))
			if !c.cur().punct(",") && !c.cur().is("using") && !c.cur().punct(";") && !c.eof() {
				c.i++
			}
		}
	}
	c.i++
}

// forLoop checks FOR target IN [REVERSE] {a .. b [BY s] | query | EXECUTE
// ... | cursor [(args)]} LOOP.
func (c *checker) forLoop() {
	c.i++
	for !c.eof() && !c.cur().is("in") && !c.cur().punct(";") {
		c.i++
	}
	c.i++
	if c.cur().is("reverse") {
		c.i++
	}
	if t := c.cur(); (t.kind == kIdent && keywords[t.val] == kwNone || t.kind == kQIdent) && c.at(c.i+1).punct("(") {
		c.i++ // a cursor and its arguments
	}
	c.plUntil("loop")
	c.blocks = append(c.blocks, &block{kind: "loop"})
}
