package catalog

// Statements renders the package's statements, with every call in
// Inspect's second, for the tests that check them.
func Statements() ([]string, error) {
	functions, err := render("functions", nil)
	if err != nil {
		return nil, err
	}
	reads, err := render("reads", readsData)
	if err != nil {
		return nil, err
	}
	copies, err := render("citus_copies", nil)
	if err != nil {
		return nil, err
	}
	out := []string{functions, reads, copies}
	for _, name := range []string{"control_permitted", "system_identifier", "database"} {
		stmt, err := render(name, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, stmt)
	}
	return out, nil
}

// FleetTargetOf is the fleet check's target of what Inspect read (in) in
// the database called database, whose server, database and schema key
// names: a target as ReadDatabase makes it, without a database.
var FleetTargetOf = fleetTarget
