package sqlcheck

import (
	"regexp"
	"strings"
)

// unquote decodes the string constant that starts at text[at]: '...',
// E'...' or $tag$...$tag$. It returns the value, where each of its bytes
// (and its end) is in text, and where the constant ends; ok is false if
// no constant starts there.
func unquote(text string, at int) (val string, pos []int, end int, ok bool) {
	if at < 0 || at >= len(text) {
		return "", nil, at, false
	}
	if text[at] == '$' {
		tag := dollarTag(text[at:])
		if tag == "" {
			return "", nil, at, false
		}
		start := at + len(tag)
		n := strings.Index(text[start:], tag)
		if n < 0 {
			n = len(text) - start
		}
		for i := start; i <= start+n; i++ {
			pos = append(pos, i)
		}
		return text[start : start+n], pos, start + n + len(tag), true
	}
	escapes := false
	if text[at] == 'E' || text[at] == 'e' {
		escapes, at = true, at+1
	}
	if at >= len(text) || text[at] != '\'' {
		return "", nil, at, false
	}
	var b strings.Builder
	i := at + 1
	for i < len(text) {
		c, p := text[i], i
		switch {
		case c == '\'' && i+1 < len(text) && text[i+1] == '\'':
			i++
		case c == '\'':
			return b.String(), append(pos, i), i + 1, true
		case c == '\\' && escapes && i+1 < len(text):
			i++
			c = map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', 'b': '\b', 'f': '\f'}[text[i]]
			if c == 0 {
				c = text[i]
			}
		}
		b.WriteByte(c)
		pos = append(pos, p)
		i++
	}
	return b.String(), append(pos, i), i, true
}

var dollarRE = regexp.MustCompile(`^\$([A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*)?\$`)

// dollarTag returns the $tag$ that s starts with, or "".
func dollarTag(s string) string {
	return dollarRE.FindString(s)
}

// placeholderRE matches format()'s placeholders: %s, %I, %L with an
// optional position, flag and width (%1$I, %-10L, %*s).
var placeholderRE = regexp.MustCompile(`%%|%(\d+\$)?-?(\d+|\*(\d+\$)?)?[sIL]`)

// fillPlaceholders makes a format() string parseable without moving
// anything: each placeholder becomes a name of underscores as long as
// itself (a value, or a name qualified by the caller), and %% becomes
// "% ", the operator %.
func fillPlaceholders(s string) string {
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		if m == "%%" {
			return "% "
		}
		return strings.Repeat("_", len(m))
	})
}

var identRE = regexp.MustCompile(`^(?:"(?:[^"]|"")*"|[A-Za-z_\x80-\xff][A-Za-z0-9_$\x80-\xff]*)(?:\s*\.\s*(?:"(?:[^"]|"")*"|[A-Za-z_\x80-\xff][A-Za-z0-9_$\x80-\xff]*))*`)

// nameAt returns the (qualified) name written at text[at:], as written.
func nameAt(text string, at int) string {
	if at < 0 || at > len(text) {
		return ""
	}
	return identRE.FindString(text[at:])
}

var wordRE = regexp.MustCompile(`^\s*([A-Za-z_]+)`)

// phrase returns the words at text[at:] up to and including the first
// that is stop (any case), white space folded to one space.
func phrase(text string, at int, stop string) string {
	var words []string
	for len(words) < 4 && at >= 0 && at < len(text) {
		m := wordRE.FindStringSubmatchIndex(text[at:])
		if m == nil {
			break
		}
		w := text[at+m[2] : at+m[3]]
		words, at = append(words, w), at+m[1]
		if strings.EqualFold(w, stop) {
			break
		}
	}
	return strings.Join(words, " ")
}

// nameRE is a regular expression that matches names written as parts
// (each quoted or not), not inside a longer name.
func nameRE(parts []string) *regexp.Regexp {
	var alts []string
	for _, p := range parts {
		alts = append(alts, `(?:"`+regexp.QuoteMeta(strings.ReplaceAll(p, `"`, `""`))+`"|(?i:`+regexp.QuoteMeta(p)+`))`)
	}
	return regexp.MustCompile(`(?:^|[^\w$."])(` + strings.Join(alts, `\s*\.\s*`) + `)(?:[^\w$"]|$)`)
}

// wordIndex returns where the word w (any case) first stands in
// text[from:to], or -1; with last, where it last stands.
func wordIndex(text string, w string, from, to int, last bool) int {
	from, to = max(from, 0), min(to, len(text))
	if from >= to {
		return -1
	}
	ms := regexp.MustCompile(`(?i)\b`+w+`\b`).FindAllStringIndex(text[from:to], -1)
	switch {
	case len(ms) == 0:
		return -1
	case last:
		return from + ms[len(ms)-1][0]
	}
	return from + ms[0][0]
}
