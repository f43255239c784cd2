package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/safefile"
	"github.com/weft-ml/weft/model/tokenizer"
)

func init() {
	register(&command{
		name:    "tokenize",
		usage:   "MODEL.gguf [--no-bos] [--special] [--pieces] [--file F | TEXT]",
		summary: "print the token ids of a text (JSON array), or id and piece per line",
		run:     runTokenize,
	})
}

type tokenizeOptions struct {
	noBOS, special, pieces bool
	file                   string
}

func runTokenize(args []string) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	var o tokenizeOptions
	fs.BoolVar(&o.noBOS, "no-bos", false, "do not add BOS/EOS even if the model asks for them")
	fs.BoolVar(&o.special, "special", false, "turn special-token text such as <s> into those tokens")
	fs.BoolVar(&o.pieces, "pieces", false, "print one id<TAB>piece line per token (piece Go-quoted)")
	fs.StringVar(&o.file, "file", "", "read the text from `F` (- for standard input) instead of TEXT")
	flagArgs, positional := splitArgs(args, map[string]bool{"file": true})
	if err := fs.Parse(flagArgs); err != nil {
		return err
	}
	if len(positional) == 0 {
		return errors.New("missing MODEL.gguf")
	}
	text, err := tokenizeInput(o.file, positional[1:])
	if err != nil {
		return err
	}
	f, err := gguf.Open(positional[0])
	if err != nil {
		return err
	}
	defer f.Close()
	tk, err := tokenizer.FromGGUF(f)
	if err != nil {
		return err
	}
	ids, err := tk.Encode(text, !o.noBOS, o.special)
	if err != nil {
		return err
	}
	return printTokens(os.Stdout, tk, ids, o.pieces)
}

// splitArgs separates flags (with the values of valued flags) from
// positional arguments, so flags may follow the model path; "--" ends flags.
func splitArgs(args []string, valued map[string]bool) (flags, positional []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, append(positional, args[i+1:]...)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if valued[name] && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			positional = append(positional, a)
		}
	}
	return flags, positional
}

func tokenizeInput(file string, words []string) (string, error) {
	switch {
	case file != "" && len(words) > 0:
		return "", errors.New("give either --file or TEXT, not both")
	case file != "":
		return safefile.ReadText(file, "text file")
	case len(words) == 0:
		return "", errors.New("missing TEXT (or --file F)")
	}
	return strings.Join(words, " "), nil
}

func printTokens(w io.Writer, tk *tokenizer.Tokenizer, ids []int32, pieces bool) error {
	bw := bufio.NewWriter(w)
	if pieces {
		for _, id := range ids {
			fmt.Fprintf(bw, "%d\t%s\n", id, strconv.Quote(string(tk.PieceSpecial(id))))
		}
	} else {
		if ids == nil {
			ids = []int32{}
		}
		b, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		bw.Write(append(b, '\n'))
	}
	return bw.Flush()
}
