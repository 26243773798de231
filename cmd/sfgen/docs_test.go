package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// markdownFiles returns the repository's markdown files (README.md,
// CONTRIBUTING.md, docs/*.md, ...), relative to root, outside hidden
// directories.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// TestDocsConsole runs every command in the ```console blocks of every
// markdown file of the repository, in order, and compares what it prints
// (stdout, then stderr) with the lines that follow it there. A command
// ending in `; echo "exit $?"` is also checked for its exit status; any
// other must exit 0.
//
// Each file's commands run in a directory of their own, empty at the
// start, one after another (a command sees what the ones before it
// wrote). A command is
//
//	[NAME=value ...] sfgen ARGS [> FILE]
//	[NAME=value ...] psql ARGS
//	mkdir ARGS, ls ARGS or head ARGS
//
// with the quoting of a POSIX shell (single and double quotes; a word
// starting with # starts a comment). sfgen runs in-process; psql is the
// one beside the PostgreSQL server binaries; mkdir, ls and head are the
// system's. $DATABASE_URL and any $NAME_URL stand for a database of that
// file's own, empty when first named (from internal/pgcluster/pgtest,
// dropped at the end), the same database every time the file names it
// again. Where there are no server
// binaries and the tests run on $DATABASE_URL's server, a file's commands
// from its first psql on are skipped, saying so.
func TestDocsConsole(t *testing.T) {
	root := filepath.Join("..", "..")
	t.Setenv("NO_COLOR", "1")
	total := 0
	for _, name := range markdownFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		examples := consoleExamples(string(b))
		total += len(examples)
		if len(examples) == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) { runConsole(t, examples) })
	}
	if total < 20 {
		t.Fatalf("found %d console examples in the markdown files; the parser or the docs are broken", total)
	}
}

var databaseVar = regexp.MustCompile(`^(DATABASE|[A-Z][A-Z0-9_]*)_URL$`)

func runConsole(t *testing.T, examples []example) {
	t.Chdir(t.TempDir())
	databases := map[string]string{}
	expand := func(name string) (string, error) {
		if !databaseVar.MatchString(name) {
			return "", fmt.Errorf("$%s: the docs' commands may name only databases, $DATABASE_URL or $NAME_URL", name)
		}
		if databases[name] == "" {
			databases[name] = pgtest.DSN(t)
		}
		return databases[name], nil
	}
	skip := ""
	for _, ex := range examples {
		t.Run(ex.command, func(t *testing.T) {
			if skip != "" {
				t.Skip(skip)
			}
			line, showExit := strings.CutSuffix(ex.command, `; echo "exit $?"`)
			words, err := shellWords(line, expand)
			if err != nil {
				t.Fatal(err)
			}
			var env []string
			for len(words) > 0 && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(words[0]) {
				env, words = append(env, words[0]), words[1:]
			}
			redirect := ""
			if n := len(words); n >= 2 && words[n-2] == ">" {
				redirect, words = words[n-1], words[:n-2]
			}
			if len(words) == 0 {
				t.Fatalf("no command in %q", ex.command)
			}
			var code int
			var out, errOut string
			switch words[0] {
			case "sfgen":
				code, out, errOut = sfgenWithEnv(t, env, words[1:])
			case "psql":
				psql, err := psqlPath()
				if err != nil && pgtest.External() {
					skip = fmt.Sprintf("no psql beside server binaries here (%v), and the tests run on $%s's server", err, pgtest.EnvVar)
					t.Skip(skip)
				}
				if err != nil {
					t.Fatal(err)
				}
				code, out, errOut = runProgram(t, psql, env, words[1:])
			case "mkdir", "ls", "head":
				path, err := exec.LookPath(words[0])
				if err != nil {
					t.Fatal(err)
				}
				code, out, errOut = runProgram(t, path, env, words[1:])
			default:
				t.Fatalf("%q: the docs' console blocks run sfgen, psql, mkdir, ls and head only", ex.command)
			}
			if redirect != "" && words[0] != "sfgen" {
				t.Fatalf("%q: only sfgen's output can be redirected", ex.command)
			}
			if redirect != "" {
				if err := os.WriteFile(redirect, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				out = ""
			}
			got := out + errOut
			if showExit {
				got += fmt.Sprintf("exit %d\n", code)
			} else if code != 0 {
				t.Errorf("exit status %d; stderr %q", code, errOut)
			}
			if got != ex.output {
				t.Errorf("the docs show:\n%s\nit prints:\n%s", ex.output, got)
			}
		})
	}
}

// sfgenWithEnv runs sfgen in-process with the environment variables env
// (NAME=value) set, and DATABASE_URL empty unless env sets it, so that
// only a database the command names is used.
func sfgenWithEnv(t *testing.T, env, args []string) (code int, stdout, stderr string) {
	t.Helper()
	set := map[string]string{"DATABASE_URL": ""}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
	}
	for k, v := range set {
		old, had := os.LookupEnv(k)
		os.Setenv(k, v)
		defer func() {
			if had {
				os.Setenv(k, old)
			} else {
				os.Unsetenv(k)
			}
		}()
	}
	return sfgen(t, args...)
}

// psqlPath returns the psql beside the PostgreSQL server binaries.
func psqlPath() (string, error) {
	dir, err := pgcluster.FindBinDir(os.Getenv(pgcluster.BinEnv))
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "psql")
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

// runProgram runs the program at path with args and the environment
// variables env added (and no ~/.psqlrc), and returns its exit status and
// output.
func runProgram(t *testing.T, path string, env, args []string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(append(os.Environ(), "PSQLRC=/dev/null"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

type example struct{ command, output string }

func consoleExamples(doc string) []example {
	var out []example
	inBlock := false
	for _, line := range strings.Split(doc, "\n") {
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
// quoting the docs use: single and double quotes, a comment from a word
// that starts with #, and $NAME (outside single quotes) replaced by
// expand(NAME).
func shellWords(s string, expand func(string) (string, error)) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != '\'' && c == '$' && i+1 < len(s) && (s[i+1] == '_' || s[i+1] >= 'A' && s[i+1] <= 'Z' || s[i+1] >= 'a' && s[i+1] <= 'z'):
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			v, err := expand(s[i+1 : j])
			if err != nil {
				return nil, err
			}
			cur.WriteString(v)
			inWord = true
			i = j - 1
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '#' && !inWord:
			i = len(s)
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
