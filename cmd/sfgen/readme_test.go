package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMEExamples runs every command in the README's ```console blocks
// and compares what it prints (stdout, then stderr) with the lines that
// follow it there. A command ending in `; echo "exit $?"` is also checked
// for its exit status.
func TestREADMEExamples(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NO_COLOR", "1")
	examples := consoleExamples(string(b))
	if len(examples) < 8 {
		t.Fatalf("found %d console examples in README.md; the parser or the README is broken", len(examples))
	}
	for _, ex := range examples {
		t.Run(ex.command, func(t *testing.T) {
			line, showExit := strings.CutSuffix(ex.command, `; echo "exit $?"`)
			args, err := shellWords(strings.TrimPrefix(line, "sfgen "))
			if err != nil {
				t.Fatal(err)
			}
			code, out, errOut := sfgen(t, args...)
			got := out + errOut
			if showExit {
				got += fmt.Sprintf("exit %d\n", code)
			} else if code != 0 {
				t.Errorf("exit status %d; stderr %q", code, errOut)
			}
			if got != ex.output {
				t.Errorf("README shows:\n%s\nsfgen prints:\n%s", ex.output, got)
			}
		})
	}
}

type example struct{ command, output string }

func consoleExamples(readme string) []example {
	var out []example
	inBlock := false
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case strings.HasPrefix(line, "```console"):
			inBlock = true
		case strings.HasPrefix(line, "```"):
			inBlock = false
		case !inBlock:
		case strings.HasPrefix(line, "$ "):
			out = append(out, example{command: strings.TrimPrefix(line, "$ ")})
		case len(out) > 0:
			out[len(out)-1].output += line + "\n"
		}
	}
	return out
}

// shellWords splits a command line as a POSIX shell would for the simple
// quoting the README uses: single and double quotes, no expansions.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
