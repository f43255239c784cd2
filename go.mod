module github.com/weft-ml/weft

go 1.26

require (
	golang.org/x/sys v0.38.0
	gonum.org/v1/gonum v0.16.0
)
