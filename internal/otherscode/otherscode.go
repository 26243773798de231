// Package otherscode finds, in the catalogs alone, the functions of other
// roles that touching a table could run: through its constraints,
// indexes, triggers, rules, policies, defaults, partition key and column
// types, and the operators, operator classes, domains and SQL-standard
// bodies they reach. A command run by a superuser (or by any role
// stronger than such a function's owner) that rewrites, checks or reads
// the table would run that code with its own privileges, and the
// function's owner may replace it at any time. sfgen convert refuses
// such tables before it alters them; sfgen resume before it reads them.
//
// The query calls nothing it finds: it reads pg_catalog only, with every
// operator and function bound to pg_catalog.
package otherscode

import (
	"bytes"
	"context"
	"database/sql"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"text/template"
)

//go:embed otherscode.sql.tmpl
var queryText string

var query = template.Must(template.New("otherscode").Parse(queryText))

// A Querier is a *sql.DB, *sql.Conn or *sql.Tx.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// A Use is a function, not a superuser's, that an object of a table
// reaches.
type Use struct {
	Table      string `json:"table"`       // schema.table, quoted where needed
	Object     string `json:"object"`      // what of the table reaches it: "CHECK constraint c", "index i", ...
	Function   string `json:"function"`    // schema.name(argument types)
	Owner      string `json:"owner"`       // the function's owner
	TableOwner string `json:"table_owner"` // the table's owner
	// ByCurrentRole: the function's owner is the role that found it.
	ByCurrentRole bool `json:"-"`
}

func (u Use) String() string {
	return fmt.Sprintf("%s's %s calls %s, a function of role %s", u.Table, u.Object, u.Function, u.Owner)
}

// Fix is the statement that gives u's function to u's table's owner.
func (u Use) Fix() string {
	return fmt.Sprintf("ALTER FUNCTION %s OWNER TO %s", u.Function, u.TableOwner)
}

// Options say which functions to find.
type Options struct {
	// NotCurrentRole leaves out the functions of the role that runs the
	// query.
	NotCurrentRole bool
	// ForRead leaves out the objects that a read of the table never runs:
	// defaults and generated columns, triggers and rules (a base table's
	// rules are for INSERT, UPDATE and DELETE). What a read's planning
	// can run stays: indexes (their constant parts are folded),
	// constraints (constraint exclusion), policies (row_security off makes
	// one that would apply an error, but it stays to be safe), the
	// partition key and the columns' types.
	ForRead bool
}

// Query is the SQL of the query, for the tables whose oids the SQL
// expression oids gives (an oid[]): one text of tab-separated lines (see
// Find).
func Query(oids string, o Options) (string, error) {
	var b bytes.Buffer
	if err := query.Execute(&b, struct {
		OIDs string
		Options
	}{oids, o}); err != nil {
		return "", fmt.Errorf("render the query of other roles' code: %w", err)
	}
	return strings.TrimSpace(b.String()), nil
}

// OIDArray is the SQL of an oid[] of oids (numbers from the catalog,
// written by Go).
func OIDArray(oids []int64) string {
	s := make([]string, len(oids))
	for i, o := range oids {
		s[i] = strconv.FormatInt(o, 10)
	}
	return "ARRAY[" + strings.Join(s, ", ") + "]::pg_catalog.oid[]"
}

// Tree is the SQL of an oid[] of table oid and every partition and
// inheritance child under it, at every level: the tables a SELECT of it
// reads.
func Tree(oid int64) string {
	return fmt.Sprintf(`ARRAY(WITH RECURSIVE tree (oid) AS (SELECT %d::pg_catalog.oid
    UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent OPERATOR(pg_catalog.=) tree.oid)
    SELECT tree.oid FROM tree)`, oid)
}

// Find returns, through q, the functions not owned by a superuser that
// the tables oids reach (with o.NotCurrentRole, nor by this role),
// ordered by table and object.
func Find(ctx context.Context, q Querier, oids []int64, o Options) ([]Use, error) {
	return FindIn(ctx, q, OIDArray(oids), o)
}

// FindIn is Find of the tables the SQL expression oids gives (an oid[]:
// OIDArray, Tree).
func FindIn(ctx context.Context, q Querier, oids string, o Options) ([]Use, error) {
	stmt, err := Query(oids, o)
	if err != nil {
		return nil, err
	}
	var found string
	if err := q.QueryRowContext(ctx, stmt).Scan(&found); err != nil {
		return nil, fmt.Errorf("read the functions the tables call: %w", err)
	}
	var uses []Use
	if found == "" {
		return nil, nil
	}
	for _, line := range strings.Split(found, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			return nil, fmt.Errorf("read the functions the tables call: unexpected row %q", line)
		}
		uses = append(uses, Use{Table: f[0], Object: f[1], Function: f[2], Owner: f[3], TableOwner: f[4], ByCurrentRole: f[5] == "t"})
	}
	return uses, nil
}
