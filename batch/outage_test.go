package batch

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// flakyServer serves a handler on one loopback port that can be taken down
// (listener and every connection closed, so that dials are refused) and
// brought up again on the same port, as a server that restarts does.
type flakyServer struct {
	t    *testing.T
	h    http.Handler
	addr string

	mu  sync.Mutex
	srv *http.Server
	wg  sync.WaitGroup // the Serve goroutine
}

func newFlakyServer(t *testing.T, h http.Handler) *flakyServer {
	f := &flakyServer{t: t, h: h, addr: "127.0.0.1:0"}
	f.up()
	t.Cleanup(f.down)
	return f
}

func (f *flakyServer) url() string { return "http://" + f.addr }

func (f *flakyServer) up() {
	f.t.Helper()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		f.t.Fatalf("listen on %s again: %v", f.addr, err)
	}
	f.addr = ln.Addr().String()
	srv := &http.Server{Handler: f.h}
	f.mu.Lock()
	f.srv = srv
	f.mu.Unlock()
	f.wg.Go(func() { srv.Serve(ln) })
}

func (f *flakyServer) down() {
	f.mu.Lock()
	srv := f.srv
	f.srv = nil
	f.mu.Unlock()
	if srv != nil {
		srv.Close()
		f.wg.Wait()
	}
}

// TestRunOutageLeavesItemsForTheRerun: the server goes away mid-run for
// longer than the client's breaker allows (its refusals last 1.5 times
// BreakAfter, as 30 s do for --break-after 20s; the figures are scaled down
// to keep the test short). Items whose attempts ran out on the refusals
// before the breaker tripped are not recorded as failed; the run stops
// with a StopError (exit 3), and the same run afterwards, without
// RetryFailed, finishes every item.
func TestRunOutageLeavesItemsForTheRerun(t *testing.T) {
	const n, breakAfter = 300, 300 * time.Millisecond
	var answers atomic.Int64
	trip := make(chan struct{})
	h := mock.New(mock.Config{Latency: 3 * time.Millisecond})
	fs := newFlakyServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if answers.Add(1) == 40 {
			close(trip)
		}
	}))
	j := newJob(t, mock.New(mock.Config{}), prompts(n)...)
	outage := func(c *Config) {
		lim := llm.NewLimiterConfig(llm.LimiterConfig{})
		// Attempts run out in 3x30 ms, well before the breaker trips.
		cl, err := llm.New(llm.Config{BaseURL: fs.url() + "/v1", Limiter: lim, BreakAfter: breakAfter, MaxAttempts: 4,
			Backoff: func(int) time.Duration { return 30 * time.Millisecond }, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.CloseIdleConnections)
		c.Client = cl
	}
	done := make(chan error, 1)
	var sum *Summary
	go func() {
		var err error
		sum, err = Run(t.Context(), j.config(outage))
		done <- err
	}()
	<-trip
	fs.down()
	downAt := time.Now()
	err := <-done
	var se *StopError
	if ae, ok := errors.AsType[*llm.APIError](err); !errors.As(err, &se) || !ok || ae.Kind != llm.Unavailable {
		t.Fatalf("Run with the server down = %v, want a StopError of kind Unavailable", err)
	}
	if sum.Failed != 0 {
		t.Errorf("summary says %d failed, want 0: the server was down, not the items at fault", sum.Failed)
	}
	if errs := lines(t, ErrorsPath(j.out())); len(errs) != 0 {
		t.Errorf("errors file holds %d lines, e.g. %v; want none", len(errs), errs[0])
	}
	if sum.Done == 0 || sum.Done >= n {
		t.Fatalf("%d done before the outage; the outage should land mid-run", sum.Done)
	}
	time.Sleep(time.Until(downAt.Add(breakAfter * 3 / 2)))
	fs.up()
	sum2, err := Run(t.Context(), j.config(outage))
	if err != nil || sum2.Failed != 0 || sum2.SkippedFailed != 0 || !sum2.Complete() {
		t.Fatalf("rerun after the outage = %+v, %v; want every item done", sum2, err)
	}
	ids := map[string]int{}
	for _, l := range lines(t, j.out()) {
		ids[l["id"].(string)]++
	}
	for i := range n {
		if id := "k" + strconv.Itoa(i); ids[id] != 1 {
			t.Errorf("%s has %d result lines, want 1", id, ids[id])
		}
	}
}

// TestRunItemFailingAloneIsFailed: an item that runs out of attempts on
// 503s while the server answers the others is at fault and is recorded as
// failed, whether answers came after it and the run was then interrupted,
// or it was among the last and the run ended normally. (Next to last: the
// last item, sent after it, is answered while it fails. An item whose
// attempts run out after every other answer came in cannot be told from a
// server that went down as it was sent: it is left for the rerun, see
// TestRunServerDownToTheEndLeavesItems.)
func TestRunItemFailingAloneIsFailed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		poison    int  // the input line of the item the server always fails
		interrupt bool // close Config.Stop once 30 answers are in
	}{
		{"answers after it, then an interrupt", 1, true},
		{"next to last item, normal end", 59, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls := prompts(60)
			ls[tc.poison-1] = `{"id":"poison","prompt":"poison"}`
			stop := make(chan struct{})
			var answers atomic.Int64
			h := mock.New(mock.Config{Latency: 2 * time.Millisecond})
			srv := newCounting(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := readAllString(r)
				if strings.Contains(body, "poison") {
					w.WriteHeader(503)
					return
				}
				r.Body = readCloser{strings.NewReader(body)}
				h.ServeHTTP(w, r)
				if answers.Add(1) == 30 && tc.interrupt {
					close(stop)
				}
			}))
			j := newJob(t, srv, ls...)
			sum, err := j.run(func(c *Config) { c.Stop, c.Concurrency = stop, 2 })
			if want := error(nil); tc.interrupt && !errors.Is(err, ErrInterrupted) || !tc.interrupt && err != want {
				t.Fatalf("Run() error = %v, interrupt %v", err, tc.interrupt)
			}
			errs := lines(t, ErrorsPath(j.out()))
			if sum.Failed != 1 || len(errs) != 1 || errs[0]["id"] != "poison" {
				t.Errorf("%d failed, errors file %v; want the poison item alone", sum.Failed, errs)
			}
		})
	}
}

// TestHeldFailuresBounded: the failures held are at most maxHeld, without
// their bodies; one more gives back the oldest, to be recorded at once.
func TestHeldFailuresBounded(t *testing.T) {
	var h heldFailures
	err := &llm.APIError{Kind: llm.Transient, Status: 503}
	var out []string
	for i := range maxHeld + 3 {
		o := outcome{item: &Item{ID: strconv.Itoa(i), Line: i + 1, Body: make([]byte, 100)}, err: err, attempts: 6}
		if old, full := h.add(o); full {
			out = append(out, old.item.ID)
		}
	}
	if strings.Join(out, ",") != "0,1,2" {
		t.Errorf("add past the bound gave back %v, want the three oldest: 0,1,2", out)
	}
	held := h.take()
	if len(held) != maxHeld || held[0].item.ID != "3" || held[0].item.Line != 4 || held[0].item.Body != nil {
		t.Errorf("take() = %d held, first %+v; want %d, from id 3 (line 4), without its body", len(held), held[0].item, maxHeld)
	}
	if len(h.take()) != 0 {
		t.Error("take() after take() holds something")
	}
}

// TestRunServerDownToTheEndLeavesItems: a server that fails every request
// (500) for a whole short job, or nothing listening at all, gives no item a
// failure of its own: no answer of the server came after their attempts
// began. The run ends with a StopError (exit 3) and an empty errors file,
// and the same run against a server that answers, without RetryFailed,
// finishes every item.
func TestRunServerDownToTheEndLeavesItems(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refused bool // nothing listens: every dial is refused
	}{{"every request 500", false}, {"nothing listening", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var up atomic.Bool
			ok := mock.New(mock.Config{})
			j := newJob(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !up.Load() {
					w.WriteHeader(500)
					return
				}
				ok.ServeHTTP(w, r)
			}), prompts(8)...)
			down := j.config()
			if tc.refused {
				down = j.config(func(c *Config) { c.Client = refusedClient(t) })
			}
			sum, err := Run(t.Context(), down)
			if !errors.As(err, new(*StopError)) {
				t.Fatalf("Run with the server down to the end = %v, want a StopError (exit 3)", err)
			}
			if sum.Failed != 0 || len(lines(t, ErrorsPath(j.out()))) != 0 {
				t.Errorf("%d failed, errors file %v; want none: the server was down, not the items at fault",
					sum.Failed, lines(t, ErrorsPath(j.out())))
			}
			up.Store(true)
			sum, err = j.run()
			if err != nil || sum.Done != 8 || !sum.Complete() {
				t.Fatalf("rerun with the server up = %+v, %v; want all 8 done", sum, err)
			}
		})
	}
}

// refusedClient is a client of a loopback port that nobody listens on.
func refusedClient(t *testing.T) *llm.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := llm.New(llm.Config{BaseURL: "http://" + addr + "/v1", Limiter: llm.NewLimiter(0, 0), MaxAttempts: 4,
		Backoff: func(int) time.Duration { return 0 }, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
