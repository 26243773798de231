package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/migrationdir"
)

const migrationHelp = `
sfgen migration --dir DIR [--format goose|golang-migrate|dbmate|tern] [--sequential]
                [--layout NAME|SPEC] [--schema NAME] [--datacenter N] [--machine N]
                [--native --native-dir DIR [--native-optional] | --native=false]

Writes sfgen into your application's migrations directory and prints the
path of each file it wrote.

--format is your migration tool's (default goose; a directory that has
sfgen's migrations keeps theirs, and a --format that differs is refused):
  goose           DIR/<version>_sfgen_snowflake.sql, "-- +goose Up" and "-- +goose Down"
  golang-migrate  DIR/<version>_sfgen_snowflake.up.sql and .down.sql
  dbmate          DIR/<version>_sfgen_snowflake.sql, "-- migrate:up" and "-- migrate:down"
  tern            DIR/<version>_sfgen_snowflake.sql, up and down divided by
                  "---- create above / drop below ----"
Each runs in one transaction of the tool's (golang-migrate: one query,
which PostgreSQL runs in one transaction): the files have no BEGIN or
COMMIT of sfgen's, and refuse to run split into transactions of their own.
The same preflight checks run before anything changes, and a down leaves
no schema sfgen made behind.

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
upgrades it also writes DIR/<version>_sfgen_native.sql (golang-migrate:
.up.sql and .down.sql), in --format's layout, which switches
snowflake_next_id() to the C function of the library that 'sfgen
build-native --native-dir DIR' builds on each database server (run it there
first, and again after a major-version upgrade). Applied by a superuser on
a server that loads it, the switch keeps the function's OID, so column
defaults use the C code from their next statement; the tool's down switches
back.
Where it cannot happen (no superuser, no library, one of another layout) the
migration fails and leaves the database as it was, or, written with
--native-optional, warns and keeps the SQL generator (a library of another
layout still fails). Later upgrades written into DIR put the SQL generator
back, so sfgen migration then writes the native switch again after them.
--native=false writes DIR/<version>_sfgen_sql_generator.sql, which switches
back.

The version is a UTC timestamp (YYYYMMDDhhmmss), a second after the one
before it when one run writes several files, and after the highest version
in DIR, or with --sequential the next number after the highest version in
DIR (at least 5 digits; golang-migrate's 6; tern's 3, and always so, as
tern needs). Each file is written whole or not at all and never replaces an
existing file.

Examples:
  sfgen migration --dir db/migrations
  sfgen migration --dir db/migrations --sequential --schema ids --datacenter 1 --machine 4
  sfgen migration --dir db/migrations --layout discord
  sfgen migration --dir db/migrations && goose -dir db/migrations postgres "$DATABASE_URL" up
  sfgen migration --dir db/migrations --native --native-dir /usr/local/lib/sfgen
  sfgen migration --dir db/migrations --native --native-dir /usr/local/lib/sfgen --native-optional
  sfgen migration --dir db/migrations --native=false
  sfgen migration --dir db/migrations --format golang-migrate --sequential && migrate -path db/migrations -database "$DATABASE_URL" up
  sfgen migration --dir db/migrations --format dbmate && dbmate --migrations-dir db/migrations up
  sfgen migration --dir db/migrations --format tern && tern migrate --migrations db/migrations
  sfgen migration --dir db/migrations --format dbmate --native --native-dir /usr/local/lib/sfgen
`

func runMigration(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("migration", migrationHelp, stdout, stderr)
	var sf sqlFlags
	if code, done := sf.register(c, args); done {
		return code
	}
	dir := c.fs.String("dir", "", "migrations `DIR` to write into (required)")
	formatFlag := c.fs.String("format", string(migrationdir.Goose), "the migration tool whose files to write: `goose`, golang-migrate, dbmate or tern")
	sequential := c.fs.Bool("sequential", false, "number the migration after the highest version in DIR instead of by time")
	nativeFlag := c.fs.Bool("native", false, "also write a migration that switches snowflake_next_id() to the native (C) generator; =false: one that switches it back to SQL")
	nativeDirFlag := c.fs.String("native-dir", "", "with --native: the absolute `DIR` on the database servers where 'sfgen build-native --native-dir DIR' puts the library")
	optional := c.fs.Bool("native-optional", false, "with --native: where the switch cannot happen (no superuser, no library), warn and keep the SQL generator instead of failing")
	if code, done := c.parseFlags(args); done {
		return code
	}
	if err := sf.node.half(); err != nil {
		return c.usageError("%v", err)
	}
	if *dir == "" {
		return c.usageError("missing --dir; name your migrations directory")
	}
	format, err := migrationdir.ParseFormat(*formatFlag)
	if err != nil {
		return c.usageError("--format: %v", err)
	}
	want, code, ok := c.generatorFlags(*nativeFlag, *nativeDirFlag, "the absolute directory on the database servers where 'sfgen build-native --native-dir DIR' builds the library (the migration names the library there)")
	if !ok {
		return code
	}
	if want != install.Native && *optional {
		return c.usageError("--native-optional goes with --native")
	}
	plan, planErr := install.PlanMigrations(install.MigrationOptions{
		Dir:       *dir,
		SQL:       sf.options(),
		SchemaSet: c.flagSet("schema"),
		LayoutSet: c.flagSet("layout"),
		Generator: want,
		NativeDir: *nativeDirFlag,
		Optional:  *optional,
		Format:    format,
		FormatSet: c.flagSet("format"),
	})
	w := install.NewFormatWriter(*dir, plan.Format, *sequential)
	for _, s := range plan.Steps {
		if s.Suffix == "" {
			fmt.Fprintf(c.stderr, "sfgen migration: %s\n", s.Note)
			continue
		}
		paths, err := w.WriteStep(s)
		if err != nil {
			return c.migrationError(err)
		}
		for _, p := range paths {
			fmt.Fprintln(stdout, p)
		}
	}
	if planErr != nil {
		return c.migrationError(planErr)
	}
	return exitOK
}

// migrationError prints an error of planning or writing migrations and
// returns the exit status: 2 for one of what was asked, else 1.
func (c *cli) migrationError(err error) int {
	var ue *install.UsageError
	if errors.As(err, &ue) {
		return c.usageError("%v", err)
	}
	return c.fail("%v", err)
}
