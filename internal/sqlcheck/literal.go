package sqlcheck

import (
	"regexp"
	"slices"
	"strings"
)

var dollarRE = regexp.MustCompile(`^\$([A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*)?\$`)

// unquote decodes the string constant at text[at:], '...', E'...' or
// $tag$...$tag$: its value, where each byte of it (and its end) is in
// text, and where the constant ends; ok is false if none starts there.
func unquote(text string, at int) (val string, pos []int, end int, ok bool) {
	tag := dollarRE.FindString(text[max(0, min(at, len(text))):])
	escapes := at >= 0 && at+1 < len(text) && text[at]|0x20 == 'e' && text[at+1] == '\''
	if at < 0 || at >= len(text) || tag == "" && !escapes && text[at] != '\'' {
		return "", nil, at, false
	}
	var b []byte
	i := at + 1
	if escapes || tag != "" {
		i = at + max(2, len(tag))
	}
	for ; i < len(text); i++ {
		c, p := text[i], i
		switch {
		case tag != "" && strings.HasPrefix(text[i:], tag):
			return string(b), append(pos, i), i + len(tag), true
		case tag != "":
		case c == '\'' && strings.HasPrefix(text[i:], "''"):
			i++
		case c == '\'':
			return string(b), append(pos, i), i + 1, true
		case c == '\\' && escapes && i+1 < len(text):
			i++
			if c = map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', 'b': '\b', 'f': '\f'}[text[i]]; c == 0 {
				c = text[i]
			}
		}
		b, pos = append(b, c), append(pos, p)
	}
	return string(b), append(pos, i), i, true
}

// placeholderRE matches format()'s %%, and its placeholders %s, %I and %L
// with an optional position, flag and width (%1$I, %-10L, %*s).
var placeholderRE = regexp.MustCompile(`%%|%(\d+\$)?-?(\d+|\*(\d+\$)?)?[sIL]`)

// fillPlaceholders makes a format() string parseable without moving
// anything: a placeholder becomes a name of underscores as long as itself,
// %% becomes "% ", the operator %.
func fillPlaceholders(s string) string {
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		if m == "%%" {
			return "% "
		}
		return strings.Repeat("_", len(m))
	})
}

const identPart = `(?:"(?:[^"]|"")*"|[A-Za-z_\x80-\xff][A-Za-z0-9_$\x80-\xff]*)`

var identRE = regexp.MustCompile(`^` + identPart + `(?:\s*\.\s*` + identPart + `)*`)

// nameAt returns the (qualified) name written at text[at:].
func nameAt(text string, at int) string {
	return identRE.FindString(text[max(0, min(at, len(text))):])
}

// skip returns where the bytes in cut that start text[at:] end.
func skip(text string, at int, cut string) int {
	return len(text) - len(strings.TrimLeft(text[at:], cut))
}

var wordsRE = regexp.MustCompile(`^(?:\s*[A-Za-z_]+){1,4}`)

// phrase returns the words at text[at:] up to the first that is stop (any
// case), four at most, white space folded.
func phrase(text string, at int, stop string) string {
	words := strings.Fields(wordsRE.FindString(text[max(0, min(at, len(text))):]))
	if i := slices.IndexFunc(words, func(w string) bool { return strings.EqualFold(w, stop) }); i >= 0 {
		words = words[:i+1]
	}
	return strings.Join(words, " ")
}

// nameRE matches the name ns, each part quoted or not, not inside a
// longer name.
func nameRE(ns []string) *regexp.Regexp {
	var parts []string
	for _, p := range ns {
		parts = append(parts, `(?:"`+regexp.QuoteMeta(strings.ReplaceAll(p, `"`, `""`))+`"|(?i:`+regexp.QuoteMeta(p)+`))`)
	}
	return regexp.MustCompile(`(?:^|[^\w$."])(` + strings.Join(parts, `\s*\.\s*`) + `)(?:[^\w$"]|$)`)
}

// wordIndex returns where the word w (a regular expression, any case)
// first, or with last last, stands in text[from:to]; -1 if nowhere.
func wordIndex(text string, w string, from, to int, last bool) int {
	from, to = max(from, 0), min(to, len(text))
	ms := regexp.MustCompile(`(?i)\b`+w+`\b`).FindAllStringIndex(text[min(from, to):to], -1)
	if len(ms) == 0 {
		return -1
	} else if last {
		return from + ms[len(ms)-1][0]
	}
	return from + ms[0][0]
}
