module github.com/weft-ml/weft

go 1.26

require (
	golang.org/x/sys v0.38.0
	gonum.org/v1/gonum v0.16.0
)

require (
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
)
