package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/shlex"

	"github.com/weft-ml/weft/chat"
	"github.com/weft-ml/weft/internal/safefile"
	"github.com/weft-ml/weft/runtime/sample"
)

const chatHelp = `Commands:
  /set temperature F   sampling temperature (0: greedy); also top_k N, top_p F, min_p F,
                       repeat_penalty F, repeat_last_n N, seed N, num_predict N (most tokens a reply)
  /set system "TEXT"   system message ("" removes it)
  /set stop "S" ...    extra strings a reply stops at (none: clear them)
  /set verbose|quiet   show (or not) token counts and speeds after each reply
  /show                model, template, parameters and conversation size
  /show prompt         the conversation as the template renders it
  /clear               forget the conversation (the system message stays)
  /save FILE           write the conversation and parameters as JSON
  /load FILE           read a conversation written by /save
  /help, /?            this help
  /bye                 exit (so does Ctrl-D)
Start and end a message with """ to write several lines. Ctrl-C stops a reply.`

// command runs a slash command; quit reports /bye.
func (r *repl) command(line string) (quit bool) {
	args, err := shlex.Split(line)
	if err != nil || len(args) == 0 {
		fmt.Fprintf(r.errOut, "cannot read the command: %v\n", err)
		return false
	}
	switch args[0] {
	case "/bye", "/exit", "/quit":
		return true
	case "/help", "/?":
		fmt.Fprintln(r.out, chatHelp)
	case "/set":
		err = r.set(args[1:])
	case "/show":
		err = r.show(args[1:])
	case "/clear":
		sys := r.system()
		r.msgs = nil
		r.setSystem(sys)
		err = r.s.Reset()
		if err == nil {
			fmt.Fprintln(r.out, "Cleared the conversation.")
		}
	case "/save":
		err = r.save(args[1:])
	case "/load":
		err = r.load(args[1:])
	default:
		err = fmt.Errorf("unknown command %s: /? lists them", args[0])
	}
	if err != nil {
		fmt.Fprintln(r.errOut, err)
	}
	return false
}

// set changes one parameter (ollama's names, and llama.cpp's spellings).
func (r *repl) set(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: /set NAME VALUE (/? lists the names)")
	}
	name, vals := args[0], args[1:]
	switch name {
	case "system":
		r.setSystem(strings.Join(vals, " "))
		fmt.Fprintln(r.out, "Set the system message.")
		return nil
	case "verbose", "quiet":
		r.verbose = name == "verbose"
		fmt.Fprintf(r.out, "Set %s mode.\n", name)
		return nil
	case "stop":
		r.params.Stops = append([]string(nil), vals...)
		fmt.Fprintf(r.out, "Set the stop strings to %q.\n", r.params.Stops)
		return nil
	}
	if len(vals) != 1 {
		return fmt.Errorf("usage: /set %s VALUE", name)
	}
	if err := r.setNumber(name, vals[0]); err != nil {
		return err
	}
	r.params.normalize(r.s.Context())
	fmt.Fprintf(r.out, "Set %s to %s.\n", name, vals[0])
	return nil
}

func (r *repl) setNumber(name, v string) error {
	sp := &r.params.Sampling
	floats := map[string]*float32{"temperature": &sp.Temp, "temp": &sp.Temp, "top_p": &sp.TopP, "min_p": &sp.MinP,
		"repeat_penalty": &sp.RepeatPenalty, "presence_penalty": &sp.PresencePenalty, "frequency_penalty": &sp.FrequencyPenalty}
	ints := map[string]*int{"top_k": &sp.TopK, "repeat_last_n": &sp.RepeatLastN, "num_predict": &r.params.MaxTokens, "max_tokens": &r.params.MaxTokens}
	switch {
	case floats[name] != nil:
		old := *floats[name]
		if err := (float32Flag{floats[name]}).Set(v); err != nil {
			return err
		}
		if err := r.checkSampling(); err != nil {
			*floats[name] = old
			return err
		}
	case ints[name] != nil:
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%s needs an integer, not %q", name, v)
		}
		old := *ints[name]
		*ints[name] = n
		if err := r.checkSampling(); err != nil {
			*ints[name] = old
			return err
		}
	case name == "seed":
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("seed needs a non-negative integer, not %q", v)
		}
		sp.Seed, r.turns = n, 0
	default:
		return fmt.Errorf("unknown parameter %q (/? lists them)", name)
	}
	return nil
}

// checkSampling refuses settings the sampler would refuse at the next
// reply, so the error comes with the /set that caused it.
func (r *repl) checkSampling() error {
	p := r.params.Sampling
	if p.Temp < 0 {
		p.Temp = 0
	}
	if p.RepeatLastN < 0 {
		p.RepeatLastN = r.s.Context()
	}
	_, err := sample.New(p, r.m.VocabSize())
	return err
}

func (r *repl) show(args []string) error {
	if len(args) == 1 && args[0] == "prompt" {
		text, err := r.tmpl.Render(r.msgs, true)
		if err != nil {
			return err
		}
		fmt.Fprintln(r.out, text)
		return nil
	}
	if len(args) != 0 {
		return fmt.Errorf("usage: /show or /show prompt")
	}
	p := r.params
	sp := p.Sampling
	fmt.Fprintf(r.out, "Model: %s (%s, backend %s)\n", r.model, r.m.File.Architecture(), r.m.Backend)
	fmt.Fprintf(r.out, "Template: %s\n", r.tmpl.Name())
	fmt.Fprintf(r.out, "Stops: %q\n", append(r.tmpl.Stops(), p.Stops...))
	fmt.Fprintf(r.out, "Parameters: temperature %g, top_k %d, top_p %g, min_p %g, repeat_penalty %g, repeat_last_n %d, seed %d, num_predict %d\n",
		sp.Temp, sp.TopK, sp.TopP, sp.MinP, sp.RepeatPenalty, sp.RepeatLastN, sp.Seed, p.MaxTokens)
	fmt.Fprintf(r.out, "System: %q\n", r.system())
	fmt.Fprintf(r.out, "Conversation: %d messages, %d of %d context tokens in the KV cache\n", len(r.msgs), r.s.Pos(), r.s.Context())
	return nil
}

// savedChat is the /save file.
type savedChat struct {
	Model      string         `json:"model"`
	Template   string         `json:"template"`
	Parameters savedParams    `json:"parameters"`
	Messages   []chat.Message `json:"messages"`
}

// savedParams are chatParams under the names /set takes.
type savedParams struct {
	Temperature      float32  `json:"temperature"`
	TopK             int      `json:"top_k"`
	TopP             float32  `json:"top_p"`
	MinP             float32  `json:"min_p"`
	RepeatPenalty    float32  `json:"repeat_penalty"`
	RepeatLastN      int      `json:"repeat_last_n"`
	PresencePenalty  float32  `json:"presence_penalty"`
	FrequencyPenalty float32  `json:"frequency_penalty"`
	Seed             uint64   `json:"seed"`
	NumPredict       int      `json:"num_predict"`
	Stop             []string `json:"stop,omitempty"`
}

func toSaved(p chatParams) savedParams {
	s := p.Sampling
	return savedParams{s.Temp, s.TopK, s.TopP, s.MinP, s.RepeatPenalty, s.RepeatLastN, s.PresencePenalty, s.FrequencyPenalty, s.Seed, p.MaxTokens, p.Stops}
}

func fromSaved(s savedParams) chatParams {
	return chatParams{Sampling: sample.Params{Temp: s.Temperature, TopK: s.TopK, TopP: s.TopP, MinP: s.MinP, RepeatPenalty: s.RepeatPenalty,
		RepeatLastN: s.RepeatLastN, PresencePenalty: s.PresencePenalty, FrequencyPenalty: s.FrequencyPenalty, Seed: s.Seed},
		MaxTokens: s.NumPredict, Stops: s.Stop}
}

// maxSaved bounds what /load reads.
const maxSaved = 64 << 20

func (r *repl) save(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: /save FILE")
	}
	data, err := json.MarshalIndent(savedChat{Model: r.model, Template: r.tmpl.Name(), Parameters: toSaved(r.params), Messages: r.msgs}, "", "  ")
	if err != nil {
		return err
	}
	// Never over the model or its weights, atomically (internal/safefile).
	if err := safefile.WriteFile(args[0], append(data, '\n'), append(r.m.Files(), r.model)...); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "Saved %d messages to %s.\n", len(r.msgs), args[0])
	return nil
}

func (r *repl) load(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: /load FILE")
	}
	data, err := safefile.ReadLimited(args[0], "conversation", maxSaved)
	if err != nil {
		return err
	}
	msgs, params, err := parseSaved(data, r.params, r.m.VocabSize())
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	r.msgs, r.params, r.turns = msgs, params, 0
	r.params.normalize(r.s.Context())
	fmt.Fprintf(r.out, "Loaded %d messages from %s.\n", len(r.msgs), args[0])
	return nil
}

// parseSaved reads a /save file; parameters it leaves out keep their
// values in cur, and the sampler must accept the result.
func parseSaved(data []byte, cur chatParams, vocab int) ([]chat.Message, chatParams, error) {
	sc := savedChat{Parameters: toSaved(cur)}
	if err := json.Unmarshal(data, &sc); err != nil {
		return nil, cur, fmt.Errorf("not a saved conversation: %w", err)
	}
	for i, m := range sc.Messages {
		if m.Role == "" {
			return nil, cur, fmt.Errorf("message %d has no role", i+1)
		}
	}
	params := fromSaved(sc.Parameters)
	if _, err := sample.New(params.Sampling, vocab); err != nil {
		return nil, cur, err
	}
	return sc.Messages, params, nil
}
