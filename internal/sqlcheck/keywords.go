package sqlcheck

import "strings"

// The keywords of PostgreSQL 15's grammar and their categories, as
// pg_get_keywords() lists them (catcode U, C, T, R). The category decides
// what a word followed by "(" is: a reserved or column-name keyword there
// is syntax (COALESCE, EXTRACT, VALUES), while unreserved and
// type-or-function-name keywords can name functions (left, version).

// keyword categories
const (
	kwNone       = iota // not a keyword
	kwUnreserved        // U: may name anything
	kwColName           // C: may name columns, not functions or types
	kwTypeFunc          // T: may name functions and types, not columns
	kwReserved          // R: names nothing unless quoted
)

// keywords maps each keyword, in lower case, to its category.
var keywords = func() map[string]int {
	m := make(map[string]int)
	for cat, words := range map[int]string{
		kwColName: "" +
			"between bigint bit boolean char character coalesce dec decimal " +
			"exists extract float greatest grouping inout int integer " +
			"interval least national nchar none normalize nullif numeric out " +
			"overlay position precision real row setof smallint substring " +
			"time timestamp treat trim values varchar xmlattributes xmlconcat " +
			"xmlelement xmlexists xmlforest xmlnamespaces xmlparse xmlpi " +
			"xmlroot xmlserialize xmltable",
		kwReserved: "" +
			"all analyse analyze and any array as asc asymmetric both case " +
			"cast check collate column constraint create current_catalog " +
			"current_date current_role current_time current_timestamp " +
			"current_user default deferrable desc distinct do else end except " +
			"false fetch for foreign from grant group having in initially " +
			"intersect into lateral leading limit localtime localtimestamp " +
			"not null offset on only or order placing primary references " +
			"returning select session_user some symmetric table then to " +
			"trailing true union unique user using variadic when where window " +
			"with",
		kwTypeFunc: "" +
			"authorization binary collation concurrently cross current_schema " +
			"freeze full ilike inner is isnull join left like natural notnull " +
			"outer overlaps right similar tablesample verbose",
		kwUnreserved: "" +
			"abort absolute access action add admin after aggregate also " +
			"alter always asensitive assertion assignment at atomic attach " +
			"attribute backward before begin breadth by cache call called " +
			"cascade cascaded catalog chain characteristics checkpoint class " +
			"close cluster columns comment comments commit committed " +
			"compression configuration conflict connection constraints " +
			"content continue conversion copy cost csv cube current cursor " +
			"cycle data database day deallocate declare defaults deferred " +
			"definer delete delimiter delimiters depends depth detach " +
			"dictionary disable discard document domain double drop each " +
			"enable encoding encrypted enum escape event exclude excluding " +
			"exclusive execute explain expression extension external family " +
			"filter finalize first following force forward function functions " +
			"generated global granted groups handler header hold hour " +
			"identity if immediate immutable implicit import include " +
			"including increment index indexes inherit inherits inline input " +
			"insensitive insert instead invoker isolation key label language " +
			"large last leakproof level listen load local location lock " +
			"locked logged mapping match matched materialized maxvalue merge " +
			"method minute minvalue mode month move name names new next nfc " +
			"nfd nfkc nfkd no normalized nothing notify nowait nulls object " +
			"of off oids old operator option options ordinality others over " +
			"overriding owned owner parallel parameter parser partial " +
			"partition passing password plans policy preceding prepare " +
			"prepared preserve prior privileges procedural procedure " +
			"procedures program publication quote range read reassign recheck " +
			"recursive ref referencing refresh reindex relative release " +
			"rename repeatable replace replica reset restart restrict return " +
			"returns revoke role rollback rollup routine routines rows rule " +
			"savepoint schema schemas scroll search second security sequence " +
			"sequences serializable server session set sets share show simple " +
			"skip snapshot sql stable standalone start statement statistics " +
			"stdin stdout storage stored strict strip subscription support " +
			"sysid system tables tablespace temp template temporary text ties " +
			"transaction transform trigger truncate trusted type types " +
			"uescape unbounded uncommitted unencrypted unknown unlisten " +
			"unlogged until update vacuum valid validate validator value " +
			"varying version view views volatile whitespace within without " +
			"work wrapper write xml year yes zone",
	} {
		for _, w := range strings.Fields(words) {
			m[w] = cat
		}
	}
	return m
}()
