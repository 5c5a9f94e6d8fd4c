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
	"slices"
	"strings"
	"time"
)

// MaxBodyBytes is the default cap on how much of a response body is read; a
// larger body is treated as a broken answer.
const MaxBodyBytes = 32 << 20

// HTTPClient is the part of *http.Client the client uses.
type HTTPClient interface {
	Do(*http.Request) (*http.Response, error)
}

// Config sets up a [Client]. Zero values take the documented defaults.
type Config struct {
	BaseURL        string        // e.g. https://api.deepseek.com/v1; required
	APIKey         string        // sent as "Authorization: Bearer", spaces trimmed; empty sends none
	APIKeys        []string      // several keys, rotated: a 429 rests a key, a 401/403 drops it; overrides APIKey
	Timeout        time.Duration // one attempt, whole response body included; default 60s
	ConnectTimeout time.Duration // TCP and TLS setup; default 10s
	Concurrency    int           // sizes the keep-alive pool; default 4
	MaxAttempts    int           // attempts per request, the first included; default 6
	Backoff        Backoff       // wait before a retry with no server hint; default FullJitter(1s, 60s)
	Limiter        *Limiter      // shared pacing; nil for none
	BreakAfter     time.Duration // stop (Kind Unavailable) when every attempt has failed transiently for this long; 0: never
	HTTPClient     HTTPClient    // default: a tuned *http.Client that keeps the key from other hosts on redirects
	UserAgent      string        // default "llmbatch"
	Logger         *slog.Logger  // retry decisions at debug level; default discards
	MaxBodyBytes   int64         // a longer response body is refused as a broken answer; default MaxBodyBytes
}

// Client sends chat completion requests to one OpenAI-compatible endpoint,
// retrying what may be retried. Client is safe for concurrent use and starts
// no goroutines.
type Client struct {
	cfg      Config
	endpoint string
	http     HTTPClient
	log      *slog.Logger
	stats    stats
	secrets  []secret   // the key and the base URL's credentials, hidden from errors (see scrub)
	keys     *keyRing   // several keys in rotation; nil with one or none
	health   health     // the circuit breaker's count, and when a request last got through
	scale    tokenScale // how each model's server counts the prompts the client estimates
}

// New validates cfg and returns a client.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: base URL %q must be an http or https URL", Redact(cfg.BaseURL))
	}
	cfg = withDefaults(cfg)
	// JoinPath keeps a query, such as Azure's ?api-version=, after the path.
	c := &Client{cfg: cfg, endpoint: u.JoinPath("chat/completions").String(), http: cfg.HTTPClient, log: cfg.Logger,
		secrets: secrets(append([]string{cfg.APIKey}, cfg.APIKeys...), u), keys: newKeyRing(cfg.APIKeys)}
	if c.http == nil {
		c.http = newHTTPClient(cfg)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

func withDefaults(cfg Config) Config {
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
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = MaxBodyBytes
	}
	// A key read from a file or a variable often ends in a newline, which
	// would make every request fail as an invalid header.
	cfg.APIKey = strings.TrimSpace(cfg.APIKey)
	var keys []string
	for _, k := range cfg.APIKeys {
		// The same key twice would only share its limit with itself.
		if k = strings.TrimSpace(k); k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	cfg.APIKeys = keys
	if len(cfg.APIKeys) == 1 {
		cfg.APIKey, cfg.APIKeys = cfg.APIKeys[0], nil
	}
	return cfg
}

func newHTTPClient(cfg Config) *http.Client {
	d := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	return &http.Client{CheckRedirect: checkRedirect, Transport: &http.Transport{
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

// checkRedirect keeps the key from any host but the one it was meant for.
// net/http drops Authorization on a redirect to another host name, but not to
// another port or scheme of the same host: http://host:8080, or plain http
// after https, would receive the key.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if first := via[0].URL; req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		req.Header.Del("Authorization")
	}
	return nil
}

// CloseIdleConnections closes the keep-alive connections of the default
// HTTP client (and of a given HTTPClient that has such a method), ending
// the transport's goroutines that serve them. The client stays usable: the
// next request dials again. Callers done with a Client call it so that no
// goroutine outlives the run.
func (c *Client) CloseIdleConnections() {
	if ic, ok := c.http.(interface{ CloseIdleConnections() }); ok {
		ic.CloseIdleConnections()
	}
}

// Request is one chat completion call. Body is kept as bytes so that every
// attempt sends the same thing.
type Request struct {
	Model  string // the model named in Body, so that each model is paced on its own
	Body   []byte // the JSON body of POST /chat/completions
	Tokens int    // estimated tokens (prompt plus max_tokens), for the token limit
	// Output is the part of Tokens that is the answer's budget (max_tokens),
	// which servers count as it is; the rest, the prompt's estimate, the
	// limiter is given in the server's own tokens (see tokenScale).
	Output int
	Label  string // names the request in logs (an item or group id)

	// Drain, when closed, ends the request's waits (pacing, backoff, a
	// resting key) with [ErrStopped] and starts no further attempt; an
	// attempt already sent is finished and its answer returned. nil: only
	// ctx ends the request. This is how a run drains: it closes Drain, and
	// cancels ctx only to stop at once.
	Drain <-chan struct{}
}

// Response is a successful answer.
type Response struct {
	Chat      ChatResponse // the parsed body
	Raw       []byte       // the body as received
	RequestID string       // x-request-id, when the server sent one
	Status    int          // the HTTP status, 2xx
	Header    http.Header  // the response's header
}

// Content returns the text of the first choice.
func (r *Response) Content() string { return TextContent(r.Chat.Choices[0].Message.Content) }

// attempt makes one HTTP exchange under the per-attempt timeout, which
// covers reading the whole body.
func (c *Client) attempt(ctx context.Context, body []byte, key string) (*Response, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	res, err := c.http.Do(c.newRequest(actx, body, key))
	if err != nil {
		return nil, c.scrub(transportError(ctx, actx, err))
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, c.cfg.MaxBodyBytes+1))
	if err != nil {
		return nil, c.scrub(transportError(ctx, actx, err))
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		// The status says what went wrong; an overlong body only loses its tail.
		raw = raw[:min(int64(len(raw)), c.cfg.MaxBodyBytes)]
		ae := classify(res.StatusCode, res.Header, raw, time.Now())
		ae.header = res.Header
		return nil, c.scrub(ae)
	}
	if int64(len(raw)) > c.cfg.MaxBodyBytes {
		return nil, &APIError{Status: res.StatusCode, Kind: Transient,
			Message: fmt.Sprintf("response body longer than %d bytes", c.cfg.MaxBodyBytes)}
	}
	resp, err := parseOK(res, raw)
	if err != nil {
		return nil, c.scrub(err)
	}
	return resp, nil
}

func (c *Client) newRequest(ctx context.Context, body []byte, key string) *http.Request {
	// The endpoint was checked by New and the method is fixed: this cannot fail.
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", c.cfg.UserAgent)
	if key != "" {
		hr.Header.Set("Authorization", "Bearer "+key)
	}
	return hr
}

// scrub removes the key and the base URL's credentials from e, in case a
// server or proxy echoed them back (some error pages quote the request's
// headers; net/http's own errors name the URL, which transportError
// drops). Secrets too short to be secret, such as a local server's
// placeholder key, are left alone.
func (c *Client) scrub(err error) error {
	e, ok := err.(*APIError)
	if !ok {
		return err
	}
	for _, s := range c.secrets {
		e.Code = s.hide(e.Code)
		e.Message = s.hide(e.Message)
		if e.Err != nil {
			if msg := s.hide(e.Err.Error()); msg != e.Err.Error() {
				e.Err = errors.New(msg)
			}
		}
	}
	return e
}

// hide replaces the secret in text, and a start of it (4 bytes or more)
// that text ends with: a message clipped to its length may have cut the
// secret short.
func (s secret) hide(text string) string {
	text = strings.ReplaceAll(text, s.value, s.mask)
	for n := len(s.value) - 1; n >= 4; n-- {
		if strings.HasSuffix(text, s.value[:n]) {
			return text[:len(text)-n] + s.mask
		}
	}
	return text
}

// A secret is a string scrub hides, and what it shows instead.
type secret struct{ value, mask string }

// secrets lists what scrub hides: the key ("[key]"), and the password and
// credential query values of the base URL u ("xxxxx", as [Redact] shows
// them), each at least 8 bytes long.
func secrets(keys []string, u *url.URL) []secret {
	var out []secret
	add := func(s, mask string) {
		if len(s) >= 8 {
			out = append(out, secret{s, mask})
		}
	}
	for _, key := range keys {
		add(strings.TrimSpace(key), "[key]")
	}
	if pw, ok := u.User.Password(); ok {
		add(pw, "xxxxx")
	}
	for k, vs := range u.Query() {
		if secretParam(k) {
			for _, v := range vs {
				add(v, "xxxxx")
			}
		}
	}
	return out
}

func parseOK(res *http.Response, raw []byte) (*Response, error) {
	r := &Response{Raw: raw, Status: res.StatusCode, RequestID: res.Header.Get("x-request-id"), Header: res.Header}
	if err := json.Unmarshal(raw, &r.Chat); err != nil {
		msg := "response body is not JSON"
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("<")) {
			msg = "response body is an HTML page, not JSON"
		}
		return nil, &APIError{Status: res.StatusCode, Kind: Transient, Message: msg}
	}
	if len(r.Chat.Choices) == 0 {
		// Some gateways answer 200 with an error envelope; keep what it says.
		e := &APIError{Status: res.StatusCode, Kind: Transient, Message: "response has no choices"}
		if code, msg, ok := errorEnvelope(raw); ok && (code != "" || msg != "") {
			e.Code, e.Message = printable(code, maxCode), strings.TrimSuffix(e.Message+": "+printable(msg, maxMessage), ": ")
		}
		return nil, e
	}
	return r, nil
}

// transportError wraps a failed exchange: ctx is the caller's, actx the
// attempt's. A timeout of the attempt (not of ctx) is transient like a reset
// connection; it is told by actx, since a body read cut short by the
// deadline does not always say so. A certificate that cannot be verified is
// not transient: every retry would fail alike.
func transportError(ctx, actx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL may hold credentials; the cause is what matters
	}
	e := &APIError{Kind: Transient, Message: err.Error(), Err: err}
	switch {
	case actx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		e.Message = "attempt timed out"
	case certError(err):
		e.Kind = Certificate
		e.Message = "server certificate not trusted (check the base URL, or add its CA to SSL_CERT_FILE): " + err.Error()
	case notTLS(err):
		e.Kind = Certificate
		e.Message = "the server does not speak TLS (is the base URL https:// where the server wants http://?): " + err.Error()
	}
	return e
}

// Redact returns rawURL fit to print: user info (a user name and password)
// and the values of query parameters that look like credentials ("key",
// "api-key", "token", "sig", "secret", "password", ...) are replaced by
// "xxxxx". A URL that cannot be parsed is not shown at all.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.User != nil {
		u.User = url.User("xxxxx")
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = "xxxxx"
		} else {
			for k := range q {
				if secretParam(k) {
					q[k] = []string{"xxxxx"}
				}
			}
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// secretParam reports whether a query parameter's name suggests that its
// value is a credential, as in Azure's ?sig= or a gateway's ?api_key=.
func secretParam(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"key", "token", "secret", "sig", "password", "passwd", "auth", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
