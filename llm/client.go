package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxBodyBytes caps how much of a response body is read; a larger body is
// treated as a broken answer.
const MaxBodyBytes = 32 << 20

// HTTPClient is the part of *http.Client the client uses.
type HTTPClient interface {
	Do(*http.Request) (*http.Response, error)
}

// Config sets up a [Client]. Zero values take the documented defaults.
type Config struct {
	BaseURL        string        // e.g. https://api.deepseek.com/v1; required
	APIKey         string        // sent as "Authorization: Bearer"; empty sends none
	Timeout        time.Duration // one attempt, whole response body included; default 60s
	ConnectTimeout time.Duration // TCP and TLS setup; default 10s
	Concurrency    int           // sizes the keep-alive pool; default 4
	MaxAttempts    int           // attempts per request, the first included; default 6
	Backoff        Backoff       // wait before a retry with no server hint; default FullJitter(1s, 60s)
	Limiter        *Limiter      // shared pacing; nil for none
	HTTPClient     HTTPClient    // default: a tuned *http.Client
	UserAgent      string        // default "llmbatch"
	Logger         *slog.Logger  // retry decisions at debug level; default discards
}

// Client sends chat completion requests to one OpenAI-compatible endpoint,
// retrying what may be retried. Client is safe for concurrent use and starts
// no goroutines.
type Client struct {
	cfg      Config
	endpoint string
	http     HTTPClient
	log      *slog.Logger
}

// New validates cfg and returns a client.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: base URL %q must be an http or https URL", Redact(cfg.BaseURL))
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 6
	}
	if cfg.Backoff == nil {
		cfg.Backoff = FullJitter(time.Second, time.Minute)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "llmbatch"
	}
	c := &Client{cfg: cfg, endpoint: u.String() + "/chat/completions", http: cfg.HTTPClient, log: cfg.Logger}
	if c.http == nil {
		c.http = newHTTPClient(cfg)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

func newHTTPClient(cfg Config) *http.Client {
	d := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          cfg.Concurrency * 2,
		MaxIdleConnsPerHost:   cfg.Concurrency * 2,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   cfg.ConnectTimeout,
		ExpectContinueTimeout: time.Second,
	}}
}

// Request is one chat completion call. Body is kept as bytes so that every
// attempt sends the same thing.
type Request struct {
	Body   []byte // the JSON body of POST /chat/completions
	Tokens int    // estimated tokens (prompt plus max_tokens), for the token limit
	Label  string // names the request in logs (an item or group id)
}

// Response is a successful answer.
type Response struct {
	Chat      ChatResponse // the parsed body
	Raw       []byte       // the body as received
	RequestID string       // x-request-id, when the server sent one
	Status    int          // the HTTP status, 2xx
}

// Content returns the text of the first choice.
func (r *Response) Content() string { return TextContent(r.Chat.Choices[0].Message.Content) }

// Do sends req until it succeeds, fails in a way that retrying cannot help,
// or runs out of attempts. It returns the number of attempts made with:
//   - (resp, n, nil) on success;
//   - (nil, n, *APIError) when the last attempt failed;
//   - (nil, n, ctx.Err()) when ctx ended, or (nil, n, ErrStopped) when the
//     limiter was closed before a retry could be sent.
//
// Every attempt, retries included, waits for the limiter first. A 429 pauses
// the whole limiter, not only this request.
func (c *Client) Do(ctx context.Context, req *Request) (*Response, int, error) {
	var last error
	for attempt := 1; ; attempt++ {
		if err := c.cfg.Limiter.Wait(ctx, req.Tokens); err != nil {
			if errors.Is(err, ErrStopped) && last != nil {
				return nil, attempt - 1, fmt.Errorf("%w (last error: %v)", err, last)
			}
			return nil, attempt - 1, err
		}
		resp, err := c.attempt(ctx, req.Body)
		if err == nil {
			return resp, attempt, nil
		}
		if ctx.Err() != nil {
			return nil, attempt, ctx.Err()
		}
		last = err
		var ae *APIError
		if !errors.As(err, &ae) || !ae.Kind.Retryable() || attempt >= c.cfg.MaxAttempts {
			return nil, attempt, err
		}
		if err := c.wait(ctx, req, attempt, ae); err != nil {
			return nil, attempt, err
		}
	}
}

// wait sleeps before retry attempt+1: the server's hint when there is one
// (never cut short), the backoff otherwise. A rate limit closes the shared
// gate instead, so every worker waits.
func (c *Client) wait(ctx context.Context, req *Request, attempt int, ae *APIError) error {
	d, source := ae.RetryAfter, "header"
	if d <= 0 {
		d, source = c.cfg.Backoff(attempt), "backoff"
	}
	c.log.Debug("retry", "request", req.Label, "attempt", attempt, "status", ae.Status,
		"kind", ae.Kind.String(), "delay", d, "source", source)
	if ae.Kind == RateLimited && c.cfg.Limiter != nil {
		c.cfg.Limiter.Pause(d)
		return nil // the next Wait holds us at the gate
	}
	return sleep(ctx, d, c.cfg.Limiter.Done())
}

// attempt makes one HTTP exchange under the per-attempt timeout.
func (c *Client) attempt(ctx context.Context, body []byte) (*Response, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &APIError{Kind: BadRequest, Message: "cannot build request", Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", c.cfg.UserAgent)
	if c.cfg.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	res, err := c.http.Do(hr)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, transportError(ctx, err)
	}
	if len(raw) > MaxBodyBytes {
		return nil, &APIError{Status: res.StatusCode, Kind: Transient, Message: "response body larger than 32 MiB"}
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return nil, classify(res.StatusCode, res.Header, raw, time.Now())
	}
	return parseOK(res, raw)
}

func parseOK(res *http.Response, raw []byte) (*Response, error) {
	r := &Response{Raw: raw, Status: res.StatusCode, RequestID: res.Header.Get("x-request-id")}
	if err := json.Unmarshal(raw, &r.Chat); err != nil {
		msg := "response body is not JSON"
		if len(bytes.TrimSpace(raw)) > 0 && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("<")) {
			msg = "response body is an HTML page, not JSON"
		}
		return nil, &APIError{Status: res.StatusCode, Kind: Transient, Message: msg}
	}
	if len(r.Chat.Choices) == 0 {
		return nil, &APIError{Status: res.StatusCode, Kind: Transient, Message: "response has no choices"}
	}
	return r, nil
}

// transportError wraps a failed exchange. A timeout of the attempt (not of
// the caller's ctx) is transient like a reset connection.
func transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = ue.Err.Error() // the URL may hold credentials; the cause is what matters
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "attempt timed out"
	}
	return &APIError{Kind: Transient, Message: msg, Err: err}
}

// Redact returns rawURL with any password or user info hidden.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.User != nil {
		u.User = url.User("xxxxx")
	}
	return u.String()
}
