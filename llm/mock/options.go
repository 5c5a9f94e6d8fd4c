package mock

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// optionKeys lists the keys ParseOptions knows, in the order of its doc.
const optionKeys = "latency, jitter, rpm, tpm, window, limits, fail, seed, quota, headers, model, key"

// ParseOptions parses a comma-separated list of key=value options, as given
// to `llmbatch run --provider mock` and `llmbatch mock serve`:
//
//	latency=20ms,jitter=5ms,rpm=1200,tpm=0,window=1m,limits=window,fail=0.05,seed=1,quota=0,headers=on,model=x,key=secret
//
// Durations use Go's syntax; rpm, tpm and quota are counts >= 0; fail is a
// fraction in [0, 1]; limits=bucket makes the limits buckets that refill
// continuously rather than fixed windows; headers=off leaves out the
// x-ratelimit-* headers. White space around items is ignored, an empty string
// gives the zero Config, and a key may appear once. The error names the
// offending key and value, except the value of key, which is never shown.
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
		if seen[key] {
			return Config{}, fmt.Errorf("mock: option %q given twice", key)
		}
		seen[key] = true
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
	case "limits":
		switch val {
		case "window":
			c.Bucket = false
		case "bucket":
			c.Bucket = true
		default:
			err = badValue(key, val, "window or bucket")
		}
	case "headers":
		switch val {
		case "on":
			c.NoLimitHeaders = false
		case "off":
			c.NoLimitHeaders = true
		default:
			err = badValue(key, val, "on or off")
		}
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
