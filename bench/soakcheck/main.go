// Command soakcheck is the counting half of bench/soak.sh: it generates the
// input, stands between llmbatch and `llmbatch mock serve` counting every
// request per prompt (and resetting some connections), snapshots what is
// durable before each run, and finally checks the exactly-once invariant of
// DESIGN §3.
//
//	soakcheck gen -n N -o in.jsonl
//	soakcheck proxy -upstream URL -addr-file F [-reset-rate R]   # until SIGTERM
//	soakcheck snap -proxy URL -results out.jsonl -o snap.json
//	soakcheck check -proxy URL -input in.jsonl -results out.jsonl -snaps 'dir/snap-*.json' -kills K
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: soakcheck gen|proxy|snap|check [flags]")
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{"gen": gen, "proxy": proxy, "snap": snap, "check": check}
	run, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "soakcheck: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "soakcheck:", err)
		os.Exit(1)
	}
}

// prompt is the prompt of item i: unique within the mock's 200-byte echo,
// and long enough that result lines tear at kills.
func prompt(i int) string {
	return fmt.Sprintf("soak item %d: %s", i, strings.Repeat("lorem ipsum ", 15))
}

func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	n := fs.Int("n", 20000, "items")
	out := fs.String("o", "in.jsonl", "input file to write")
	fs.Parse(args)
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i := 1; i <= *n; i++ {
		b, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("s-%d", i), "prompt": prompt(i)})
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// counter counts chat requests per prompt.
type counter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *counter) add(prompt string) {
	c.mu.Lock()
	c.counts[prompt]++
	c.mu.Unlock()
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	b, err := json.Marshal(c.counts)
	c.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	w.Write(b)
}

func lastUser(body []byte) string {
	var req llm.ChatRequest
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	p := ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			p = llm.TextContent(m.Content)
		}
	}
	return p
}

// proxy forwards /v1 to the upstream mock, counting each request before it
// goes on; a share of them (reset-rate) has its connection reset instead,
// after the request was read: the client cannot tell whether it was
// processed. GET /_counts returns the counts.
func proxy(args []string) error {
	fs := flag.NewFlagSet("proxy", flag.ExitOnError)
	upstream := fs.String("upstream", "", "the mock's base URL, e.g. http://127.0.0.1:8080/v1")
	addrFile := fs.String("addr-file", "", "write the proxy's base URL here once listening")
	resetRate := fs.Float64("reset-rate", 0.02, "share of requests answered with a connection reset")
	fs.Parse(args)
	u, err := url.Parse(*upstream)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-upstream %q: not a URL", *upstream)
	}
	u.Path = ""
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) { w.WriteHeader(http.StatusBadGateway) }
	c := &counter{counts: map[string]int{}}
	var rmu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	mux := http.NewServeMux()
	mux.Handle("GET /_counts", c)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.add(lastUser(body))
		rmu.Lock()
		reset := rng.Float64() < *resetRate
		rmu.Unlock()
		if reset {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					tc.SetLinger(0)
				}
				conn.Close()
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	if err := os.WriteFile(*addrFile, []byte(base+"\n"), 0o600); err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

func getCounts(proxyURL string) (map[string]int, error) {
	res, err := http.Get(proxyURL + "/_counts")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	counts := map[string]int{}
	return counts, json.NewDecoder(res.Body).Decode(&counts)
}

// resultLines reads the complete lines (ending in a newline) of a results
// file: each id with its outputs, and whether the file ends in a torn line.
func resultLines(path string) (outputs map[string][]string, torn bool, bad int, err error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string][]string{}, false, 0, nil
	} else if err != nil {
		return nil, false, 0, err
	}
	outputs = map[string][]string{}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return outputs, true, bad, nil
		}
		var r struct {
			ID     *string `json:"id"`
			Output *string `json:"output"`
		}
		if json.Unmarshal(data[:i], &r) != nil || r.ID == nil || r.Output == nil {
			bad++
		} else {
			outputs[*r.ID] = append(outputs[*r.ID], *r.Output)
		}
		data = data[i+1:]
	}
	return outputs, false, bad, nil
}

// snapshot is what was durable, and how often each prompt had been
// requested, when a run started.
type snapshot struct {
	Durable []string       `json:"durable"`
	Counts  map[string]int `json:"counts"`
}

func snap(args []string) error {
	fs := flag.NewFlagSet("snap", flag.ExitOnError)
	proxyURL := fs.String("proxy", "", "the proxy's base URL")
	results := fs.String("results", "", "the results file")
	out := fs.String("o", "", "snapshot file to write")
	fs.Parse(args)
	outputs, _, _, err := resultLines(*results)
	if err != nil {
		return err
	}
	s := snapshot{}
	for id := range outputs {
		s.Durable = append(s.Durable, id)
	}
	if s.Counts, err = getCounts(*proxyURL); err != nil {
		return err
	}
	b, _ := json.Marshal(s)
	return os.WriteFile(*out, b, 0o600)
}

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	proxyURL := fs.String("proxy", "", "the proxy's base URL")
	input := fs.String("input", "", "the input file")
	results := fs.String("results", "", "the results file")
	errorsFile := fs.String("errors", "", "the errors file")
	snaps := fs.String("snaps", "", "glob of the snapshots taken before each run")
	kills := fs.Int("kills", 0, "SIGKILLs that landed (for the report)")
	fs.Parse(args)

	prompts := map[string]string{}
	f, err := os.Open(*input)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct{ ID, Prompt string }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("input: %v", err)
		}
		prompts[r.ID] = r.Prompt
	}
	f.Close()

	outputs, torn, bad, err := resultLines(*results)
	if err != nil {
		return err
	}
	lost, duplicated, wrong, unknown := 0, 0, 0, 0
	for id, p := range prompts {
		outs := outputs[id]
		switch {
		case len(outs) == 0:
			lost++
		case len(outs) > 1:
			duplicated++
		}
		for _, o := range outs {
			if o != mock.Answer(p) {
				wrong++
			}
		}
	}
	for id := range outputs {
		if _, ok := prompts[id]; !ok {
			unknown++
		}
	}

	final, err := getCounts(*proxyURL)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(*snaps)
	if err != nil {
		return err
	}
	sort.Strings(files)
	resent := 0
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		var s snapshot
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		for _, id := range s.Durable {
			if p := prompts[id]; final[p] > s.Counts[p] {
				resent++
				if resent <= 5 {
					fmt.Fprintf(os.Stderr, "soakcheck: %s was durable before the run of %s, yet requested %d more times\n",
						id, filepath.Base(name), final[p]-s.Counts[p])
				}
			}
		}
	}
	requests := 0
	for _, n := range final {
		requests += n
	}
	errLines := 0
	if b, err := os.ReadFile(*errorsFile); err == nil {
		errLines = bytes.Count(b, []byte("\n"))
	}
	fmt.Printf("kills=%d runs=%d items=%d results=%d lost=%d duplicated=%d wrong=%d unknown=%d bad_lines=%d torn=%v error_lines=%d resent_durable=%d requests=%d\n",
		*kills, len(files), len(prompts), len(outputs), lost, duplicated, wrong, unknown, bad, torn, errLines, resent, requests)
	if lost+duplicated+wrong+unknown+bad+resent+errLines > 0 || torn {
		return fmt.Errorf("the exactly-once invariant does not hold")
	}
	return nil
}
