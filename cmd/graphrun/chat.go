package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/weft-ml/weft/chat"
	"github.com/weft-ml/weft/internal/safefile"
	"github.com/weft-ml/weft/runtime"
	"github.com/weft-ml/weft/runtime/sample"
)

// chatConfig holds the flags of graphrun chat.
type chatConfig struct {
	model, template, system string
	ctx, threads, n         int
	ignoreEOS, verbose      bool
	sampling                sample.Params
	where                   backendFlags
}

func parseChatFlags(args []string) (*chatConfig, error) {
	c := &chatConfig{sampling: sample.DefaultParams()}
	fs := flag.NewFlagSet("graphrun chat", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: graphrun chat MODEL.plan|MODEL.gguf [flags]  (then /? for the commands)")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.template, "template", "", "chat template: a built-in name (chatml, llama-2, llama-3, phi-3, gemma, mistral, …) or a Jinja file (default: the model's)")
	fs.StringVar(&c.system, "system", "", "system message")
	fs.IntVar(&c.ctx, "ctx", 0, "context size in tokens (default: the plan's)")
	fs.IntVar(&c.threads, "threads", 0, "threads (default: all cores)")
	fs.IntVar(&c.n, "n", -1, "most tokens in one reply (-1: until the end of the turn or a full context)")
	fs.BoolVar(&c.ignoreEOS, "ignore-eos", false, "keep generating past end-of-turn tokens (for tests)")
	fs.BoolVar(&c.verbose, "verbose", false, "after each reply, show the tokens evaluated, reused from the KV cache and generated")
	c.where = addBackendFlags(fs)
	sp := &c.sampling
	fs.Var(float32Flag{&sp.Temp}, "temp", "temperature (0: greedy)")
	fs.IntVar(&sp.TopK, "top-k", sp.TopK, "top-k (0: off)")
	fs.Var(float32Flag{&sp.TopP}, "top-p", "top-p (1: off)")
	fs.Var(float32Flag{&sp.MinP}, "min-p", "min-p (0: off)")
	fs.Var(float32Flag{&sp.RepeatPenalty}, "repeat-penalty", "repeat penalty (1: off)")
	fs.Uint64Var(&sp.Seed, "seed", 0, "random seed (default: a new one each run)")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, errUsage
		}
		if args = fs.Args(); len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if len(pos) != 1 {
		fs.Usage()
		return nil, errUsage
	}
	c.model = pos[0]
	seeded := false
	fs.Visit(func(f *flag.Flag) { seeded = seeded || f.Name == "seed" })
	if !seeded {
		c.sampling.Seed = uint64(time.Now().UnixNano())
	}
	return c, nil
}

// chatMain runs graphrun chat with the process's terminal. It handles
// SIGINT itself, unlike main: Ctrl-C stops the reply being written, not
// the program (Ctrl-D or /bye exits); SIGTERM exits after the reply.
func chatMain(args []string) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	err := runChat(context.Background(), args, os.Stdin, os.Stdout, os.Stderr, sigs)
	var se *signalError
	if errors.As(err, &se) {
		return se.status()
	}
	return exitStatus(context.Background(), err, os.Stderr)
}

// runChat loads the model and runs the conversation, reading in until it
// ends or /bye. sigs delivers Ctrl-C (os.Interrupt) and SIGTERM.
func runChat(ctx context.Context, args []string, in io.Reader, stdout, stderr io.Writer, sigs <-chan os.Signal) error {
	c, err := parseChatFlags(args)
	if err != nil {
		return err
	}
	m, err := loadChatModel(ctx, c, stderr, sigs)
	if err != nil {
		return err
	}
	defer m.Close()
	noteBackend(stderr, m)
	s, err := m.NewSession(runtime.SessionOptions{Ctx: c.ctx})
	if err != nil {
		return err
	}
	tmpl, err := chatTemplate(m, c.template)
	if err != nil {
		return err
	}
	r := &repl{m: m, s: s, tmpl: tmpl, model: c.model, out: stdout, errOut: stderr, sigs: sigs,
		params: chatParams{Sampling: c.sampling, MaxTokens: c.n}, ignoreEOS: c.ignoreEOS, verbose: c.verbose}
	r.params.normalize(s.Context())
	if c.system != "" {
		r.setSystem(c.system)
	}
	r.banner()
	return r.loop(ctx, readLines(in))
}

// loadChatModel opens the model; a signal meanwhile gives the load up
// and is returned as the error (exit 128+N).
func loadChatModel(ctx context.Context, c *chatConfig, stderr io.Writer, sigs <-chan os.Signal) (*runtime.Model, error) {
	loadCtx, cancelLoad := context.WithCancelCause(ctx)
	defer cancelLoad(nil)
	loaded := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancelLoad(&signalError{sig})
		case <-loaded:
		}
	}()
	m, err := openModel(loadCtx, c.model, c.where.options(runtime.Options{Threads: c.threads}, stderr))
	close(loaded)
	if cause := context.Cause(loadCtx); err != nil && cause != nil && errors.Is(err, errLoadCancelled) {
		return nil, cause
	}
	return m, err
}

// chatTemplate is the --template choice: a built-in name, a Jinja file,
// or (empty) the model's own.
func chatTemplate(m *runtime.Model, choice string) (*chat.Template, error) {
	if choice == "" {
		return chat.FromModel(m)
	}
	t, err := chat.Named(choice)
	if err == nil || !errors.Is(err, chat.ErrUnknownTemplate) {
		return t, err
	}
	if _, statErr := os.Stat(choice); statErr != nil {
		return nil, err // neither a name nor a file: the error lists the names
	}
	src, err := safefile.ReadText(choice, "chat template")
	if err != nil {
		return nil, err
	}
	tok := m.Tokenizer
	return chat.Parse(src, tok.Text(tok.BOS()), tok.Text(tok.EOS()))
}

// chatParams are the settings /set changes and /save keeps.
type chatParams struct {
	Sampling  sample.Params
	MaxTokens int      // ≤ 0: until the end of the turn
	Stops     []string // besides the template's
}

// normalize applies llama.cpp's conventions (see config.normalizeSampling).
func (p *chatParams) normalize(ctx int) {
	if p.Sampling.RepeatLastN < 0 {
		p.Sampling.RepeatLastN = ctx
	}
	if p.Sampling.Temp < 0 {
		p.Sampling.Temp = 0
	}
}

// A line read from the input, or the error that ended it.
type inputLine struct {
	text string
	err  error
}

// maxLine bounds one input line (a pasted document is fine, an endless
// stream without newlines is not).
const maxLine = 4 << 20

// readLines reads in line by line in the background, so that the REPL can
// wait for a line and a signal at once. The channel closes at the end.
func readLines(in io.Reader) <-chan inputLine {
	ch := make(chan inputLine)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), maxLine)
		for sc.Scan() {
			ch <- inputLine{text: strings.TrimSuffix(sc.Text(), "\r")}
		}
		if err := sc.Err(); err != nil {
			ch <- inputLine{err: err}
		}
	}()
	return ch
}

// repl is one interactive conversation.
type repl struct {
	m         *runtime.Model
	s         *runtime.Session
	tmpl      *chat.Template
	model     string
	msgs      []chat.Message // the conversation, a system message first if set
	params    chatParams
	ignoreEOS bool
	verbose   bool // statistics after each reply
	reused    int  // prompt tokens of the last reply found in the KV cache
	turns     int  // replies so far (varies the seed)
	out       io.Writer
	errOut    io.Writer
	sigs      <-chan os.Signal
	exit      error // set when a signal ends the program
}

func (r *repl) banner() {
	fmt.Fprintf(r.errOut, "graphrun chat: %s (%s, context %d tokens)\n", r.model, r.m.File.Architecture(), r.s.Context())
	if strings.Contains(r.tmpl.Name(), "(fallback") {
		fmt.Fprintf(r.errOut, "note: no usable chat template in the model; using %s\n", r.tmpl.Name())
	} else {
		fmt.Fprintf(r.errOut, "chat template: %s\n", r.tmpl.Name())
	}
	fmt.Fprintln(r.errOut, `Type /? for help, """ to start and end multi-line input, Ctrl-C to stop a reply, Ctrl-D or /bye to exit.`)
}

const (
	promptMain = ">>> "
	promptMore = "... "
)

// loop reads messages and commands until the input ends, /bye, or SIGTERM.
func (r *repl) loop(ctx context.Context, lines <-chan inputLine) error {
	var multi []string // lines of a """ message so far
	inMulti := false
	for {
		if inMulti {
			fmt.Fprint(r.out, promptMore)
		} else {
			fmt.Fprint(r.out, promptMain)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case sig := <-r.sigs:
			if sig == syscall.SIGTERM {
				fmt.Fprintln(r.out)
				return &signalError{sig}
			}
			fmt.Fprintln(r.out)
			fmt.Fprintln(r.errOut, "(Ctrl-D or /bye exits)")
			multi, inMulti = nil, false
		case l, ok := <-lines:
			if !ok { // Ctrl-D
				fmt.Fprintln(r.out)
				return nil
			}
			if l.err != nil {
				return fmt.Errorf("reading input: %w", l.err)
			}
			text, done := l.text, true
			if text, done, inMulti = multiline(text, inMulti, &multi); !done {
				continue
			}
			if quit := r.handle(ctx, text); quit || r.exit != nil {
				return r.exit
			}
		}
	}
}

// multiline collects a """-delimited message: it returns the message and
// done once the closing """ arrives (or at once for an ordinary line).
func multiline(line string, inMulti bool, acc *[]string) (string, bool, bool) {
	const q = `"""`
	if !inMulti {
		if !strings.HasPrefix(line, q) {
			return line, true, false
		}
		rest := line[len(q):]
		if strings.HasSuffix(rest, q) {
			return strings.TrimSuffix(rest, q), true, false
		}
		*acc = nil
		if rest != "" {
			*acc = append(*acc, rest)
		}
		return "", false, true
	}
	if strings.HasSuffix(line, q) {
		if last := strings.TrimSuffix(line, q); last != "" {
			*acc = append(*acc, last)
		}
		text := strings.Join(*acc, "\n")
		*acc = nil
		return text, true, false
	}
	*acc = append(*acc, line)
	return "", false, true
}

// handle runs one command or message; quit reports /bye.
func (r *repl) handle(ctx context.Context, text string) (quit bool) {
	if strings.HasPrefix(strings.TrimSpace(text), "/") {
		return r.command(strings.TrimSpace(text))
	}
	if strings.TrimSpace(text) == "" {
		return false
	}
	r.msgs = append(r.msgs, chat.Message{Role: "user", Content: text})
	r.reply(ctx)
	return false
}

// setSystem replaces (or, with "", removes) the system message.
func (r *repl) setSystem(text string) {
	hasSys := len(r.msgs) > 0 && r.msgs[0].Role == "system"
	switch {
	case text == "" && hasSys:
		r.msgs = r.msgs[1:]
	case text == "":
	case hasSys:
		r.msgs[0].Content = text
	default:
		r.msgs = append([]chat.Message{{Role: "system", Content: text}}, r.msgs...)
	}
}

func (r *repl) system() string {
	if len(r.msgs) > 0 && r.msgs[0].Role == "system" {
		return r.msgs[0].Content
	}
	return ""
}
