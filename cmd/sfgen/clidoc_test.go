package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md from the commands' --help")

// cliDoc renders docs/cli.md: sfgen --help, then every command's --help,
// in the order sfgen --help lists them, each verbatim in a text block.
func cliDoc(t *testing.T) []byte {
	t.Helper()
	var b strings.Builder
	b.WriteString("# The sfgen command line\n\n")
	b.WriteString("<!-- Generated from the commands' --help by TestCLIDoc in cmd/sfgen; do not edit.\n")
	b.WriteString("     After changing a help text: go test ./cmd/sfgen -run TestCLIDoc -update -->\n\n")
	b.WriteString("Every command's `--help`, as this version of sfgen prints it. Data goes to\n")
	b.WriteString("stdout, diagnostics to stderr. Exit status: 0 success, 1 a failed check\n")
	b.WriteString("(or a database that cannot be reached), 2 bad usage (a connection string\n")
	b.WriteString("that cannot be parsed included). Colour only on a terminal, never with\n")
	b.WriteString("`NO_COLOR` set.\n\n")
	b.WriteString("Commands:")
	for i, c := range commands {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " [%s](#sfgen-%s)", c.name, c.name)
	}
	b.WriteString(".\n")
	section := func(title string, args ...string) {
		code, out, errOut := sfgen(t, args...)
		if code != exitOK || errOut != "" || out == "" {
			t.Fatalf("sfgen %s = exit %d, stderr %q; want help on stdout", strings.Join(args, " "), code, errOut)
		}
		if strings.Contains(out, "```") {
			t.Fatalf("sfgen %s prints ```, which would end its block in docs/cli.md", strings.Join(args, " "))
		}
		fmt.Fprintf(&b, "\n## %s\n\n```text\n$ %s\n%s```\n", title, "sfgen "+strings.Join(args, " "), out)
	}
	section("sfgen", "--help")
	for _, c := range commands {
		section("sfgen "+c.name, c.name, "--help")
	}
	return []byte(b.String())
}

// TestCLIDoc checks that docs/cli.md is what the commands' --help prints
// now; -update rewrites it.
func TestCLIDoc(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	path := filepath.Join("..", "..", "docs", "cli.md")
	got := cliDoc(t)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("docs/cli.md differs from the commands' --help; run: go test ./cmd/sfgen -run TestCLIDoc -update, and review the diff")
	}
}
