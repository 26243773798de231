package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/idkit"
	"github.com/sfgen/sfgen/internal/install"
)

// A cli holds what one subcommand needs: its name, flag set and streams.
type cli struct {
	name   string // e.g. "compose"
	fs     *flag.FlagSet
	stdout io.Writer
	stderr io.Writer
	help   string         // text after "Usage:", with examples
	checks []func() error // of the flags' values, run after parsing in the order the flags were defined
}

func newCLI(name, help string, stdout, stderr io.Writer) *cli {
	fs := flag.NewFlagSet("sfgen "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &cli{name: name, fs: fs, stdout: stdout, stderr: stderr, help: help}
}

// parse parses args, which may mix flags and positional arguments in any
// order (so "decompose 42 --json" works, and "-5" is a value, not a flag),
// and checks the values of the integer and schema flags. It returns the positional
// arguments, and on error or --help the exit status to return (with done
// set).
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
		return nil, c.usageError("%s; see 'sfgen %s --help'", flagError(err), c.name), true
	}
	if err := c.emptySchema(); err != nil {
		return nil, c.usageError("%v", err), true
	}
	for _, check := range c.checks {
		if err := check(); err != nil {
			return nil, c.usageError("%v", err), true
		}
	}
	return pos, exitOK, false
}

// flagError returns the text of an error from package flag, with flags
// written --name, as help writes them.
func flagError(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + name
	}
	for _, before := range []string{"flag needs an argument: ", " for flag ", " for "} {
		if i := strings.LastIndex(msg, before+"-"); i >= 0 {
			i += len(before)
			return msg[:i] + "-" + msg[i:]
		}
	}
	return msg
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

// printHelp writes the command's help: what it does in one line (its
// summary in sfgen --help), then its usage, prose and examples, then
// its flags.
func (c *cli) printHelp(w io.Writer) {
	if s := summary(c.name); s != "" {
		fmt.Fprintf(w, "sfgen %s: %s\n\n", c.name, s)
	}
	fmt.Fprintf(w, "Usage:\n  %s\n\nFlags:\n", strings.TrimSpace(c.help))
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
}

// summary returns the one line sfgen --help gives command name, "" for
// a name it does not list.
func summary(name string) string {
	for _, c := range commands {
		if c.name == name {
			return c.summary
		}
	}
	return ""
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// flagSet reports whether the flag called name was given.
func (c *cli) flagSet(name string) bool {
	set := false
	c.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// An intFlag is an integer flag with a range, the one kind of integer flag
// sfgen has. Set keeps the text as given; parse then checks it, so that a
// bad value is a usage error that names the value and the range, in one
// style for every flag:
//
//	count 0 out of range [1, 10000000]
//	count "1e3" is not a whole number; want an integer in [1, 10000000]
//
// The range is held in big.Ints, so that one type serves int64 ranges and
// --seed's uint64 one, and a number too long for either is out of range
// rather than a parse error.
type intFlag struct {
	name     string   // what messages call the value: "count", "datacenter"
	min, max *big.Int // the range, inclusive
	def      string   // the default as help shows it: "8", "now"
	// outOfRange, if set, words the message for a value outside the range
	// (a snowflake field's, which for a timestamp also gives its times).
	outOfRange func(value string) string
	// times, if set, also reads an RFC 3339 time as its Unix millisecond
	// (a snowflake timestamp, idkit.ParseTime), and words the message
	// for a value that is neither.
	times *snowflake.Layout

	text string
	set  bool
	val  big.Int // the value, once checked; the default's until then
}

func (f *intFlag) String() string {
	switch {
	case f == nil:
		return ""
	case f.set:
		return f.text
	}
	return f.def
}

func (f *intFlag) Set(s string) error {
	f.text, f.set = s, true
	return nil
}

// check parses a given value and checks its range.
func (f *intFlag) check() error {
	if !f.set {
		return nil
	}
	if _, ok := f.val.SetString(f.text, 10); !ok {
		ms, isTime := idkit.ParseTime(f.text)
		switch {
		case f.times != nil && isTime:
			f.val.SetInt64(ms)
		case f.times != nil:
			return errors.New(idkit.TimestampSyntaxMessage(*f.times, f.text))
		default:
			return fmt.Errorf("%s %q is not a whole number; want an integer in [%s, %s]", f.name, f.text, f.min, f.max)
		}
	}
	if f.val.Cmp(f.min) < 0 || f.val.Cmp(f.max) > 0 {
		if f.outOfRange != nil {
			return errors.New(f.outOfRange(f.val.String()))
		}
		return fmt.Errorf("%s %s out of range [%s, %s]", f.name, &f.val, f.min, f.max)
	}
	return nil
}

// Int64 returns the value of a flag whose range is within int64's.
func (f *intFlag) Int64() int64 { return f.val.Int64() }

// Uint64 returns the value of a flag whose range is within uint64's.
func (f *intFlag) Uint64() uint64 { return f.val.Uint64() }

// Int returns the value of a flag whose range is within int's.
func (f *intFlag) Int() int { return int(f.val.Int64()) }

// newInt defines --name, an integer in [min, max] that help shows with
// default def and that has value val until given. usage names the
// value in backquotes, as package flag wants, and gets the range after it.
func (c *cli) newInt(name, usage string, min, max, val *big.Int, def string) *intFlag {
	f := &intFlag{name: name, min: min, max: max, def: def}
	f.val.Set(val)
	c.fs.Var(f, name, withRange(usage, min.String(), max.String()))
	c.checks = append(c.checks, f.check)
	return f
}

// intVar defines --name, an integer in [min, max], def when not given.
func (c *cli) intVar(name, usage string, def, min, max int64) *intFlag {
	return c.newInt(name, usage, big.NewInt(min), big.NewInt(max), big.NewInt(def), strconv.FormatInt(def, 10))
}

// uint64Var defines --name, any uint64; help shows def as its default,
// and the caller chooses the value when the flag is not given.
func (c *cli) uint64Var(name, usage, def string) *intFlag {
	return c.newInt(name, usage, new(big.Int), new(big.Int).SetUint64(math.MaxUint64), new(big.Int), def)
}

// fieldVar defines --NAME for field fld of layout l, with fld's name and
// range, 0 when not given; def is the default help shows ("" for none).
func (c *cli) fieldVar(l snowflake.Layout, fld snowflake.Field, usage, def string) *intFlag {
	lo, hi := l.Min(fld), l.Max(fld)
	f := c.newInt(fld.String(), usage, big.NewInt(lo), big.NewInt(hi), new(big.Int), def)
	f.outOfRange = func(v string) string { return idkit.RangeMessage(fld, v, lo, hi) }
	if fld == snowflake.FieldTimestamp {
		f.times = &l
	}
	return f
}

// schemaFlags are the flags, on any command, that name a schema: sfgen's
// (--schema, convert's --sfgen-schema) or a table's (audit's and
// convert's --schema, audit's --table-schema). Each is public when not
// given, and refused when given empty (see emptySchema).
var schemaFlags = []string{"schema", "sfgen-schema", "table-schema"}

// emptySchema returns the error for a schema flag given empty: public is
// what leaving it out means, and a script whose variable is unset must
// not work in public unawares.
func (c *cli) emptySchema() error {
	var err error
	c.fs.Visit(func(f *flag.Flag) {
		if err == nil && slices.Contains(schemaFlags, f.Name) && f.Value.String() == "" {
			err = fmt.Errorf("--%s is empty: give a schema's name, or leave --%s out for public", f.Name, f.Name)
		}
	})
	return err
}

// schemaVar defines --schema, the name of a schema, public when not given
// (and refused given empty: emptySchema), checked by catalog.ParseSchema.
func (c *cli) schemaVar(usage string) *string {
	s := c.fs.String("schema", catalog.Public.Name(), usage)
	c.checks = append(c.checks, func() error {
		parsed, err := catalog.ParseSchema(*s)
		*s = parsed.Name()
		return err
	})
	return s
}

// tableSchemaVar defines --table-schema, the schema of the table a
// command reads (public when not given). --schema, which names sfgen's
// schema in every other command and the table's in audit and convert
// before release 8's CLI, is refused here, naming --table-schema (and
// where to give sfgen's): one meaning per flag name. It returns the
// table's schema, set once the flags are parsed.
func (c *cli) tableSchemaVar(usage, sfgenSchema string) *string {
	s := c.fs.String("table-schema", catalog.Public.Name(), usage)
	c.fs.Func("schema", "refused here: the table's schema is --table-schema (--schema names sfgen's schema in every other command)", func(string) error {
		return fmt.Errorf("the table's schema is --table-schema here; --schema names sfgen's schema in every other command, and %s", sfgenSchema)
	})
	return s
}

// withRange puts "(min to max)" after the backquoted name in usage, or at
// its end when it has none.
func withRange(usage, min, max string) string {
	r := fmt.Sprintf(" (%s to %s)", min, max)
	if i := strings.Index(usage, "`"); i >= 0 {
		if j := strings.Index(usage[i+1:], "`"); j >= 0 {
			k := i + 1 + j + 1
			return usage[:k] + r + usage[k:]
		}
	}
	return usage + r
}

// nodeFlags are --datacenter and --machine: the node of a generator, each
// in its field's range in the layout, 0 when not given.
type nodeFlags struct {
	datacenter, machine *intFlag
}

// nodeFlags defines --datacenter and --machine for layout l; usage is
// their help, with %s for the field's name and a backquoted N.
func (c *cli) nodeFlags(l snowflake.Layout, usage string) nodeFlags {
	return nodeFlags{
		datacenter: c.fieldVar(l, snowflake.FieldDatacenter, fmt.Sprintf(usage, snowflake.FieldDatacenter), ""),
		machine:    c.fieldVar(l, snowflake.FieldMachine, fmt.Sprintf(usage, snowflake.FieldMachine), ""),
	}
}

// given reports whether either flag was given.
func (n nodeFlags) given() bool { return n.datacenter.set || n.machine.set }

// half returns, when one of the flags was given without the other, the
// error that refuses it: a node is given whole or not at all, never
// completed with 0.
func (n nodeFlags) half() error {
	switch {
	case n.datacenter.set && !n.machine.set:
		return fmt.Errorf("--datacenter %d without --machine: give both --datacenter and --machine, or neither", n.datacenter.Int64())
	case n.machine.set && !n.datacenter.set:
		return fmt.Errorf("--machine %d without --datacenter: give both --datacenter and --machine, or neither", n.machine.Int64())
	}
	return nil
}

// values returns the datacenter and the machine.
func (n nodeFlags) values() (datacenter, machine int64) {
	return n.datacenter.Int64(), n.machine.Int64()
}

// asked returns the node the flags ask for, as install.Run takes it: a
// field not given is nil.
func (n nodeFlags) asked() *install.Node {
	var node install.Node
	if n.datacenter.set {
		node.Datacenter = new(int64)
		*node.Datacenter = n.datacenter.Int64()
	}
	if n.machine.set {
		node.Machine = new(int64)
		*node.Machine = n.machine.Int64()
	}
	return &node
}

// A layoutFlag is --layout: the ID layout, a preset's name or a spec as
// snowflake.ParseLayout reads them, snowflake.Twitter when not given.
type layoutFlag struct {
	text   string
	set    bool
	layout snowflake.Layout
}

func (f *layoutFlag) String() string {
	if f == nil || !f.set {
		return "twitter"
	}
	return f.text
}

func (f *layoutFlag) Set(s string) error {
	l, err := snowflake.ParseLayout(s)
	if err != nil {
		return err
	}
	f.text, f.set, f.layout = s, true, l
	return nil
}

// layoutUsage is --layout's help.
var layoutUsage = fmt.Sprintf("ID layout `NAME|SPEC`: %s, or a spec as snowflake_layout() returns it, %q",
	strings.Join(idkit.PresetNames(), ", "), snowflake.Twitter().String())

// layoutVar defines --layout and reads its value from args before any
// other flag is defined, so that the flags defined after it (the node and
// field flags) take their ranges, in help and in errors, from the layout
// chosen. A bad value is a usage error, with done set, naming the part of
// the layout at fault, its value and what is allowed. The last --layout in
// args counts, as package flag's parse would have it.
func (c *cli) layoutVar(args []string) (f *layoutFlag, code int, done bool) {
	f = &layoutFlag{layout: snowflake.Twitter()}
	c.fs.Var(f, "layout", layoutUsage)
	value, given := "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "layout" {
			continue
		}
		switch {
		case hasValue:
			value, given = v, true
		case i+1 < len(args):
			i++
			value, given = args[i], true
		}
	}
	if !given {
		return f, exitOK, false
	}
	if err := f.Set(value); err != nil {
		return nil, c.usageError("--layout: %v", err), true
	}
	return f, exitOK, false
}

// describeLayout names l for messages: a preset by its name and spec, a
// custom layout by its spec.
func describeLayout(l snowflake.Layout) string {
	if name := layoutArg(l); name != l.String() {
		return fmt.Sprintf("%s (%s)", name, l)
	}
	return l.String()
}

// layoutArg returns what --layout takes for l: a preset's name, or the
// spec (snowflake.Layout.Name).
func layoutArg(l snowflake.Layout) string { return l.Name() }

// A stringsFlag is a flag that may be given several times, each value
// kept in order.
type stringsFlag []string

func (f *stringsFlag) String() string {
	if f == nil {
		return ""
	}
	return strings.Join(*f, ", ")
}

func (f *stringsFlag) Set(s string) error {
	*f = append(*f, s)
	return nil
}

// A roleList is a flag that may be given many times, each a role name as
// it is (no case folding).
type roleList []string

func (l *roleList) String() string { return strings.Join(*l, ",") }

func (l *roleList) Set(v string) error {
	*l = append(*l, v)
	return nil
}
