// Command gateway is a bench tool: a reverse proxy to an upstream (the
// mock, `llmbatch mock serve`) behind one of five Go rate-limit
// libraries nobody on this team wrote, each set up as its README deploys
// it, keyed by the client's address. bench/gateway.sh runs it.
//
//	gateway --lib httprate --upstream 127.0.0.1:8080 --limit 20 --window 1s
//
// --lib is one of httprate (go-chi/httprate, LimitByIP: a sliding window
// counter), throttled (throttled/v2, GCRA with --burst, memstore),
// tollbooth (didip/tollbooth/v7, x/time/rate: --limit per --window as a
// rate a second, its burst that rate), ulule (ulule/limiter/v3, memory
// store: a fixed window from the first request) and go-limiter
// (sethvargo/go-limiter, memorystore and httplimit: the tokens back at each
// interval's tick). It listens on --addr (a free loopback port by default)
// and says where on stderr ("gateway listening on http://127.0.0.1:PORT").
// GET /healthz is proxied to the upstream's /v1/models, unlimited and not
// logged; every request to /v1/ is limited and logged on stdout as
// "unix-seconds status ms path", the 429s too. SIGINT or SIGTERM stops it.
//
// It is a main package of the module so that it builds from the module's
// own go.sum; llmbatch itself links none of these libraries.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/didip/tollbooth/v7"
	"github.com/go-chi/httprate"
	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	"github.com/ulule/limiter/v3/drivers/store/memory"
)

// config is what the flags say.
type config struct {
	lib, addr, upstream string
	limit, burst        int
	window              time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.lib, "lib", "httprate", "the limiter: httprate, throttled, tollbooth, ulule or go-limiter")
	flag.StringVar(&c.addr, "addr", "127.0.0.1:0", "the address to listen on")
	flag.StringVar(&c.upstream, "upstream", "", "the upstream's host:port (required)")
	flag.IntVar(&c.limit, "limit", 20, "requests a window")
	flag.DurationVar(&c.window, "window", time.Second, "the window")
	flag.IntVar(&c.burst, "burst", 5, "throttled's MaxBurst")
	flag.Parse()
	if err := run(c); err != nil {
		log.Fatal("gateway: ", err)
	}
}

func run(c config) error {
	if c.upstream == "" || c.limit < 1 || c.window <= 0 {
		return errors.New("--upstream is required, --limit and --window must be positive")
	}
	up, err := url.Parse("http://" + c.upstream)
	if err != nil {
		return err
	}
	proxy := httputil.NewSingleHostReverseProxy(up)
	limited, stop, err := limiter(c)
	if err != nil {
		return err
	}
	defer stop()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = "/v1/models"
		proxy.ServeHTTP(w, r)
	})
	mux.Handle("/v1/", logged(limited(proxy)))
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gateway listening on http://%s (%s, %d per %v)\n", ln.Addr(), c.lib, c.limit, c.window)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		<-ctx.Done()
		shut, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// limiter returns the library's middleware for c, and a stop for what it
// started.
func limiter(c config) (func(http.Handler) http.Handler, func(), error) {
	none := func() {}
	switch c.lib {
	case "httprate":
		return httprate.LimitByIP(c.limit, c.window), none, nil
	case "throttled":
		store, err := memstore.NewCtx(65536)
		if err != nil {
			return nil, nil, err
		}
		quota := throttled.RateQuota{MaxRate: throttled.PerDuration(c.limit, c.window), MaxBurst: c.burst}
		gcra, err := throttled.NewGCRARateLimiterCtx(store, quota)
		if err != nil {
			return nil, nil, err
		}
		h := &throttled.HTTPRateLimiterCtx{RateLimiter: gcra, VaryBy: &throttled.VaryBy{RemoteAddr: true}}
		return h.RateLimit, none, nil
	case "tollbooth":
		lmt := tollbooth.NewLimiter(float64(c.limit)/c.window.Seconds(), nil)
		return func(next http.Handler) http.Handler { return tollbooth.LimitHandler(lmt, next) }, none, nil
	case "ulule":
		lim := ulule.New(memory.NewStore(), ulule.Rate{Period: c.window, Limit: int64(c.limit)})
		return stdlib.NewMiddleware(lim).Handler, none, nil
	case "go-limiter":
		store, err := memorystore.New(&memorystore.Config{Tokens: uint64(c.limit), Interval: c.window})
		if err != nil {
			return nil, nil, err
		}
		mw, err := httplimit.NewMiddleware(store, httplimit.IPKeyFunc())
		if err != nil {
			return nil, nil, err
		}
		return mw.Handle, func() { _ = store.Close(context.Background()) }, nil
	}
	return nil, nil, fmt.Errorf("unknown --lib %q: want httprate, throttled, tollbooth, ulule or go-limiter", c.lib)
}

// logged writes a line to stdout for each request once it is answered.
func logged(next http.Handler) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf("%.3f %d %d %s\n", float64(now.UnixMilli())/1000, sw.status, now.Sub(t0).Milliseconds(), r.URL.Path)
	})
}

// statusWriter notes the status written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
