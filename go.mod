module github.com/weft-ml/weft

go 1.26

require (
	github.com/ebitengine/purego v0.11.3
	github.com/google/shlex v0.0.0-20191202100458-e7afc7fbc510
	github.com/stretchr/testify v1.11.1
	golang.org/x/sys v0.38.0
	gonum.org/v1/gonum v0.16.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
