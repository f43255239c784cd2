package main

import (
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/weft-ml/weft/internal/safefile"
)

// command is one graphc subcommand.
type command struct {
	name    string
	usage   string // one line: arguments and flags
	summary string
	run     func(args []string) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		printUsage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "graphc: unknown command %q (run 'graphc help')\n", os.Args[1])
		os.Exit(2)
	}
	go removeTempsOnSignal(c.name)
	if err := c.run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "graphc %s: %v\n", c.name, err)
		os.Exit(1)
	}
}

func printUsage() {
	fmt.Fprintln(os.Stderr, "usage: graphc COMMAND [arguments]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n             graphc %s %s\n", n, commands[n].summary, n, commands[n].usage)
	}
}

// removeTempsOnSignal makes Ctrl-C or SIGTERM leave the user's files as
// they were: the temporary files of unfinished outputs are removed (the
// outputs themselves are only ever replaced by a rename) and graphc exits
// with 128+signal.
func removeTempsOnSignal(name string) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	sig := <-sigs
	safefile.RemoveTemps()
	fmt.Fprintf(os.Stderr, "graphc %s: interrupted (%v): unfinished output removed, existing files unchanged\n", name, sig)
	code := 130
	if sig == syscall.SIGTERM {
		code = 143
	}
	os.Exit(code)
}
