// Package shared keeps the pacing state of one API key in Redis, so that
// several llmbatch processes using the key behave as one client (DESIGN §9):
// request and token budgets drawn from one GCRA per (base URL, model, key),
// the pause a request-429 sets, the processes alive and the one of them
// that leads (whose estimator alone learns the key's pace), the pace it
// publishes for the others, and leases on a shared number of requests in
// flight.
//
// Every name in Redis is derived by [LaneName] from a hash of the key; the
// key itself never reaches Redis. Every time that matters is Redis's own
// (TIME, PTTL), so processes on machines with skewed clocks agree.
//
// A Store is safe for simultaneous use by multiple goroutines and starts no
// goroutines: the caller decides when to beat, what to cache and what to do
// when Redis is away (every method returns the Redis error as it is).
package shared

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Config sets up a [Store].
type Config struct {
	URL     string        // redis://[:password@]host:port/db, or rediss:// for TLS; required
	ID      string        // this process, in heartbeats and leases; required, unique among the processes
	Timeout time.Duration // dial, read and write timeout of each command; default 1s
}

// Store is one process's handle on the shared state. Close releases it.
type Store struct {
	rdb  *redis.Client
	gcra *redis_rate.Limiter
	id   string
	seq  atomic.Uint64 // names leases
}

// An URLError says why a Redis URL cannot be used: malformed, refused,
// or the password is wrong. Its text shows the URL with the password masked.
type URLError struct {
	URL string // masked
	Err error
}

func (e *URLError) Error() string { return "redis " + e.URL + ": " + e.Err.Error() }
func (e *URLError) Unwrap() error { return e.Err }

// Open parses cfg.URL, connects and checks the server answers (PING), so
// that a wrong URL or password is found before any request is sent. It
// returns a *URLError when it cannot.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	masked := MaskURL(cfg.URL)
	if cfg.ID == "" {
		return nil, errors.New("shared: Config.ID is required")
	}
	opt, err := redis.ParseURL(cfg.URL)
	if err != nil {
		// go-redis's message may quote the URL; only the masked one is shown.
		return nil, &URLError{URL: masked, Err: errors.New("want redis://[:password@]host:port/db or rediss://...")}
	}
	d := cfg.Timeout
	if d <= 0 {
		d = time.Second
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = d, d, d
	opt.MaxRetries = 1
	quietOnce.Do(func() { redis.SetLogger(quiet{}) })
	rdb := redis.NewClient(opt)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, &URLError{URL: masked, Err: scrub(err, opt.Password)}
	}
	return &Store{rdb: rdb, gcra: redis_rate.NewLimiter(rdb), id: cfg.ID}, nil
}

// quiet drops go-redis's own log lines (dial failures and the like, on
// stderr): the caller reports what Redis being away means, once.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

// Close closes the connections.
func (s *Store) Close() error { return s.rdb.Close() }

// scrub removes the password from an error's text, should a server or a
// library echo it.
func scrub(err error, pw string) error {
	if pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
}

// MaskURL returns u with its password, if any, replaced by "xxxxx".
func MaskURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	if _, ok := p.User.Password(); ok {
		p.User = url.UserPassword(p.User.Username(), "xxxxx")
	}
	return p.String()
}

// LaneName returns the Redis name prefix of one lane of pacing: the base
// URL (without credentials or query), the model and the API key, hashed.
// Processes with the same three share a lane; the key cannot be recovered.
func LaneName(baseURL, model, apiKey string) string {
	if u, err := url.Parse(baseURL); err == nil {
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		baseURL = strings.TrimRight(u.String(), "/")
	}
	key := sha256.Sum256([]byte(apiKey))
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%x", baseURL, model, key)
	return "llmbatch:" + hex.EncodeToString(h.Sum(nil))[:32]
}

// A Budget is what [Store.Take] draws from: requests or tokens.
type Budget string

// The two budgets of a lane.
const (
	Requests Budget = "req"
	Tokens   Budget = "tok"
)

// gcraLimit turns a rate per minute into redis_rate's integer form. Rates
// are counted per hour so that a fractional rate per minute keeps its
// precision. A request budget allows no burst (requests go evenly spaced);
// a token budget allows a second of tokens, and at least n, since a request
// bigger than the burst would never be allowed.
func gcraLimit(b Budget, perMinute float64, n int) redis_rate.Limit {
	rate := max(1, int(math.Round(perMinute*60)))
	burst := 1
	if b == Tokens {
		burst = max(n, int(math.Ceil(perMinute/60)))
	}
	return redis_rate.Limit{Rate: rate, Burst: burst, Period: time.Hour}
}

// Take draws n from the lane's budget b, limited to perMinute, and returns
// 0 when it was drawn, or how long to wait before asking again when it was
// not (nothing is drawn then). One round trip.
func (s *Store) Take(ctx context.Context, lane string, b Budget, perMinute float64, n int) (time.Duration, error) {
	if perMinute <= 0 || n <= 0 {
		return 0, nil
	}
	res, err := s.gcra.AllowN(ctx, lane+":"+string(b), gcraLimit(b, perMinute, n), n)
	if err != nil {
		return 0, err
	}
	if res.Allowed > 0 {
		return 0, nil
	}
	return max(res.RetryAfter, time.Millisecond), nil
}

// pauseScript extends a pause to ARGV[1] ms from now, never shortens it.
var pauseScript = redis.NewScript(`
local ttl = redis.call('PTTL', KEYS[1])
if ttl < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
end
return redis.call('PTTL', KEYS[1])
`)

// Pause holds every process of the lane for d from now; a shorter pause
// never shortens a longer one already set.
func (s *Store) Pause(ctx context.Context, lane string, d time.Duration) error {
	ms := d.Milliseconds()
	if ms <= 0 {
		return nil
	}
	return pauseScript.Run(ctx, s.rdb, []string{lane + ":pause"}, ms).Err()
}

// Paused returns how long the lane is still paused; 0 when it is not.
func (s *Store) Paused(ctx context.Context, lane string) (time.Duration, error) {
	d, err := s.rdb.PTTL(ctx, lane+":pause").Result()
	if err != nil || d < 0 { // -2: no pause, -1: no expiry (never written so)
		return 0, err
	}
	return d, nil
}

// beatScript renews member ARGV[1] of the set KEYS[1] for ARGV[2] ms,
// drops the expired, makes ARGV[1] the leader (KEYS[2]) for as long if
// there is none or it is, and returns how many are left and whether it
// leads. Redis's clock decides.
var beatScript = redis.NewScript(`
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local leads = 0
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
  leads = 1
elseif redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  leads = 1
end
return {redis.call('ZCARD', KEYS[1]), leads}
`)

// Beat says this process is alive in the lane for ttl, and returns how many
// processes are (this one included) and whether this one leads: the one
// process whose estimator sets the lane's pace for all (see
// [Store.Publish]). A leader that stops beating is replaced after ttl.
func (s *Store) Beat(ctx context.Context, lane string, ttl time.Duration) (n int, leads bool, err error) {
	r, err := beatScript.Run(ctx, s.rdb, []string{lane + ":procs", lane + ":leader"}, s.id, ttl.Milliseconds()).Int64Slice()
	if err != nil || len(r) != 2 {
		return 1, false, err
	}
	return max(int(r[0]), 1), r[1] == 1, nil
}
