package mock

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// optionKeys lists the keys ParseOptions knows, in the order of its doc.
const optionKeys = "latency, jitter, rpm, tpm, window, limiter (or limits), windows, burst, penalty, inflight, headers, false-claims, fail, seed, quota, model, key"

// ParseOptions parses a comma-separated list of key=value options, as given
// to `llmbatch run --provider mock` and `llmbatch mock serve`:
//
//	latency=20ms,jitter=5ms,rpm=1200,tpm=0,window=1m,limiter=window,windows=aligned,burst=0.25,penalty=10s,
//	inflight=0,headers=openai,false-claims=0,fail=0.05,seed=1,quota=0,model=x,key=secret
//
// Durations use Go's syntax; rpm, tpm, inflight and quota are counts >= 0;
// burst, false-claims and fail are fractions in [0, 1]. limiter names the
// algorithm counting rpm and tpm ([Config.Limiter]: window, bucket, leaky,
// sliding-log, sliding-counter, gcra, concurrency, penalty); limits is
// another name for it (limits=bucket as before). windows=first starts each
// fixed window at a request ([Config.FirstWindows]); aligned, the default,
// at the server's start. headers names the style of
// the limit headers ([Config.Headers]: openai, ietf, kong, github, traefik,
// retry-after, none); headers=on is openai and headers=off retry-after, as
// before. White space around items is ignored, an empty string gives the
// zero Config, and a key may appear once. The error names the offending key
// and value, except the value of key, which is never shown.
func ParseOptions(s string) (Config, error) {
	var cfg Config
	seen := make(map[string]bool)
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, ok := strings.Cut(item, "=")
		if !ok {
			// Not quoting the item: it may be a key pasted without "key=".
			return Config{}, fmt.Errorf("mock: option %d has no '=': want key=value with key one of %s", i+1, optionKeys)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		setting := key
		if key == "limits" {
			setting = "limiter" // one setting under two names
		}
		if seen[setting] {
			return Config{}, fmt.Errorf("mock: option %q given twice", key)
		}
		seen[setting] = true
		if err := cfg.set(key, val); err != nil {
			return Config{}, err
		}
	}
	return cfg, nil
}

// set sets the field named by key from val.
func (c *Config) set(key, val string) error {
	var err error
	switch key {
	case "latency":
		c.Latency, err = parseDuration(key, val)
	case "jitter":
		c.Jitter, err = parseDuration(key, val)
	case "window":
		c.Window, err = parseDuration(key, val)
	case "rpm":
		c.RPM, err = parseCount(key, val)
	case "tpm":
		c.TPM, err = parseCount(key, val)
	case "quota":
		c.Quota, err = parseCount(key, val)
	case "fail":
		c.FailRate, err = parseFraction(key, val)
	case "seed":
		c.Seed, err = strconv.ParseUint(val, 10, 64)
		if err != nil {
			err = badValue(key, val, "an unsigned integer")
		}
	case "limiter", "limits":
		err = c.setLimiter(key, val)
	case "windows":
		err = c.setWindows(key, val)
	case "burst":
		c.Burst, err = parseFraction(key, val)
	case "penalty":
		c.Penalty, err = parseDuration(key, val)
	case "inflight":
		c.InFlight, err = parseCount(key, val)
	case "false-claims":
		c.FalseClaims, err = parseFraction(key, val)
	case "headers":
		err = c.setHeaders(key, val)
	case "model":
		c.Model = val
	case "key":
		c.APIKey = val
	default:
		if ok, err := c.Batch.set(key, val); ok {
			return err
		}
		return fmt.Errorf("mock: unknown option %q: want one of %s, %s", key, optionKeys, batchOptionKeys)
	}
	return err
}

// setLimiter sets the algorithm. "window" and "bucket" keep the zero
// Limiter, and "bucket" sets Bucket, so Configs parsed before the zoo
// compare equal.
func (c *Config) setLimiter(key, val string) error {
	switch val {
	case LimiterWindow:
	case LimiterBucket:
		c.Bucket = true
	default:
		if checkLimiter(val) != nil {
			return badValue(key, val, strings.Join(limiterNames, ", "))
		}
		c.Limiter = val
	}
	return nil
}

// setWindows sets where fixed windows start: aligned or first.
func (c *Config) setWindows(key, val string) error {
	switch val {
	case "aligned":
		c.FirstWindows = false
	case "first":
		c.FirstWindows = true
	default:
		return badValue(key, val, "aligned or first")
	}
	return nil
}

// setHeaders sets the header style; on and off are the older names of
// openai and retry-after, kept as NoLimitHeaders for the same reason.
func (c *Config) setHeaders(key, val string) error {
	switch val {
	case "on", HeadersOpenAI:
	case "off", HeadersRetryAfter:
		c.NoLimitHeaders = true
	default:
		if checkHeaders(val) != nil {
			return badValue(key, val, "on, off or one of "+strings.Join(headerStyles, ", "))
		}
		c.Headers = val
	}
	return nil
}

func badValue(key, val, want string) error {
	return fmt.Errorf("mock: bad value %q for option %s: want %s", val, key, want)
}

func parseDuration(key, val string) (time.Duration, error) {
	d, err := time.ParseDuration(val)
	if err != nil || d < 0 {
		return 0, badValue(key, val, "a duration >= 0 such as 20ms or 1m")
	}
	return d, nil
}

func parseCount(key, val string) (int, error) {
	n, err := strconv.Atoi(val)
	if err != nil || n < 0 {
		return 0, badValue(key, val, "an integer >= 0")
	}
	return n, nil
}

func parseFraction(key, val string) (float64, error) {
	f, err := strconv.ParseFloat(val, 64)
	if err != nil || !(f >= 0 && f <= 1) { // the negation also rejects NaN
		return 0, badValue(key, val, "a fraction between 0 and 1 such as 0.05")
	}
	return f, nil
}
