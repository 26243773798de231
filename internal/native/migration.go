package native

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgident"
)

// MigrationOptions says what MigrationUp switches.
type MigrationOptions struct {
	Schema  string           // the schema whose snowflake_next_id() it replaces
	Layout  snowflake.Layout // the layout the library was built for, and the schema's
	Release int              // the schema's sfgen release once the migrations before it ran (one of Releases)
	Library string           // the library's absolute path on the database servers
	// Optional makes the switch a warning, not an error, on a server
	// where it cannot happen (the role applying it is not a superuser, or
	// the server cannot load Library): the SQL generator then stays.
	Optional bool
}

type migrationData struct {
	sqlData
	Layout    string
	BuildRoot string // the --native-dir of sfgen build-native that builds Library: two directories up
	Optional  bool
}

// MigrationUp renders the Up section of a goose migration that switches
// o.Schema's snowflake_next_id() to the native generator in o.Library, as
// Install does it, in the migration's transaction: it checks that the
// role is a superuser and that the server loads the library and it was
// built for o.Layout (the schema's), replaces the function (same OID),
// gives it to the owner of the schema's other sfgen objects, comments it
// with the release's marker and makes one ID. A check that fails raises
// (SQLSTATE 42501, SF301 for a library the server cannot load, SF302 for
// one of another layout), and goose leaves the database as it was; with
// o.Optional the first two warn and leave the SQL generator in place.
func MigrationUp(o MigrationOptions) (string, error) {
	if err := pgident.ValidateSchema(o.Schema); err != nil {
		return "", err
	}
	if !slices.Contains(Releases, o.Release) {
		return "", fmt.Errorf("native: sfgen release %d has no native generator (releases %v have)", o.Release, Releases)
	}
	if err := checkLibraryPath(o.Library); err != nil {
		return "", err
	}
	d := migrationData{
		sqlData:   newSQLData(o.Schema, FunctionName, o.Library, catalog.Installed{Release: o.Release, Layout: o.Layout}),
		Layout:    pgident.QuoteLiteral(o.Layout.String()),
		BuildRoot: pgident.QuoteLiteral(filepath.Dir(filepath.Dir(o.Library))),
		Optional:  o.Optional,
	}
	var b strings.Builder
	if err := sqlTemplates.ExecuteTemplate(&b, "migration_up", d); err != nil {
		return "", fmt.Errorf("render the native migration: %w", err)
	}
	return b.String(), nil
}

// checkLibraryPath refuses a library path the server cannot resolve as
// meant (relative) or that cannot be one line of a file's header.
func checkLibraryPath(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("native: library path %q is not absolute: the server resolves it", p)
	}
	for i, r := range p {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("native: library path %q has the unprintable %U at byte %d", p, r, i)
		}
	}
	return nil
}

type fileData struct {
	What, SchemaName, LayoutSpec, Generator string
	ReleaseNumber                           int
	Up, Down                                string
}

// MigrationFile renders a whole goose migration that switches o.Schema's
// snowflake_next_id() to the native generator (its Up section is
// MigrationUp's) and, in its Down section, back to the SQL generator,
// whose SQL is sqlgenerator (sqlgen.Generator for o.Release). Its header
// says "-- Generator: native <library>", which migrationdir reads.
func MigrationFile(o MigrationOptions, sqlGenerator []byte) ([]byte, error) {
	up, err := MigrationUp(o)
	if err != nil {
		return nil, err
	}
	down, err := withoutWrapped(o, sqlGenerator)
	if err != nil {
		return nil, err
	}
	return renderFile(fileData{
		What:       "switch snowflake_next_id() to the native (C) generator, built for this layout, in " + o.Library,
		SchemaName: o.Schema, LayoutSpec: o.Layout.String(), ReleaseNumber: o.Release,
		Generator: generatorLine(o),
		Up:        up, Down: down,
	})
}

// withoutWrapped is the SQL generator's SQL, then the drop of the native
// wrapper's two snowflake_next_id_c() functions, which the SQL
// snowflake_next_id() no longer calls (left, the C one would fail to
// restore from a dump where its library is missing).
func withoutWrapped(o MigrationOptions, sqlGenerator []byte) (string, error) {
	drop, err := renderSQL("drop_wrapped", sqlData{Schema: pgident.Quote(o.Schema)})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(sqlGenerator)) + "\n" + drop + ";", nil
}

// SQLGeneratorFile renders the goose migration that switches o.Schema's
// snowflake_next_id() back to the SQL generator (sqlGenerator, from
// sqlgen.Generator for o.Release), node and state kept; its Down section
// switches to the native one in o.Library again, as MigrationUp without
// Optional. Its header says "-- Generator: sql".
func SQLGeneratorFile(o MigrationOptions, sqlGenerator []byte) ([]byte, error) {
	o.Optional = false
	down, err := MigrationUp(o)
	if err != nil {
		return nil, err
	}
	up, err := withoutWrapped(o, sqlGenerator)
	if err != nil {
		return nil, err
	}
	return renderFile(fileData{
		What:       "switch snowflake_next_id() back to the SQL generator",
		SchemaName: o.Schema, LayoutSpec: o.Layout.String(), ReleaseNumber: o.Release,
		Generator: "sql",
		Up:        up, Down: down,
	})
}

// generatorLine is what a native switch's "-- Generator:" header says.
func generatorLine(o MigrationOptions) string {
	if o.Optional {
		return "native-if-available " + o.Library
	}
	return "native " + o.Library
}

func renderFile(d fileData) ([]byte, error) {
	var b strings.Builder
	if err := sqlTemplates.ExecuteTemplate(&b, "file", d); err != nil {
		return nil, fmt.Errorf("render the native migration: %w", err)
	}
	return []byte(b.String()), nil
}
