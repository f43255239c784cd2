package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/chat"
	"github.com/weft-ml/weft/runtime"
)

// syncBuffer is a bytes.Buffer the REPL writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// chatRun is graphrun chat running in this process, fed through a pipe,
// with Ctrl-C delivered on sigs.
type chatRun struct {
	in          *io.PipeWriter
	out, errOut *syncBuffer
	sigs        chan os.Signal
	done        chan error
}

func startChat(t *testing.T, args ...string) *chatRun {
	t.Helper()
	pr, pw := io.Pipe()
	c := &chatRun{in: pw, out: &syncBuffer{}, errOut: &syncBuffer{}, sigs: make(chan os.Signal, 1), done: make(chan error, 1)}
	go func() {
		c.done <- runChat(context.Background(), append([]string{stories(t)}, args...), pr, c.out, c.errOut, c.sigs)
	}()
	t.Cleanup(func() { pw.Close() })
	c.waitPrompts(t, 1)
	return c
}

// waitPrompts waits until the REPL has asked for input n times.
func (c *chatRun) waitPrompts(t *testing.T, n int) {
	t.Helper()
	c.waitFor(t, "prompt", func(out, _ string) bool { return strings.Count(out, promptMain)+strings.Count(out, promptMore) >= n })
}

func (c *chatRun) waitFor(t *testing.T, what string, ready func(out, errOut string) bool) {
	t.Helper()
	deadline := time.Now().Add(chatWithin)
	for !ready(c.out.String(), c.errOut.String()) {
		select {
		case err := <-c.done:
			t.Fatalf("chat ended (%v) before %s; stdout %q, stderr %q", err, what, lastBytes(c.out.String()), lastBytes(c.errOut.String()))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v; stdout %q", what, chatWithin, lastBytes(c.out.String()))
		}
	}
}

func (c *chatRun) prompts() int {
	out := c.out.String()
	return strings.Count(out, promptMain) + strings.Count(out, promptMore)
}

// say sends one line and waits for the next prompt, returning what was
// written to stdout meanwhile (without the prompt).
func (c *chatRun) say(t *testing.T, line string) string {
	t.Helper()
	n, before := c.prompts(), len(c.out.String())
	_, err := io.WriteString(c.in, line+"\n")
	require.NoError(t, err)
	c.waitPrompts(t, n+1)
	out := c.out.String()[before:]
	return strings.TrimSuffix(strings.TrimSuffix(out, promptMain), promptMore)
}

// end closes the input (Ctrl-D) and returns runChat's result.
func (c *chatRun) end(t *testing.T) error {
	t.Helper()
	c.in.Close()
	select {
	case err := <-c.done:
		return err
	case <-time.After(chatWithin):
		t.Fatal("chat did not end at the end of its input")
	}
	return nil
}

// TestChatSession is a scripted conversation on stories260K (no chat
// template: the llama-2 fallback, announced): replies, multi-line input,
// /set, /show, /clear, /save and /load, and Ctrl-D.
func TestChatSession(t *testing.T) {
	c := startChat(t, "-n", "12", "--temp", "0", "--seed", "1", "--ctx", "512")
	assert.Contains(t, c.errOut.String(), "note: no usable chat template in the model; using llama-2 (fallback: the file has no tokenizer.chat_template")

	reply := c.say(t, "Once upon a time")
	assert.NotEmpty(t, strings.TrimSpace(reply), "a reply was streamed")
	assert.True(t, strings.HasSuffix(reply, "\n"))
	assert.Equal(t, "Set verbose mode.\n", c.say(t, "/set verbose"))
	c.say(t, "And then?")
	assert.Regexp(t, `\[prompt: [1-9][0-9]* tokens reused from the KV cache, [0-9]+ evaluated`, c.errOut.String(), "the second turn reuses the first")
	c.say(t, "/set quiet")

	c.say(t, `"""`)
	c.say(t, "Tell me")
	c.say(t, `a story"""`)
	prompt := c.say(t, "/show prompt")
	assert.Contains(t, prompt, "[INST] Once upon a time [/INST]")
	assert.Contains(t, prompt, "[INST] And then? [/INST]")
	assert.Contains(t, prompt, "[INST] Tell me\na story [/INST]", "the multi-line message is one message")

	assert.Equal(t, "Set temperature to 0.7.\n", c.say(t, "/set temperature 0.7"))
	c.say(t, "/set top_k 20")
	c.say(t, `/set system "You are a pirate."`)
	assert.Equal(t, "Set the stop strings to [\"a b\"].\n", c.say(t, `/set stop "a b"`))
	show := c.say(t, "/show")
	assert.Contains(t, show, "Template: llama-2 (fallback")
	assert.Contains(t, show, "temperature 0.7, top_k 20")
	assert.Contains(t, show, `System: "You are a pirate."`)
	assert.Contains(t, show, `"</s>" "a b"`)
	assert.Contains(t, show, "Conversation: 7 messages")
	assert.Contains(t, c.say(t, "/show prompt"), "[INST] <<SYS>>\nYou are a pirate.\n<</SYS>>\n\nOnce upon a time [/INST]")

	file := filepath.Join(t.TempDir(), "chat.json")
	assert.Equal(t, "Saved 7 messages to "+file+".\n", c.say(t, "/save "+file))
	var saved savedChat
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &saved))
	assert.Equal(t, chat.Message{Role: "system", Content: "You are a pirate."}, saved.Messages[0])
	assert.Equal(t, chat.Message{Role: "user", Content: "Tell me\na story"}, saved.Messages[5])
	assert.Equal(t, float32(0.7), saved.Parameters.Temperature)
	assert.Equal(t, []string{"a b"}, saved.Parameters.Stop)

	assert.Equal(t, "Cleared the conversation.\n", c.say(t, "/clear"))
	assert.Contains(t, c.say(t, "/show"), "Conversation: 1 messages, 0 of 512")
	c.say(t, "/set temperature 0")
	assert.Equal(t, "Loaded 7 messages from "+file+".\n", c.say(t, "/load "+file))
	show = c.say(t, "/show")
	assert.Contains(t, show, "Conversation: 7 messages")
	assert.Contains(t, show, "temperature 0.7", "/load restores the parameters")

	c.say(t, "/save "+stories(t))
	assert.Contains(t, c.errOut.String(), "refusing to write", "/save never overwrites the model")
	c.say(t, "/set nonsense 1")
	c.say(t, "/frobnicate")
	c.say(t, `/set system "unterminated`)
	errOut := c.errOut.String()
	assert.Contains(t, errOut, `unknown parameter "nonsense"`)
	assert.Contains(t, errOut, "unknown command /frobnicate")
	assert.Contains(t, errOut, "cannot read the command")
	assert.Contains(t, c.say(t, "/?"), "/set temperature")

	require.NoError(t, c.end(t), "Ctrl-D exits cleanly")
	assert.True(t, strings.HasSuffix(c.out.String(), promptMain+"\n"))
}

// TestChatInterrupt: Ctrl-C stops the reply being written, which is kept
// as far as it went; the chat goes on. At the prompt it only says how to
// exit.
func TestChatInterrupt(t *testing.T) {
	c := startChat(t, "--ignore-eos", "-n", "1000000", "--ctx", "100000", "--seed", "1")
	before := len(c.out.String())
	_, err := io.WriteString(c.in, "Once upon a time\n")
	require.NoError(t, err)
	c.waitFor(t, "streamed text", func(out, _ string) bool { return len(out) > before+200 })
	c.sigs <- os.Interrupt
	c.waitPrompts(t, 2)
	assert.Contains(t, c.errOut.String(), "[stopped]")
	assert.Contains(t, c.say(t, "/show"), "Conversation: 2 messages")

	c.sigs <- os.Interrupt
	c.waitFor(t, "the exit hint", func(_, errOut string) bool { return strings.Contains(errOut, "(Ctrl-D or /bye exits)") })
	c.waitPrompts(t, 4)
	_, err = io.WriteString(c.in, "/bye\n")
	require.NoError(t, err)
	select {
	case err := <-c.done:
		require.NoError(t, err)
	case <-time.After(chatWithin):
		t.Fatal("/bye did not exit")
	}
}

// TestChatTerminate: SIGTERM during a reply ends the program after it.
func TestChatTerminate(t *testing.T) {
	c := startChat(t, "--ignore-eos", "-n", "1000000", "--ctx", "100000")
	before := len(c.out.String())
	_, err := io.WriteString(c.in, "Hello\n")
	require.NoError(t, err)
	c.waitFor(t, "streamed text", func(out, _ string) bool { return len(out) > before+50 })
	c.sigs <- syscall.SIGTERM
	select {
	case err := <-c.done:
		var se *signalError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 143, se.status())
	case <-time.After(chatWithin):
		t.Fatal("SIGTERM did not end the chat")
	}
}

// TestChatContextFull: a message that does not fit says so and suggests
// /clear; the chat goes on.
func TestChatContextFull(t *testing.T) {
	c := startChat(t, "--ctx", "48", "-n", "8")
	c.say(t, strings.Repeat("Once upon a time there was a dog. ", 10))
	assert.Contains(t, c.errOut.String(), "context full: the conversation is")
	assert.Contains(t, c.errOut.String(), "/clear")
	assert.Contains(t, c.say(t, "/show"), "Conversation: 0 messages", "the message that did not fit is taken back")
	c.say(t, "Hi")
	require.NoError(t, c.end(t))

	// A reply that runs into the end of the context is cut with a message;
	// the next message no longer fits.
	c = startChat(t, "--ctx", "48", "--ignore-eos")
	reply := c.say(t, "Hi")
	assert.NotEmpty(t, strings.TrimSpace(reply))
	assert.Contains(t, c.errOut.String(), "[context full: the reply was cut; /clear starts a new conversation]")
	c.say(t, "And then?")
	assert.Contains(t, c.errOut.String(), "context full: the conversation is")
	assert.Contains(t, c.say(t, "/clear"), "Cleared")
	c.say(t, "/set num_predict 3")
	c.say(t, "Hi again")
	assert.Contains(t, c.say(t, "/show"), "Conversation: 2 messages")
	require.NoError(t, c.end(t))
}

// TestChatKeepsKV: the second turn evaluates only what follows the
// prefix the session holds from the first (the reply included).
func TestChatKeepsKV(t *testing.T) {
	m, err := runtime.Open(stories(t), runtime.Options{Threads: 1})
	require.NoError(t, err)
	defer m.Close()
	s, err := m.NewSession(runtime.SessionOptions{Ctx: 512})
	require.NoError(t, err)
	tmpl, err := chat.Named("chatml")
	require.NoError(t, err)
	var out bytes.Buffer
	r := &repl{m: m, s: s, tmpl: tmpl, out: &out, errOut: &out, params: chatParams{MaxTokens: 10}}
	r.msgs = []chat.Message{{Role: "user", Content: "Once upon a time"}}
	r.reply(context.Background())
	require.Len(t, r.msgs, 2)
	held := s.Pos()
	r.msgs = append(r.msgs, chat.Message{Role: "user", Content: "And then?"})
	rest, err := r.promptTokens()
	require.NoError(t, err)
	all, err := m.Tokenizer.Encode(must(tmpl.Render(r.msgs, true)), true, true)
	require.NoError(t, err)
	assert.Greater(t, s.Pos(), held/2, "most of the first turn stays in the KV cache")
	assert.Equal(t, len(all), s.Pos()+len(rest))
	assert.Equal(t, all[:s.Pos()], s.History())
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

func TestMultiline(t *testing.T) {
	var acc []string
	text, done, in := multiline(`"""one"""`, false, &acc)
	assert.Equal(t, "one", text)
	assert.True(t, done)
	assert.False(t, in)
	_, done, in = multiline(`"""first`, false, &acc)
	assert.False(t, done)
	assert.True(t, in)
	_, _, in = multiline("second", true, &acc)
	assert.True(t, in)
	text, done, in = multiline(`third"""`, true, &acc)
	assert.Equal(t, "first\nsecond\nthird", text)
	assert.True(t, done)
	assert.False(t, in)
}

func TestStopFilter(t *testing.T) {
	var shown strings.Builder
	f := newStopFilter([]string{"<|im_end|>", "", "END"}, func(s string) { shown.WriteString(s) })
	require.NoError(t, f.add("Hello <|im"))
	assert.Equal(t, "Hello ", shown.String(), "a possible stop's start is held back")
	require.NoError(t, f.add("_x"))
	assert.Equal(t, "Hello <|im_x", shown.String(), "and shown once it cannot be one")
	assert.ErrorIs(t, f.add(" bye EN"), nil)
	assert.ErrorIs(t, f.add("D and more"), errStopString)
	f.flush()
	assert.Equal(t, "Hello <|im_x bye ", shown.String())
	assert.Equal(t, shown.String(), f.text.String())
	assert.ErrorIs(t, f.add("x"), errStopString)

	shown.Reset()
	g := newStopFilter([]string{"</s>"}, func(s string) { shown.WriteString(s) })
	require.NoError(t, g.add("tail </"))
	g.flush()
	assert.Equal(t, "tail </", shown.String(), "held text is shown when the reply ends")
}

// chatWithin bounds every wait of these tests (a slow, loaded CI machine).
const chatWithin = 60 * time.Second

func lastBytes(s string) string { return s[max(0, len(s)-400):] }

// --template picks a built-in format or a Jinja file; a name that is
// neither is refused with the list of names.
func TestChatTemplateFlag(t *testing.T) {
	c := startChat(t, "--template", "chatml", "--system", "Be brief.")
	assert.Contains(t, c.errOut.String(), "chat template: chatml")
	c.say(t, "/set num_predict 4")
	c.say(t, "Hi")
	assert.Contains(t, c.say(t, "/show prompt"), "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
	require.NoError(t, c.end(t))

	file := filepath.Join(t.TempDir(), "t.jinja")
	require.NoError(t, os.WriteFile(file, []byte("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}"), 0o644))
	c = startChat(t, "--template", file, "-n", "4")
	assert.Contains(t, c.errOut.String(), "chat template: jinja")
	c.say(t, `"""a`)
	c.say(t, `b"""`)
	assert.Contains(t, c.say(t, "/show prompt"), "<user>a\nb<assistant>")
	require.NoError(t, c.end(t))

	err := runChat(context.Background(), []string{stories(t), "--template", "no-such-format"}, strings.NewReader(""), io.Discard, io.Discard, nil)
	require.ErrorIs(t, err, chat.ErrUnknownTemplate)
	assert.ErrorContains(t, err, "chatml")
}
