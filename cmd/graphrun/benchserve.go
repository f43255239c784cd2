package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// benchServeConfig is what `graphrun bench-serve` is told.
type benchServeConfig struct {
	targets     []benchTarget
	concurrency []int
	requests    int // per level; 0: 2 × concurrency, at least 4
	maxTokens   int
	promptWords int
	rounds      int
	slots       int // streams a server decodes at once; 0: as many as clients
	apiKey      string
	svg, jsonTo string
	timeout     time.Duration
}

// benchTarget is one server under test.
type benchTarget struct{ Label, URL string }

// levelResult is one server at one concurrency level, over all rounds.
type levelResult struct {
	Concurrency int       `json:"concurrency"`
	Requests    int       `json:"requests"`
	Failed      int       `json:"failed"`
	Tokens      int       `json:"output_tokens"`
	TokPerSec   []float64 `json:"output_tok_s"` // one per round
	// DecodePerSec is the rate at which the clients together receive
	// tokens once their first has come: streams × (tokens after the
	// first) / (time after the first), summed over the round's requests,
	// where streams is the clients, or the servers' slots when fewer
	// (the others wait in the queue). It leaves out the time before each
	// request's first token, which TokPerSec includes.
	DecodePerSec []float64 `json:"decode_tok_s"`
	TTFT         []float64 `json:"-"` // seconds, every request
	ITL          []float64 `json:"-"` // seconds, every gap between tokens
	TTFTP50      float64   `json:"ttft_p50_ms"`
	TTFTP95      float64   `json:"ttft_p95_ms"`
	ITLP50       float64   `json:"itl_p50_ms"`
	ITLP95       float64   `json:"itl_p95_ms"`
	TokS         float64   `json:"output_tok_s_median"`
	DecodeTokS   float64   `json:"decode_tok_s_median"`
	Errors       []string  `json:"errors,omitempty"` // the first failure of each round that had one
}

type serverResult struct {
	Label  string         `json:"label"`
	URL    string         `json:"url"`
	Levels []*levelResult `json:"levels"`
}

func parseBenchServe(args []string, stderr io.Writer) (*benchServeConfig, error) {
	fs := flag.NewFlagSet("graphrun bench-serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &benchServeConfig{}
	levels := fs.String("concurrency", "1,2,4,8,16", "concurrent clients, comma-separated levels")
	fs.IntVar(&c.requests, "requests", 0, "requests per level and round (default: 2 × the level, at least 4)")
	fs.IntVar(&c.maxTokens, "max-tokens", 64, "tokens each request generates (ignore_eos: always this many)")
	fs.IntVar(&c.promptWords, "prompt-words", 32, "words of each request's prompt (different prompts: no prefix reuse)")
	fs.IntVar(&c.rounds, "rounds", 1, "rounds; each measures every server at every level, servers alternating")
	labels := fs.String("labels", "", "names of the servers, comma-separated (default: their URLs)")
	fs.IntVar(&c.slots, "slots", 0, "the servers' slots: decode tok/s counts at most this many streams at once (default: the clients)")
	fs.StringVar(&c.apiKey, "api-key", "", "bearer token to send")
	fs.StringVar(&c.svg, "svg", "", "write the chart (SVG) to this file")
	fs.StringVar(&c.jsonTo, "json", "", "write the results (JSON) to this file")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "limit for one request")
	urls, err := parseInterleaved(fs, args)
	if err != nil {
		return nil, errUsage
	}
	if len(urls) == 0 {
		fmt.Fprintln(stderr, "usage: graphrun bench-serve URL [URL…] [--concurrency 1,2,4,8,16] [--requests N] [--max-tokens 64] [--rounds R] [--labels a,b] [--svg F] [--json F]")
		return nil, errUsage
	}
	for _, f := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "graphrun bench-serve: --concurrency %q: want positive integers\n", *levels)
			return nil, errUsage
		}
		c.concurrency = append(c.concurrency, n)
	}
	names := strings.Split(*labels, ",")
	for i, u := range urls {
		label := strings.TrimRight(u, "/")
		if *labels != "" && i < len(names) && names[i] != "" {
			label = names[i]
		}
		c.targets = append(c.targets, benchTarget{Label: label, URL: strings.TrimRight(u, "/")})
	}
	if c.rounds < 1 || c.maxTokens < 1 || c.promptWords < 1 {
		fmt.Fprintln(stderr, "graphrun bench-serve: --rounds, --max-tokens and --prompt-words must be positive")
		return nil, errUsage
	}
	return c, nil
}

// runBenchServe runs `graphrun bench-serve`: closed-loop load at each
// concurrency level (that many clients, each sending its next request
// when the last one ends), streaming completions, measuring the time to
// the first token, the gaps between tokens and the output tokens per
// second of the whole level. With several servers and rounds, the
// servers take turns level by level so that a noisy machine disturbs
// them alike.
func runBenchServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseBenchServe(args, stderr)
	if err != nil {
		return err
	}
	results := make([]*serverResult, len(c.targets))
	for i, t := range c.targets {
		results[i] = &serverResult{Label: t.Label, URL: t.URL}
		for _, n := range c.concurrency {
			results[i].Levels = append(results[i].Levels, &levelResult{Concurrency: n})
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for round := range c.rounds {
		for li, n := range c.concurrency {
			for ti, t := range c.targets {
				if ctx.Err() != nil {
					return finishBenchServe(c, results, stdout, true)
				}
				lv := results[ti].Levels[li]
				fmt.Fprintf(stderr, "round %d/%d, %s, concurrency %d: ", round+1, c.rounds, t.Label, n)
				if err := measureLevel(ctx, client, c, t, n, round, lv); err != nil {
					return err
				}
				fmt.Fprintf(stderr, "%.1f tok/s\n", lv.TokPerSec[len(lv.TokPerSec)-1])
				if len(lv.Errors) > 0 {
					fmt.Fprintf(stderr, "  %d failed so far; this round's first error: %s\n", lv.Failed, lv.Errors[len(lv.Errors)-1])
				}
			}
		}
	}
	return finishBenchServe(c, results, stdout, false)
}

// finishBenchServe summarises, prints the table and writes the files.
func finishBenchServe(c *benchServeConfig, results []*serverResult, stdout io.Writer, cancelled bool) error {
	for _, r := range results {
		for _, lv := range r.Levels {
			lv.summarise()
		}
	}
	printBenchServe(stdout, c, results)
	if cancelled {
		fmt.Fprintln(stdout, "cancelled: the table covers the levels measured before the signal")
	}
	if c.jsonTo != "" {
		b, err := json.MarshalIndent(map[string]any{"max_tokens": c.maxTokens, "prompt_words": c.promptWords, "rounds": c.rounds,
			"env": environment(), "servers": results}, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.jsonTo, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if c.svg != "" {
		return os.WriteFile(c.svg, []byte(benchServeSVG(c, results)), 0o644)
	}
	return nil
}

// measureLevel runs one level once: n clients, the level's requests.
func measureLevel(ctx context.Context, client *http.Client, c *benchServeConfig, t benchTarget, n, round int, lv *levelResult) error {
	total := c.requests
	if total <= 0 {
		total = max(4, 2*n)
	}
	next := make(chan int, total)
	for i := range total {
		next <- i
	}
	close(next)
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		tokens int
		first  error
		decN   int
		decT   float64
	)
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s, err := oneRequest(ctx, client, c, t, benchPrompt(round, n, i, c.promptWords))
				mu.Lock()
				lv.Requests++
				if err != nil {
					lv.Failed++
					if first == nil {
						first = err
					}
				} else {
					tokens += s.tokens
					if s.decode > 0 {
						decN += s.tokens - 1
						decT += s.decode.Seconds()
					}
					lv.TTFT = append(lv.TTFT, s.ttft.Seconds())
					lv.ITL = append(lv.ITL, s.gaps...)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	lv.Tokens += tokens
	lv.TokPerSec = append(lv.TokPerSec, float64(tokens)/wall.Seconds())
	if decT > 0 {
		streams := n
		if c.slots > 0 {
			streams = min(n, c.slots)
		}
		lv.DecodePerSec = append(lv.DecodePerSec, float64(streams)*float64(decN)/decT)
	}
	if first != nil && lv.Failed == lv.Requests {
		return fmt.Errorf("%s: every request failed, the first: %w", t.Label, first)
	}
	if first != nil {
		lv.Errors = append(lv.Errors, first.Error())
	}
	return nil
}

// benchPrompt is a different prompt for every request (so no server
// reuses a cached prefix), of words drawn from a fixed list.
func benchPrompt(round, level, i, words int) string {
	vocab := strings.Fields("the a little girl boy dog cat park tree sun ran jumped saw happy big red ball home friend day played " +
		"mom said went blue bird garden found box water sky green toy smiled looked")
	r := rand.New(rand.NewPCG(uint64(round)<<40|uint64(level)<<20|uint64(i), 7))
	w := make([]string, words)
	for k := range w {
		w[k] = vocab[r.IntN(len(vocab))]
	}
	return fmt.Sprintf("Story %d.%d.%d: %s", round, level, i, strings.Join(w, " "))
}

// reqTiming is one request's timings.
type reqTiming struct {
	ttft   time.Duration
	decode time.Duration // from the first token to the last
	gaps   []float64     // seconds between successive tokens
	tokens int
}

// oneRequest sends a streaming completion and times its chunks. Each
// chunk with text is a token for both weft and llama-server (they stream
// token by token; a token that ends inside a character sends nothing);
// the usage in the last chunk, or max_tokens when the request ended on
// its length, is the count.
func oneRequest(ctx context.Context, client *http.Client, c *benchServeConfig, t benchTarget, prompt string) (reqTiming, error) {
	var s reqTiming
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": c.maxTokens, "stream": true, "temperature": 0,
		"ignore_eos": true, "cache_prompt": false})
	req, err := http.NewRequestWithContext(ctx, "POST", t.URL+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return s, err
	}
	req.Header.Set("Content-Type", "application/json")
	// Marks the POST as safe to resend: Go's client then retries it on a
	// kept-alive connection that the server closed meanwhile (llama-server
	// closes idle ones after a few seconds), instead of failing it.
	req.Header.Set("X-Idempotency-Key", prompt)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return s, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	last, chunks, counted := start, 0, 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Text         string
				FinishReason *string `json:"finish_reason"`
			}
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			}
			Error json.RawMessage
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return s, fmt.Errorf("bad chunk %q: %w", data, err)
		}
		if chunk.Error != nil {
			return s, fmt.Errorf("error chunk: %s", chunk.Error)
		}
		if chunk.Usage != nil {
			counted = chunk.Usage.CompletionTokens
		}
		if len(chunk.Choices) > 0 && chunk.Choices[0].FinishReason != nil && *chunk.Choices[0].FinishReason == "length" && counted == 0 {
			counted = c.maxTokens // ignore_eos: a server that gives no usage made them all
		}
		if len(chunk.Choices) == 0 || chunk.Choices[0].Text == "" {
			continue
		}
		now := time.Now()
		if chunks == 0 {
			s.ttft = now.Sub(start)
		} else {
			s.gaps = append(s.gaps, now.Sub(last).Seconds())
		}
		last = now
		chunks++
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if chunks == 0 && counted == 0 {
		return s, errors.New("no tokens streamed")
	}
	if chunks == 0 { // tokens that made no text (pieces of characters never finished)
		s.ttft = time.Since(start)
	}
	s.tokens, s.decode = chunks, max(0, last.Sub(start)-s.ttft)
	if counted > 0 {
		s.tokens = counted
	}
	return s, nil
}

func (lv *levelResult) summarise() {
	ms := func(v []float64, q float64) float64 { return 1000 * quantile(v, q) }
	lv.TTFTP50, lv.TTFTP95 = ms(lv.TTFT, 0.5), ms(lv.TTFT, 0.95)
	lv.ITLP50, lv.ITLP95 = ms(lv.ITL, 0.5), ms(lv.ITL, 0.95)
	lv.TokS = quantile(lv.TokPerSec, 0.5)
	lv.DecodeTokS = quantile(lv.DecodePerSec, 0.5)
}

// quantile is the q-quantile of v by linear interpolation (0 when empty).
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

func printBenchServe(w io.Writer, c *benchServeConfig, results []*serverResult) {
	fmt.Fprintf(w, "%d-word prompts, %d tokens per request, %d round(s); tok/s: all output tokens over the wall time; "+
		"decode: streams (clients, at most --slots) × tokens after the first over the time after the first; both the median over rounds; latencies over all requests\n",
		c.promptWords, c.maxTokens, c.rounds)
	fmt.Fprintf(w, "%-14s %5s %9s %8s %10s %10s %9s %9s %7s %7s\n", "server", "conc", "requests", "failed", "ttft p50", "ttft p95", "itl p50", "itl p95", "tok/s", "decode")
	for _, r := range results {
		for _, lv := range r.Levels {
			if lv.Requests == 0 {
				continue
			}
			fmt.Fprintf(w, "%-14s %5d %9d %8d %8.0fms %8.0fms %7.1fms %7.1fms %7.1f %7.1f\n", r.Label, lv.Concurrency, lv.Requests, lv.Failed,
				lv.TTFTP50, lv.TTFTP95, lv.ITLP50, lv.ITLP95, lv.TokS, lv.DecodeTokS)
		}
	}
	printRatios(w, results)
}

// printRatios says how each level's throughput compares with the first
// level's (batching's gain) and, with two servers, the first server's
// with the second's at each level.
func printRatios(w io.Writer, results []*serverResult) {
	for _, r := range results {
		if len(r.Levels) < 2 || r.Levels[0].TokS == 0 || r.Levels[0].DecodeTokS == 0 {
			continue
		}
		var parts []string
		for _, lv := range r.Levels[1:] {
			parts = append(parts, fmt.Sprintf("c%d %.2f× (decode %.2f×)", lv.Concurrency, lv.TokS/r.Levels[0].TokS, lv.DecodeTokS/r.Levels[0].DecodeTokS))
		}
		fmt.Fprintf(w, "%s throughput vs c%d: %s\n", r.Label, r.Levels[0].Concurrency, strings.Join(parts, ", "))
	}
	if len(results) < 2 {
		return
	}
	a, b := results[0], results[1]
	var parts []string
	for i, lv := range a.Levels {
		if i < len(b.Levels) && b.Levels[i].TokS > 0 && b.Levels[i].DecodeTokS > 0 {
			parts = append(parts, fmt.Sprintf("c%d %.2f× (decode %.2f×)", lv.Concurrency, lv.TokS/b.Levels[i].TokS, lv.DecodeTokS/b.Levels[i].DecodeTokS))
		}
	}
	fmt.Fprintf(w, "%s / %s throughput: %s\n", a.Label, b.Label, strings.Join(parts, ", "))
}
