package sqlcheck

// This file checks the names that strings hold where PostgreSQL resolves
// them as names: the input of the reg* types (regclass '...', '...'::regproc,
// CAST('...' AS regtype)), the argument of to_regclass() and friends and
// of the sequence functions, whose parameter is a regclass.

// regTypes are the reg* types whose input resolves a name through
// search_path, and what the name is. (regnamespace and regrole name
// schemas and roles, which search_path does not hold.)
var regTypes = map[string]string{
	"regclass": "relation", "regproc": "function", "regprocedure": "function",
	"regoper": "operator", "regoperator": "operator", "regtype": "type",
	"regconfig": "text search configuration", "regdictionary": "text search dictionary",
	"regcollation": "collation",
}

// regArgs are the functions whose first argument is such a name, and the
// reg* type it is read as.
var regArgs = map[string]string{
	"to_regclass":            "regclass",
	"to_regproc":             "regproc",
	"to_regprocedure":        "regprocedure",
	"to_regoper":             "regoper",
	"to_regoperator":         "regoperator",
	"to_regtype":             "regtype",
	"to_regcollation":        "regcollation",
	"nextval":                "regclass",
	"currval":                "regclass",
	"setval":                 "regclass",
	"pg_sequence_last_value": "regclass",
}

// regType returns the reg* type that the type name at i is, or "".
func (c *checker) regType(i int) string {
	t := c.at(i)
	if t.kind != kIdent && t.kind != kQIdent {
		return ""
	}
	j, parts := c.chain(i)
	if c.at(j).punct("[") || c.at(j).is("array") {
		return ""
	}
	name := parts[len(parts)-1].val
	if _, ok := regTypes[name]; ok {
		return name
	}
	return ""
}

// stringName checks the name in the string constant at index k, which
// the reg* type reg reads.
func (c *checker) stringName(k int, reg string) {
	t := c.at(k)
	if t.kind != kString || t.prefix != "" && t.prefix != "e" {
		return
	}
	val, _ := decode(c.src, t)
	sub := newChecker(c.shared, val, nil, langSQL, false, c.depth+1)
	if problem := sub.nameProblem(reg); problem != "" {
		c.report(k, k+1, RuleString, "the string is read as "+reg+", which looks "+problem+" up through search_path; qualify it with pg_catalog or an own schema")
	}
}

// nameProblem returns what, in a checker over a name as reg* input,
// is unqualified ("relation snowflake_state", "type text"), or "".
func (c *checker) nameProblem(reg string) string {
	if len(c.toks) == 0 {
		return ""
	}
	i := 0
	what := regTypes[reg]
	switch reg {
	case "regtype":
		if r := c.parseType(0); !r.ok {
			return "type " + c.text(0, r.nameTo)
		}
		return ""
	case "regoper", "regoperator":
		switch {
		case c.at(0).kind == kOp:
			return "operator " + c.at(0).val
		case c.at(1).punct(".") && c.at(2).kind == kOp:
			if !c.allowed(c.at(0)) {
				return "operator " + c.text(0, 3)
			}
			i = 3
		default:
			return ""
		}
	default:
		j, parts := c.chain(0)
		if c.at(0).kind != kIdent && c.at(0).kind != kQIdent {
			return ""
		}
		if !c.qualifiedOK(parts) {
			return what + " " + c.text(0, j)
		}
		i = j
	}
	if (reg == "regprocedure" || reg == "regoperator") && c.at(i).punct("(") {
		// The argument types, each a type name (NONE for a prefix operator).
		i++
		for i < len(c.toks) && !c.at(i).punct(")") {
			if c.at(i).is("none") {
				i++
			} else if r := c.parseType(i); !r.ok {
				return "type " + c.text(i, r.nameTo)
			} else if r.end > i {
				i = r.end
			} else {
				i++
			}
			if c.at(i).punct(",") {
				i++
			}
		}
	}
	return ""
}
