// Package sqlstate is the one table of the SQLSTATEs that sfgen's SQL
// raises: every SFnnn code the templates under internal/ and the native
// generator's C source spell, what it means, what raises it, and the
// sentinel error, if any, that Go code finds for it (errors.Is) through
// sfgenpg.DBError and internal/install. TestTableMatchesSources checks the
// table against the SQL and C sources, both ways. The templates keep their
// literal codes: the released SQL is pinned byte for byte.
package sqlstate

import (
	"errors"
	"strings"

	"github.com/sfgen/sfgen"
)

// The codes, by name.
const (
	CatchUp          = "SF001"
	ForeignObject    = "SF101"
	LayoutMismatch   = "SF102"
	NewerRelease     = "SF103"
	UntrustedSchema  = "SF104"
	UntrustedOwner   = "SF105"
	Privilege        = "SF106"
	NoNode           = "SF201"
	NoFreeNode       = "SF202"
	NodeLeased       = "SF203"
	NodeTaken        = "SF204"
	NoTurns          = "SF205"
	AheadOrUnloaded  = "SF301"
	NativeLayout     = "SF302"
	NativeMissing    = "SF303"
	ValueOutOfRange  = "22003" // PostgreSQL's numeric_value_out_of_range, which sfgen's range checks raise too
	preflightPrefix  = "SF1"
	outOfRangeSuffix = " out of range ["
)

// The sentinels of the codes that have one. internal/install and
// sfgenpg export them under their own names (install.ErrForeignObject,
// sfgenpg.ErrNoFreeNode, ...): these are the same values.
var (
	// ErrForeignObject: the schema has objects under sfgen's names that
	// another role owns or that sfgen did not create.
	ErrForeignObject = errors.New("objects under sfgen's names that sfgen did not create")
	// ErrLayoutMismatch: the schema holds sfgen's functions for another layout.
	ErrLayoutMismatch = errors.New("sfgen installed for another layout")
	// ErrNewerRelease: the schema is at a release newer than this sfgen's.
	ErrNewerRelease = errors.New("sfgen release newer than this one")
	// ErrUntrustedSchema: the schema belongs to a role that could drop or
	// replace sfgen's objects, or roles other than the installing one
	// (and superusers) can create objects in it.
	ErrUntrustedSchema = errors.New("schema owned by another role")
	// ErrPrivilege: the installing role lacks a privilege the install
	// needs (from release 4, CREATE on the database for the private
	// schema of the leases, unless it exists).
	ErrPrivilege = errors.New("the installing role lacks a privilege")
	// ErrNoNode: the schema has no node set, so snowflake_next_id()
	// refuses.
	ErrNoNode = errors.New("no node set")
	// ErrNoFreeNode: every node of the layout is leased, reserved or a
	// schema's own.
	ErrNoFreeNode = errors.New("no free node to lease")
)

// A Code is one SQLSTATE of sfgen's SQL.
type Code struct {
	Code     string // the SQLSTATE
	Name     string // the constant's name in this package
	Meaning  string // what it says
	RaisedBy string // what raises it
	// Err is the sentinel that errors.Is finds for it, nil for none.
	Err error
	// MessageHas, when not "", is text the error's message must contain
	// for Err to apply: for a code PostgreSQL raises itself too.
	MessageHas string
	// Public: package sfgenpg exports Err, and its DBError wraps errors
	// of this code with it.
	Public bool
}

// Codes is the table: one entry a code, in order.
var Codes = []Code{
	{CatchUp, "CatchUp", "a catch-up of the generator's state is done or not due: leave the subtransaction (never reaches the caller)",
		"snowflake_next_id() (release 1 to 6, PL/pgSQL), which raises and catches it itself", nil, "", false},
	{ForeignObject, "ForeignObject", "objects under sfgen's names that sfgen did not create, or another role owns",
		"the install preflight (release 2 on)", ErrForeignObject, "", true},
	{LayoutMismatch, "LayoutMismatch", "the schema holds sfgen for another layout",
		"the install preflight", ErrLayoutMismatch, "", true},
	{NewerRelease, "NewerRelease", "the schema is at a newer sfgen release than the one being installed",
		"the install preflight", ErrNewerRelease, "", true},
	{UntrustedSchema, "UntrustedSchema", "roles other than the schema's owner (and superusers) can create objects in it",
		"the install preflight", ErrUntrustedSchema, "", true},
	{UntrustedOwner, "UntrustedOwner", "the schema belongs to another role than the installing one",
		"the install preflight (release 4 on)", ErrUntrustedSchema, "", true},
	{Privilege, "Privilege", "the installing role may not create the private schema of the leases (GRANT CREATE ON DATABASE)",
		"the install preflight and lease.sql (release 4 on)", ErrPrivilege, "", false},
	{NoNode, "NoNode", "no node is set for the schema, so snowflake_next_id() cannot make IDs",
		"snowflake_node_bits() until a node is set (release 3 on), snowflake_next_id(), the catalog's inspection, the native migration; the C generator passes it on", ErrNoNode, "", true},
	{NoFreeNode, "NoFreeNode", "no node of the layout is free to lease",
		"snowflake_lease_take() (release 3 on)", ErrNoFreeNode, "", true},
	{NodeLeased, "NodeLeased", "the node is leased now; reserve it once the lease has ended",
		"snowflake_lease_reserve() (release 3 on)", nil, "", false},
	{NodeTaken, "NodeTaken", "the node is another maker's (a lease, a reservation or a schema's own node): a node belongs to one maker at a time",
		"the node registry's check (release 4 on): snowflake_set_node(), a first install, reservations", nil, "", false},
	{NoTurns, "NoTurns", "the catch-up's turn table has no row for the current turn: the database is a copy made without the table's rows (pg_dump --schema-only, a logical replication subscriber's first step); 'sfgen install' on it restores them",
		"snowflake_next_state() (release 8 on), instead of waiting for ever", nil, "", false},
	{AheadOrUnloaded, "AheadOrUnloaded", "sfgen convert: the column holds IDs at or above the first ID snowflake_next_id() makes now; the native migration: this server cannot load the native library",
		"convert.sql (convert.ErrAhead) and the native generator's migration", nil, "", false},
	{NativeLayout, "NativeLayout", "the native library was built for another layout than the migration's or the schema's",
		"the native generator's migration", nil, "", false},
	{NativeMissing, "NativeMissing", "the native generator's C function is missing (a restore where its library was not loadable)",
		"snowflake_next_id_c(bigint), the stand-in the native install leaves", nil, "", false},
	{ValueOutOfRange, "ValueOutOfRange", "a value outside its field's range, in the words of sfgen.RangeError (PostgreSQL's own 22003, \"integer out of range\", is not sfgen's)",
		"the range checks of sfgen's functions (snowflake_compose(), snowflake_decompose(), snowflake_first_id(), ...)", sfgen.ErrOutOfRange, outOfRangeSuffix, true},
}

// Lookup returns the table's entry for code.
func Lookup(code string) (Code, bool) {
	for _, c := range Codes {
		if c.Code == code {
			return c, true
		}
	}
	return Code{}, false
}

// Sentinel returns the sentinel for an error of SQLSTATE code whose
// message is message, nil when the table has none.
func Sentinel(code, message string) error {
	c, ok := Lookup(code)
	if !ok || c.Err == nil || !strings.Contains(message, c.MessageHas) {
		return nil
	}
	return c.Err
}

// Public returns the sentinel that sfgenpg.DBError gives an error of
// SQLSTATE code whose message is message: Sentinel's, for the codes whose
// sentinel sfgenpg exports; nil for any other.
func Public(code, message string) error {
	if c, ok := Lookup(code); !ok || !c.Public {
		return nil
	}
	return Sentinel(code, message)
}

// Preflight returns the sentinel for a SQLSTATE that the install
// preflight raises (SF101 to SF106), nil for any other.
func Preflight(code string) error {
	if !strings.HasPrefix(code, preflightPrefix) {
		return nil
	}
	return Sentinel(code, "")
}
