module github.com/weft-ml/weft/codegen

go 1.26

require (
	github.com/dave/jennifer v1.7.1
	github.com/mmcloughlin/avo v0.6.0
)

require (
	golang.org/x/mod v0.22.0 // indirect
	golang.org/x/sync v0.10.0 // indirect
	golang.org/x/tools v0.28.0 // indirect
)
