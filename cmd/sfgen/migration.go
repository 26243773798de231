package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sfgen/sfgen/internal/migrationdir"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/snowflake"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

const migrationHelp = `
sfgen migration --dir DIR [--sequential] [--layout NAME|SPEC] [--schema NAME] [--datacenter N] [--machine N]

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

The version is a UTC timestamp (YYYYMMDDhhmmss), or with --sequential the
next number after the highest version in DIR. The file is written whole or
not at all and never replaces an existing file.

Examples:
  sfgen migration --dir db/migrations
  sfgen migration --dir db/migrations --sequential --schema ids --datacenter 1 --machine 4
  sfgen migration --dir db/migrations --layout discord
  sfgen migration --dir db/migrations && goose -dir db/migrations postgres "$DATABASE_URL" up
`

func runMigration(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("migration", migrationHelp, stdout, stderr)
	var sf sqlFlags
	if code, done := sf.register(c, args); done {
		return code
	}
	dir := c.fs.String("dir", "", "goose migrations `DIR` to write into (required)")
	sequential := c.fs.Bool("sequential", false, "number the migration after the highest version in DIR instead of by time")
	if code, done := c.parseFlags(args); done {
		return code
	}
	if *dir == "" {
		return c.usageError("missing --dir; name your goose migrations directory")
	}
	found, err := migrationdir.Find(*dir)
	if errors.Is(err, migrationdir.ErrNotDir) || errors.Is(err, migrationdir.ErrBadHeader) {
		return c.usageError("%v", err)
	}
	if err != nil {
		return c.fail("%v", err)
	}
	v := migrationdir.Timestamp
	if *sequential {
		v = migrationdir.Sequential
	}
	if len(found) == 0 {
		content, err := sqlgen.Migration(sf.options())
		if err != nil {
			return c.usageError("%v", err)
		}
		return c.writeMigration(*dir, migrationdir.Suffix, content, v)
	}
	return c.writeUpgrades(*dir, found, sf, v)
}

// writeUpgrades writes the upgrades to the latest release into dir, which
// has sfgen's migrations found: their headers say for which schema and
// layout.
func (c *cli) writeUpgrades(dir string, found []migrationdir.Found, sf sqlFlags, v migrationdir.Versioning) int {
	last := found[len(found)-1]
	for _, f := range found {
		if f.Schema != last.Schema || f.Layout != last.Layout {
			return c.usageError("%s has sfgen migrations for more than one schema or layout (%s: schema %s, layout %s; %s: schema %s, layout %s); keep one install per directory", dir, f.Name, f.Schema, f.Layout, last.Name, last.Schema, last.Layout)
		}
	}
	if sf.node.given() {
		return c.usageError("%s already installs sfgen (%s); the node flags apply to a first install only: set the node with 'sfgen node --datacenter N --machine N'", dir, last.Name)
	}
	if c.flagSet("schema") && *sf.schema != last.Schema {
		return c.usageError("--schema %s conflicts with %s's sfgen migrations, which install into schema %s", *sf.schema, dir, last.Schema)
	}
	if err := pgident.ValidateSchema(last.Schema); err != nil {
		return c.usageError("%s: %v", last.Name, err)
	}
	l, err := snowflake.ParseLayout(last.Layout)
	if err != nil {
		return c.usageError("%s: -- Layout: header: %v", last.Name, err)
	}
	if c.flagSet("layout") && sf.layout.layout != l {
		return c.usageError("--layout %s conflicts with %s's sfgen migrations, which are for layout %s (%s); leave --layout out, or keep another layout's migrations in another directory",
			describeLayout(sf.layout.layout), dir, describeLayout(l), last.Name)
	}
	release := 0
	for _, f := range found {
		release = max(release, f.Release)
	}
	switch {
	case release == sqlgen.Latest:
		fmt.Fprintf(c.stderr, "sfgen migration: up to date: %s installs sfgen release %d into schema %s (%s); nothing written\n", dir, release, last.Schema, last.Name)
		return exitOK
	case release > sqlgen.Latest:
		return c.fail("%s installs sfgen release %d, newer than this sfgen's release %d; use a newer sfgen", dir, release, sqlgen.Latest)
	}
	o := sf.options()
	o.Schema, o.Layout = last.Schema, l
	for r := release + 1; r <= sqlgen.Latest; r++ {
		content, err := sqlgen.Upgrade(o, r)
		if err != nil {
			return c.fail("%v", err)
		}
		if code := c.writeMigration(dir, migrationdir.UpgradeSuffix(r), content, v); code != exitOK {
			return code
		}
	}
	return exitOK
}

// writeMigration writes one migration file and prints its path.
func (c *cli) writeMigration(dir, suffix string, content []byte, v migrationdir.Versioning) int {
	path, err := migrationdir.Write(dir, suffix, content, v, time.Now())
	if errors.Is(err, migrationdir.ErrNotDir) || errors.Is(err, migrationdir.ErrExists) {
		return c.usageError("%v", err)
	}
	if err != nil {
		return c.fail("%v", err)
	}
	fmt.Fprintln(c.stdout, path)
	return exitOK
}
