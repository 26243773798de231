package catalog

// Statements renders Inspect's statements, with every call in the second,
// for the tests that check them.
func Statements() ([]string, error) {
	functions, err := render("functions", nil)
	if err != nil {
		return nil, err
	}
	calls, err := render("calls", struct {
		Schema                string
		Layout, Release, Node bool
	}{Public.Quoted(), true, true, true})
	return []string{functions, calls}, err
}
