package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sfgen/sfgen/internal/snowflake"
)

// A cli holds what one subcommand needs: its name, flag set and streams.
type cli struct {
	name   string // e.g. "compose"
	fs     *flag.FlagSet
	stdout io.Writer
	stderr io.Writer
	help   string // text after "Usage:", with examples
}

func newCLI(name, help string, stdout, stderr io.Writer) *cli {
	fs := flag.NewFlagSet("sfgen "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &cli{name: name, fs: fs, stdout: stdout, stderr: stderr, help: help}
}

// parse parses args, which may mix flags and positional arguments in any
// order (so "decompose 42 --json" works, and "-5" is a value, not a flag).
// It returns the positional arguments, and on error or --help the exit
// status to return (with done set).
func (c *cli) parse(args []string) (pos []string, code int, done bool) {
	var flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' || isNumber(a) {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := c.fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	err := c.fs.Parse(flags)
	if errors.Is(err, flag.ErrHelp) {
		c.printHelp(c.stdout)
		return nil, exitOK, true
	}
	if err != nil {
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
			msg = "unknown flag " + name
		}
		return nil, c.usageError("%s; see 'sfgen %s --help'", msg, c.name), true
	}
	return pos, exitOK, false
}

// parseFlags is parse for a command that takes only flags: a positional
// argument is a usage error.
func (c *cli) parseFlags(args []string) (code int, done bool) {
	pos, code, done := c.parse(args)
	if !done && len(pos) > 0 {
		return c.usageError("unexpected argument %q; %s takes only flags", pos[0], c.name), true
	}
	return code, done
}

// usageError prints one line on stderr and returns exitUsage.
func (c *cli) usageError(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "sfgen %s: %s\n", c.name, fmt.Sprintf(format, args...))
	return exitUsage
}

// fail prints one line on stderr and returns exitFail.
func (c *cli) fail(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "sfgen %s: %s\n", c.name, fmt.Sprintf(format, args...))
	return exitFail
}

func (c *cli) printHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage:\n  %s\n\nFlags:\n", strings.TrimSpace(c.help))
	c.fs.SetOutput(w)
	c.fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if name != "" {
			fmt.Fprintf(w, " %s", name)
		}
		fmt.Fprintf(w, "\n      %s", usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
	c.fs.SetOutput(io.Discard)
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// node parses the flag's text as field f (FieldDatacenter or FieldMachine)
// of layout l and checks it is in range: a node number has no composer to
// check it later.
func (f *intFlag) node(l snowflake.Layout, fld snowflake.Field) (int64, error) {
	v, err := f.field(l, fld)
	if err == nil && (v < l.Min(fld) || v > l.Max(fld)) {
		err = &snowflake.RangeError{Field: fld, Value: v, Min: l.Min(fld), Max: l.Max(fld)}
	}
	return v, err
}

// intFlag is an integer flag whose text is kept, so that a bad value can be
// reported with its field's range rather than as a bare parse error.
type intFlag struct {
	text string
	set  bool
}

func (f *intFlag) String() string { return f.text }
func (f *intFlag) Set(s string) error {
	f.text, f.set = s, true
	return nil
}

// field parses the flag's text as a value of field f of layout l. Text
// that is not an integer, or does not fit in an int64, gets an error that
// names the field, the text and the range. The range itself is checked by
// the composer, not here.
func (f *intFlag) field(l snowflake.Layout, fld snowflake.Field) (int64, error) {
	n, err := strconv.ParseInt(f.text, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, errors.New(snowflake.RangeMessage(fld, f.text, l.Min(fld), l.Max(fld)))
	}
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a whole number; want an integer in [%d, %d]", fld, f.text, l.Min(fld), l.Max(fld))
	}
	return n, nil
}

// flagSet reports whether the flag called name was given.
func (c *cli) flagSet(name string) bool {
	set := false
	c.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
