module github.com/sfgen/sfgen

go 1.26.8
