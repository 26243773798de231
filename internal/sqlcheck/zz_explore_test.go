package sqlcheck

import "os"

func testCheck(sql []byte, o Options) []Finding {
	if os.Getenv("NEW") != "" {
		return CheckTree(sql, o)
	}
	return Check(sql, o)
}
