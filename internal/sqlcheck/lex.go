package sqlcheck

import "strings"

// kind is what a token is.
type kind uint8

const (
	kIdent  kind = iota + 1 // unquoted identifier or keyword; val is lower case
	kQIdent                 // "quoted identifier" (or U&"..."); val is unescaped
	kString                 // '...', E'...', B'...', X'...', N'...', U&'...'
	kDollar                 // $tag$...$tag$
	kNumber                 // 42, 4.2, .5e-3
	kParam                  // $1
	kOp                     // a run of operator characters, as PostgreSQL's lexer cuts it
	kPunct                  // one of , ; ( ) [ ] . :
	kCast                   // ::
	kAssign                 // :=
	kArrow                  // => (named-argument notation)
	kDotDot                 // .. (PL/pgSQL integer FOR loops)
	kFormat                 // %s, %I, %L, %1$s... in a format() string (format mode only)
	kBad                    // an unterminated string, quoted identifier or comment, or a stray byte
)

// A token is one lexical element of the text being checked. Offsets are
// into that text.
type token struct {
	kind     kind
	pos, end int    // the token's bytes: src[pos:end]
	val      string // see kind
	// For kString and kDollar: where the contents are, and for kString
	// the prefix in lower case ("" for a plain '...', "e", "b", "x", "n",
	// "u&"). For kDollar, cpos..cend is the body between the tags.
	cpos, cend int
	prefix     string
}

// is reports whether t is the unquoted word w (given in lower case).
func (t token) is(w string) bool { return t.kind == kIdent && t.val == w }

// punct reports whether t is the punctuation or operator s.
func (t token) punct(s string) bool { return (t.kind == kPunct || t.kind == kOp) && t.val == s }

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isIdentCont(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '$' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isOpChar reports whether c can be part of an operator (scan.l's op_chars).
func isOpChar(c byte) bool { return strings.IndexByte("~!@#^&|`?+-*/%<>=", c) >= 0 }

// lex cuts src into tokens the way PostgreSQL's lexer (src/backend/parser/scan.l)
// does, as far as the checker needs: comments and white space are dropped.
// In format mode, format() conversions such as %s and %1$I become kFormat
// tokens and %% an operator %, which is what they turn into once formatted.
func lex(src []byte, format bool) []token {
	var toks []token
	n := len(src)
	i := 0
	for i < n {
		c := src[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '-' && i+1 < n && src[i+1] == '-':
			for i < n && src[i] != '\n' && src[i] != '\r' {
				i++
			}
			continue
		case c == '/' && i+1 < n && src[i+1] == '*':
			end, ok := skipBlockComment(src, i)
			if !ok {
				toks = append(toks, token{kind: kBad, pos: start, end: n})
				return toks
			}
			i = end
			continue
		case format && c == '%':
			if end, ok := formatSpec(src, i); ok {
				toks = append(toks, token{kind: kFormat, pos: i, end: end, val: string(src[i:end])})
				i = end
				continue
			}
			if i+1 < n && src[i+1] == '%' {
				toks = append(toks, token{kind: kOp, pos: i, end: i + 2, val: "%"})
				i += 2
				continue
			}
			toks = append(toks, lexOp(src, i, format))
			i = toks[len(toks)-1].end
			continue
		case c == '\'':
			toks = append(toks, lexString(src, i, i, ""))
			i = toks[len(toks)-1].end
			continue
		case c == '"':
			toks = append(toks, lexQIdent(src, i, i))
			i = toks[len(toks)-1].end
			continue
		case (c == 'e' || c == 'E' || c == 'b' || c == 'B' || c == 'x' || c == 'X' || c == 'n' || c == 'N') && i+1 < n && src[i+1] == '\'':
			toks = append(toks, lexString(src, i, i+1, strings.ToLower(string(c))))
			i = toks[len(toks)-1].end
			continue
		case (c == 'u' || c == 'U') && i+2 < n && src[i+1] == '&' && (src[i+2] == '\'' || src[i+2] == '"'):
			if src[i+2] == '\'' {
				toks = append(toks, lexString(src, i, i+2, "u&"))
			} else {
				toks = append(toks, lexQIdent(src, i, i+2))
			}
			i = toks[len(toks)-1].end
			continue
		case isIdentStart(c):
			for i < n && isIdentCont(src[i]) {
				i++
			}
			toks = append(toks, token{kind: kIdent, pos: start, end: i, val: lowerASCII(string(src[start:i]))})
			continue
		case c == '$':
			if i+1 < n && isDigit(src[i+1]) {
				i++
				for i < n && isDigit(src[i]) {
					i++
				}
				toks = append(toks, token{kind: kParam, pos: start, end: i, val: string(src[start:i])})
				continue
			}
			toks = append(toks, lexDollar(src, i))
			i = toks[len(toks)-1].end
			continue
		case isDigit(c) || c == '.' && i+1 < n && isDigit(src[i+1]):
			toks = append(toks, lexNumber(src, i))
			i = toks[len(toks)-1].end
			continue
		case c == ':':
			if i+1 < n && src[i+1] == ':' {
				toks = append(toks, token{kind: kCast, pos: i, end: i + 2, val: "::"})
				i += 2
				continue
			}
			if i+1 < n && src[i+1] == '=' {
				toks = append(toks, token{kind: kAssign, pos: i, end: i + 2, val: ":="})
				i += 2
				continue
			}
			toks = append(toks, token{kind: kPunct, pos: i, end: i + 1, val: ":"})
			i++
			continue
		case c == '.' && i+1 < n && src[i+1] == '.':
			toks = append(toks, token{kind: kDotDot, pos: i, end: i + 2, val: ".."})
			i += 2
			continue
		case strings.IndexByte(",;()[].", c) >= 0:
			toks = append(toks, token{kind: kPunct, pos: i, end: i + 1, val: string(c)})
			i++
			continue
		case isOpChar(c):
			toks = append(toks, lexOp(src, i, format))
			i = toks[len(toks)-1].end
			continue
		default:
			toks = append(toks, token{kind: kBad, pos: i, end: i + 1, val: string(c)})
			i++
			continue
		}
	}
	return toks
}

// lowerASCII folds A-Z to a-z, as PostgreSQL folds unquoted identifiers
// in a multibyte encoding.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// skipBlockComment returns the end of the (nested) /* */ comment at i.
func skipBlockComment(src []byte, i int) (int, bool) {
	depth := 0
	for i < len(src) {
		switch {
		case src[i] == '/' && i+1 < len(src) && src[i+1] == '*':
			depth++
			i += 2
		case src[i] == '*' && i+1 < len(src) && src[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return i, true
			}
		default:
			i++
		}
	}
	return len(src), false
}

// lexString lexes a string constant whose opening quote is at q (start is
// where its prefix begins). In an E'...' string a backslash escapes the
// next byte; in every kind a doubled quote is a quote.
func lexString(src []byte, start, q int, prefix string) token {
	t := token{kind: kString, pos: start, cpos: q + 1, prefix: prefix}
	backslash := prefix == "e"
	i := q + 1
	for i < len(src) {
		switch {
		case backslash && src[i] == '\\':
			i += 2
			continue
		case src[i] == '\'':
			if i+1 < len(src) && src[i+1] == '\'' {
				i += 2
				continue
			}
			t.cend, t.end = i, i+1
			return t
		}
		i++
	}
	return token{kind: kBad, pos: start, end: len(src)}
}

// lexQIdent lexes a quoted identifier whose opening quote is at q.
func lexQIdent(src []byte, start, q int) token {
	var b strings.Builder
	for i := q + 1; i < len(src); i++ {
		if src[i] == '"' {
			if i+1 < len(src) && src[i+1] == '"' {
				b.WriteByte('"')
				i++
				continue
			}
			return token{kind: kQIdent, pos: start, end: i + 1, val: b.String()}
		}
		b.WriteByte(src[i])
	}
	return token{kind: kBad, pos: start, end: len(src)}
}

// lexDollar lexes what starts with the $ at i: a dollar-quoted string, or
// a stray $ (kBad) when no tag follows or the string never ends.
func lexDollar(src []byte, i int) token {
	j := i + 1
	if j < len(src) && isIdentStart(src[j]) {
		for j < len(src) && isIdentCont(src[j]) && src[j] != '$' {
			j++
		}
	}
	if j >= len(src) || src[j] != '$' {
		return token{kind: kBad, pos: i, end: i + 1, val: "$"}
	}
	tag := src[i : j+1]
	body := j + 1
	for k := body; k+len(tag) <= len(src); k++ {
		if src[k] == '$' && string(src[k:k+len(tag)]) == string(tag) {
			return token{kind: kDollar, pos: i, end: k + len(tag), val: string(tag), cpos: body, cend: k}
		}
	}
	return token{kind: kBad, pos: i, end: len(src)}
}

// lexNumber lexes a numeric constant at i. Digits followed by ".." stop
// before the dots, as in scan.l, so that 1..10 is 1, .., 10.
func lexNumber(src []byte, i int) token {
	start := i
	n := len(src)
	digits := func() {
		for i < n && (isDigit(src[i]) || src[i] == '_' && i+1 < n && isDigit(src[i+1])) {
			i++
		}
	}
	if src[i] == '0' && i+1 < n && strings.IndexByte("xXoObB", src[i+1]) >= 0 && i+2 < n && isHexDigit(src[i+2]) {
		i += 2
		for i < n && (isHexDigit(src[i]) || src[i] == '_') {
			i++
		}
		return token{kind: kNumber, pos: start, end: i, val: string(src[start:i])}
	}
	digits()
	if i < n && src[i] == '.' && !(i+1 < n && src[i+1] == '.') {
		i++
		digits()
	}
	if i < n && (src[i] == 'e' || src[i] == 'E') {
		j := i + 1
		if j < n && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j < n && isDigit(src[j]) {
			i = j
			digits()
		}
	}
	return token{kind: kNumber, pos: start, end: i, val: string(src[start:i])}
}

func isHexDigit(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// lexOp lexes an operator at i as scan.l does: the longest run of operator
// characters, cut before any -- or /* in it (a comment starts there), and
// then, unless the run holds one of ~ ! @ # ^ & | ` ? %, without trailing +
// and - (so that a=-1 is = then -). In format mode a run also stops before
// a %, which starts a conversion. A lone => is named-argument notation,
// not an operator.
func lexOp(src []byte, i int, format bool) token {
	j := i
	for j < len(src) && isOpChar(src[j]) && !(format && j > i && src[j] == '%') {
		j++
	}
	op := string(src[i:j])
	if k := strings.Index(op, "/*"); k > 0 {
		op = op[:k]
	}
	if k := strings.Index(op, "--"); k > 0 {
		op = op[:k]
	}
	if len(op) > 1 && (op[len(op)-1] == '+' || op[len(op)-1] == '-') && !strings.ContainsAny(op[:len(op)-1], "~!@#^&|`?%") {
		for len(op) > 1 && (op[len(op)-1] == '+' || op[len(op)-1] == '-') {
			op = op[:len(op)-1]
		}
	}
	if op == "=>" {
		return token{kind: kArrow, pos: i, end: i + 2, val: op}
	}
	return token{kind: kOp, pos: i, end: i + len(op), val: op}
}

// formatSpec reports whether a format() conversion (%[n$][-][width]{s,I,L}
// with width a number, * or *n$) starts at i, and where it ends.
func formatSpec(src []byte, i int) (int, bool) {
	j := i + 1
	num := func() bool {
		k := j
		for j < len(src) && isDigit(src[j]) {
			j++
		}
		return j > k
	}
	save := j
	if num() && j < len(src) && src[j] == '$' {
		j++
	} else {
		j = save
	}
	if j < len(src) && src[j] == '-' {
		j++
	}
	if j < len(src) && src[j] == '*' {
		j++
		save = j
		if num() && j < len(src) && src[j] == '$' {
			j++
		} else {
			j = save
		}
	} else {
		num()
	}
	if j < len(src) && (src[j] == 's' || src[j] == 'I' || src[j] == 'L') {
		return j + 1, true
	}
	return 0, false
}

// decode returns the value of a string token whose contents are
// src[t.cpos:t.cend] and, for each byte of that value and one past its
// end, the offset in src it came from. Only plain and E'...' strings are
// decoded; other kinds are returned as they are.
func decode(src []byte, t token) ([]byte, []int) {
	raw := src[t.cpos:t.cend]
	val := make([]byte, 0, len(raw))
	offs := make([]int, 0, len(raw)+1)
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '\'' && i+1 < len(raw) && raw[i+1] == '\'':
			val = append(val, '\'')
			offs = append(offs, t.cpos+i)
			i++
		case t.prefix == "e" && c == '\\' && i+1 < len(raw):
			offs = append(offs, t.cpos+i)
			i++
			switch raw[i] {
			case 'n':
				val = append(val, '\n')
			case 't':
				val = append(val, '\t')
			case 'r':
				val = append(val, '\r')
			case 'b':
				val = append(val, '\b')
			case 'f':
				val = append(val, '\f')
			default:
				// \' \\ and the rest stand for themselves; octal, hex and
				// unicode escapes are kept as the escaped character, which
				// is close enough to lex (they rarely hold code).
				val = append(val, raw[i])
			}
		default:
			val = append(val, c)
			offs = append(offs, t.cpos+i)
		}
	}
	offs = append(offs, t.cend)
	return val, offs
}
