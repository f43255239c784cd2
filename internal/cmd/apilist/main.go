// Command apilist writes weft's exported Go surface (see internal/apilist)
// to stdout or, with -o, to a file: `make api` rewrites api.txt with it.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/weft-ml/weft/internal/apilist"
	"github.com/weft-ml/weft/internal/safefile"
)

func main() {
	out := flag.String("o", "", "write the listing to this file instead of stdout")
	root := flag.String("root", ".", "the module's root directory")
	flag.Parse()
	lines, err := apilist.List(*root, "github.com/weft-ml/weft")
	if err != nil {
		fmt.Fprintf(os.Stderr, "apilist: %v\n", err)
		os.Exit(1)
	}
	text := strings.Join(lines, "\n") + "\n"
	if *out == "" {
		fmt.Print(text)
		return
	}
	if err := safefile.WriteFile(*out, []byte(text)); err != nil {
		fmt.Fprintf(os.Stderr, "apilist: %v\n", err)
		os.Exit(1)
	}
}
