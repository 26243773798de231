// Package attack holds no code. Its tests replay, against a real
// PostgreSQL, the attacks that sfgen's SQL and install must withstand:
// look-alike operators that hijack the functions' bodies (and, through a
// superuser who calls them, make the attacker a superuser), index
// corruption by an INSERT-only role with its own operators, objects
// squatted under sfgen's names before the install, a role with nothing
// but CONNECT stalling snowflake_next_id(), overloads that make sfgen's
// own calls ambiguous, a node out of range accepted under a hostile
// search_path, and another role's code that sfgen's commands would run
// as a superuser (a CHECK, an index, a trigger ... of a table convert
// rewrites or resume reads).
//
// Each attack is a helper that reports whether it succeeded and what the
// attacker achieved, run by a table-driven test over sfgen's releases:
// on release 1 (released.Script(o, 1), as migrations/00001 froze it)
// every attack must succeed, which proves that the test can tell; on
// release 2 every attack must fail.
package attack
