package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/migrationdir"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/snowflake"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

const migrationHelp = `
sfgen migration --dir DIR [--sequential] [--layout NAME|SPEC] [--schema NAME] [--datacenter N] [--machine N]
                [--native --native-dir DIR [--native-optional] | --native=false]

Writes sfgen into your application's goose migrations directory and prints
the path of the file it wrote.

In a directory with no sfgen migration it writes one that installs sfgen's
latest SQL release (DIR/<version>_sfgen_snowflake.sql). In a directory that
already has sfgen's migrations it writes only the upgrade to the latest
release (DIR/<version>_sfgen_release_N.sql), for the schema and layout the
existing files name in their headers, and never touches them; when they are
already at the latest release it writes nothing and says "up to date".
The node flags apply to a first install only (use 'sfgen node' after it),
and set the node of every database the file is applied to. Without them
(the usual case: one file for dev, staging and every production
database) each database takes its node from the settings sfgen.datacenter
and sfgen.machine of the session goose applies the file in (for example
PGOPTIONS='-c sfgen.datacenter=1 -c sfgen.machine=2' goose ... up, or
ALTER DATABASE app SET sfgen.datacenter = '1' once per database), or
else has none: snowflake_next_id() refuses to make IDs, naming the fix,
until 'sfgen node' sets one. --schema and --layout must match the existing files. Every file
names its layout in its "-- Layout:" header line, as snowflake_layout()
returns it; without --layout a first install is for Twitter's layout, an
upgrade for the layout of the existing files.

The native generator (--native, docs/native.md): after the install or the
upgrades it also writes DIR/<version>_sfgen_native.sql, which switches
snowflake_next_id() to the C function of the library that 'sfgen
build-native --native-dir DIR' builds on each database server (run it there
first, and again after a major-version upgrade). Applied by a superuser on
a server that loads it, the switch keeps the function's OID, so column
defaults use the C code from their next statement; goose down switches back.
Where it cannot happen (no superuser, no library, one of another layout) the
migration fails and leaves the database as it was, or, written with
--native-optional, warns and keeps the SQL generator (a library of another
layout still fails). Later upgrades written into DIR put the SQL generator
back, so sfgen migration then writes the native switch again after them.
--native=false writes DIR/<version>_sfgen_sql_generator.sql, which switches
back.

The version is a UTC timestamp (YYYYMMDDhhmmss), a second after the one
before it when one run writes several files, or with --sequential the next
number after the highest version in DIR. Each file is written whole or not
at all and never replaces an existing file.

Examples:
  sfgen migration --dir db/migrations
  sfgen migration --dir db/migrations --sequential --schema ids --datacenter 1 --machine 4
  sfgen migration --dir db/migrations --layout discord
  sfgen migration --dir db/migrations && goose -dir db/migrations postgres "$DATABASE_URL" up
  sfgen migration --dir db/migrations --native --native-dir /usr/local/lib/sfgen
  sfgen migration --dir db/migrations --native --native-dir /usr/local/lib/sfgen --native-optional
  sfgen migration --dir db/migrations --native=false
`

func runMigration(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("migration", migrationHelp, stdout, stderr)
	var sf sqlFlags
	if code, done := sf.register(c, args); done {
		return code
	}
	dir := c.fs.String("dir", "", "goose migrations `DIR` to write into (required)")
	sequential := c.fs.Bool("sequential", false, "number the migration after the highest version in DIR instead of by time")
	nativeFlag := c.fs.Bool("native", false, "also write a migration that switches snowflake_next_id() to the native (C) generator; =false: one that switches it back to SQL")
	nativeDirFlag := c.fs.String("native-dir", "", "with --native: the absolute `DIR` on the database servers where 'sfgen build-native --native-dir DIR' puts the library")
	optional := c.fs.Bool("native-optional", false, "with --native: where the switch cannot happen (no superuser, no library), warn and keep the SQL generator instead of failing")
	if code, done := c.parseFlags(args); done {
		return code
	}
	if *dir == "" {
		return c.usageError("missing --dir; name your goose migrations directory")
	}
	want, code, ok := c.generatorFlags(*nativeFlag, *nativeDirFlag, "the absolute directory on the database servers where 'sfgen build-native --native-dir DIR' builds the library (the migration names the library there)")
	if !ok {
		return code
	}
	if want != install.Native && *optional {
		return c.usageError("--native-optional goes with --native")
	}
	found, err := migrationdir.Find(*dir)
	if errors.Is(err, migrationdir.ErrNotDir) || errors.Is(err, migrationdir.ErrBadHeader) {
		return c.usageError("%v", err)
	}
	if err != nil {
		return c.fail("%v", err)
	}
	w := &migrationWriter{c: c, dir: *dir, v: migrationdir.Timestamp}
	if *sequential {
		w.v = migrationdir.Sequential
	}
	var at dirState
	if len(found) == 0 {
		if want == install.SQL {
			return c.usageError("--native=false: %s has no sfgen migrations, so nothing switches snowflake_next_id() to the native generator", *dir)
		}
		o := sf.options()
		content, err := sqlgen.Migration(o)
		if err != nil {
			return c.usageError("%v", err)
		}
		if code := w.write(migrationdir.Suffix, content); code != exitOK {
			return code
		}
		at = dirState{schema: o.Schema, layout: o.Layout, release: sqlgen.Latest, generator: "sql"}
	} else {
		var code int
		if at, code = c.writeUpgrades(w, found, sf); code != exitOK || at.release == 0 {
			return code
		}
	}
	return c.writeGenerator(w, at, want, *nativeDirFlag, *optional)
}

// A dirState is where a directory's sfgen migrations leave a schema.
type dirState struct {
	schema    string
	layout    snowflake.Layout
	release   int
	generator string // "sql" or "native"
	library   string // the native generator's library
	optional  bool   // its switch warns rather than fails where it cannot happen
	upgraded  bool   // this run wrote upgrades (which put the SQL generator back)
}

// A migrationWriter writes one run's migrations, each under a later version
// than the one before (timestamps a second apart, if need be).
type migrationWriter struct {
	c    *cli
	dir  string
	v    migrationdir.Versioning
	last time.Time
}

// write writes one migration file and prints its path.
func (w *migrationWriter) write(suffix string, content []byte) int {
	now := time.Now().UTC().Truncate(time.Second)
	if !now.After(w.last) {
		now = w.last.Add(time.Second)
	}
	w.last = now
	path, err := migrationdir.Write(w.dir, suffix, content, w.v, now)
	if errors.Is(err, migrationdir.ErrNotDir) || errors.Is(err, migrationdir.ErrExists) {
		return w.c.usageError("%v", err)
	}
	if err != nil {
		return w.c.fail("%v", err)
	}
	fmt.Fprintln(w.c.stdout, path)
	return exitOK
}

// writeUpgrades writes the upgrades to the latest release into w's
// directory, which has sfgen's migrations found: their headers say for
// which schema and layout. It returns where the directory then leaves a
// schema; a zero release when it has said why it stops.
func (c *cli) writeUpgrades(w *migrationWriter, found []migrationdir.Found, sf sqlFlags) (dirState, int) {
	dir := w.dir
	last := found[len(found)-1]
	for _, f := range found {
		if f.Schema != last.Schema || f.Layout != last.Layout {
			return dirState{}, c.usageError("%s has sfgen migrations for more than one schema or layout (%s: schema %s, layout %s; %s: schema %s, layout %s); keep one install per directory", dir, f.Name, f.Schema, f.Layout, last.Name, last.Schema, last.Layout)
		}
	}
	if sf.node.given() {
		return dirState{}, c.usageError("%s already installs sfgen (%s); the node flags apply to a first install only: set the node with 'sfgen node --datacenter N --machine N'", dir, last.Name)
	}
	if c.flagSet("schema") && *sf.schema != last.Schema {
		return dirState{}, c.usageError("--schema %s conflicts with %s's sfgen migrations, which install into schema %s", *sf.schema, dir, last.Schema)
	}
	if _, err := catalog.ParseSchema(last.Schema); err != nil {
		return dirState{}, c.usageError("%s: %v", last.Name, err)
	}
	l, err := snowflake.ParseLayout(last.Layout)
	if err != nil {
		return dirState{}, c.usageError("%s: -- Layout: header: %v", last.Name, err)
	}
	if c.flagSet("layout") && sf.layout.layout != l {
		return dirState{}, c.usageError("--layout %s conflicts with %s's sfgen migrations, which are for layout %s (%s); leave --layout out, or keep another layout's migrations in another directory",
			describeLayout(sf.layout.layout), dir, describeLayout(l), last.Name)
	}
	at := dirState{schema: last.Schema, layout: l, generator: "sql"}
	for _, f := range found {
		at.release = max(at.release, f.Release)
		switch f.Generator {
		case "":
			at.generator, at.library, at.optional = "sql", "", false
		default:
			at.generator, at.library, at.optional = f.Generator, f.Library, f.Optional
		}
	}
	switch {
	case at.release == sqlgen.Latest:
		if !c.flagSet("native") {
			fmt.Fprintf(c.stderr, "sfgen migration: up to date: %s installs sfgen release %d into schema %s (%s); nothing written\n", dir, at.release, last.Schema, last.Name)
		}
		return at, exitOK
	case at.release > sqlgen.Latest:
		return dirState{}, c.fail("%s installs sfgen release %d, newer than this sfgen's release %d; use a newer sfgen", dir, at.release, sqlgen.Latest)
	}
	o := sf.options()
	o.Schema, o.Layout = last.Schema, l
	for r := at.release + 1; r <= sqlgen.Latest; r++ {
		content, err := sqlgen.Upgrade(o, r)
		if err != nil {
			return dirState{}, c.fail("%v", err)
		}
		if code := w.write(migrationdir.UpgradeSuffix(r), content); code != exitOK {
			return dirState{}, code
		}
	}
	at.release, at.upgraded = sqlgen.Latest, true
	return at, exitOK
}

// writeGenerator writes the migration that gives the schema, at the
// latest release once the directory's migrations have run, the generator
// asked for: the native one with --native, the SQL one with
// --native=false, and without either the one it had, when an upgrade just
// written puts the SQL one back in place of the native one.
func (c *cli) writeGenerator(w *migrationWriter, at dirState, want install.Choice, buildDir string, optional bool) int {
	o := native.MigrationOptions{Schema: at.schema, Layout: at.layout, Release: at.release, Library: at.library, Optional: at.optional}
	switch {
	case want == install.Native:
		o.Library = filepath.Join(install.NativeDir(buildDir, at.layout.String()), native.Library)
		o.Optional = optional
		if at.generator == "native" && !at.upgraded && at.library == o.Library && at.optional == optional {
			fmt.Fprintf(c.stderr, "sfgen migration: up to date: %s already switches snowflake_next_id() to the native generator in %s; nothing written\n", w.dir, o.Library)
			return exitOK
		}
	case want == install.SQL:
		if at.generator != "native" || at.upgraded {
			fmt.Fprintf(c.stderr, "sfgen migration: up to date: %s leaves snowflake_next_id() the SQL generator; nothing written\n", w.dir)
			return exitOK
		}
	case at.generator == "native" && at.upgraded:
		fmt.Fprintf(c.stderr, "sfgen migration: the upgrade puts the SQL snowflake_next_id() back; %s switches it to the native generator in %s again (as its earlier migration did)\n", w.dir, at.library)
	default:
		return exitOK
	}
	gen, err := sqlgen.Generator(sqlgen.Options{Schema: at.schema, Layout: at.layout}, at.release)
	if err != nil {
		return c.fail("%v", err)
	}
	var content []byte
	suffix := migrationdir.NativeSuffix
	if want == install.SQL {
		content, err = native.SQLGeneratorFile(o, gen)
		suffix = migrationdir.SQLGeneratorSuffix
	} else {
		content, err = native.MigrationFile(o, gen)
	}
	if err != nil {
		return c.usageError("%v", err)
	}
	return w.write(suffix, content)
}
