package cmd

import (
	"encoding/csv"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/llmbatch/llmbatch/llm"
)

// The run settings recorded in a journal, and the resume command that
// `llmbatch status` rebuilds from them. Both directions live here so that
// what is written and what is read stay one format: flag name → the value
// as the flag takes it, plus the input under inputKey.

// unrecorded are the run flags left out of the run settings.
var unrecorded = map[string]bool{
	"help": true,
	// status is given these: they are how it found the journal.
	"output": true, "checkpoint": true,
	// answer-shaping: the journal records them apart, and compares them.
	"model": true, "system": true, "template": true, "max-tokens": true, "temperature": true,
	// choices for one run, not part of the job.
	"retry-failed": true, "dry-run": true,
}

// pathFlags take a file name, recorded absolute so that the command status
// prints works from any directory, as the output given to status does.
var pathFlags = map[string]bool{"config": true, "template-file": true, "report": true, "metrics-file": true}

// inputKey is the run setting that holds the input file ("-" for stdin).
const inputKey = "input"

// masked stands for a secret left out of a recorded value, as llm.Redact writes it.
const masked = "xxxxx"

// runSettings returns the settings of a run that a journal records: the
// input, and the value of every flag that was set on the command line, in
// the environment or in the config file, but the unrecorded ones. A default
// is not recorded, nor what a preset gives: --provider stands for it.
//
// No secret is recorded. The key is read from the environment only, and
// --api-key-env records the variables' names, never their values; a base
// URL's user info and credential query values (any flag's URL), the value
// of a flag named like a secret, and the mock's key=, are masked as xxxxx, by what a value is rather than by which flag holds it
// (see maskValue), so that a flag added later is masked too.
func runSettings(fl *pflag.FlagSet, input string) map[string]string {
	s := map[string]string{inputKey: absPath(input)}
	fl.VisitAll(func(f *pflag.Flag) {
		if !f.Changed || unrecorded[f.Name] {
			return
		}
		v := flagValue(f)
		if pathFlags[f.Name] {
			v = absPath(v)
		}
		s[f.Name] = maskValue(f.Name, v)
	})
	return s
}

// flagValue returns f's value as f.Value.Set takes it back: a list as one
// CSV record, as pflag parses list flags.
func flagValue(f *pflag.Flag) string {
	sv, ok := f.Value.(pflag.SliceValue)
	if !ok {
		return f.Value.String()
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(sv.GetSlice()) // a strings.Builder does not fail
	w.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// absPath returns path made absolute; "-" (stdin) and "" stay as they are.
func absPath(path string) string {
	if path == "" || path == "-" {
		return path
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// maskValue returns a flag's recorded value with its secrets masked: the
// whole value of a flag named like a secret; the mock's key=; and every URL
// in it (each item of a list too) as llm.Redact shows it, or wholly masked
// when it does not parse.
func maskValue(name, v string) string {
	switch {
	case v != "" && secretName(name):
		return masked
	case name == "mock":
		return maskMockKey(v)
	case !strings.Contains(v, "://"):
		return v
	}
	items := strings.Split(v, ",")
	for i, item := range items {
		if !strings.Contains(item, "://") {
			continue
		}
		if _, err := url.Parse(strings.TrimSpace(item)); err != nil {
			items[i] = masked // cannot tell where its secret is
		} else {
			items[i] = maskURL(item)
		}
	}
	return strings.Join(items, ",")
}

// secretName reports whether a flag's name says its value is a secret (a
// key, a token, a password). --api-key-env holds variable names, not keys.
func secretName(name string) bool {
	if strings.HasSuffix(name, "-env") {
		return false
	}
	for _, w := range []string{"password", "secret", "passwd"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return name == "key" || name == "token" || strings.HasSuffix(name, "-key") || strings.HasSuffix(name, "-token")
}

// maskURL returns the base URL as llm.Redact shows it when that hides a
// credential, and as given otherwise.
func maskURL(raw string) string {
	if r := llm.Redact(raw); strings.Contains(r, masked) {
		return r
	}
	return raw
}

// maskMockKey masks the value of key= in the mock's options: the key the
// mock expects is the one the run sends.
func maskMockKey(opts string) string {
	items := strings.Split(opts, ",")
	for i, item := range items {
		if k, _, ok := strings.Cut(item, "="); ok && strings.TrimSpace(k) == "key" {
			items[i] = k + "=" + masked
		}
	}
	return strings.Join(items, ",")
}

// recordedFlags returns the run flags of the command that resumes the job,
// rebuilt from its recorded run settings in the order run defines them.
// warn names what the command cannot carry: a setting with no run flag (a
// later llmbatch may have dropped it) and a secret that was masked.
func recordedFlags(run map[string]string, warn func(format string, a ...any)) []string {
	var args []string
	fl := NewCmdRun(&Factory{IO: &IOStreams{}}, nil).Flags()
	fl.VisitAll(func(f *pflag.Flag) {
		v, ok := run[f.Name]
		if !ok || unrecorded[f.Name] {
			return
		}
		if strings.Contains(v, masked) {
			warn("the job's --%s held a secret, which is not recorded: put it in place of %s", f.Name, masked)
		}
		if f.Value.Type() == "bool" && v == "true" {
			args = append(args, "--"+f.Name)
		} else if f.Value.Type() == "bool" {
			args = append(args, "--"+f.Name+"="+v)
		} else {
			args = append(args, "--"+f.Name, v)
		}
	})
	for _, k := range slices.Sorted(maps.Keys(run)) {
		if f := fl.Lookup(k); k != inputKey && (f == nil || unrecorded[k]) {
			warn("the job's run setting %s has no run flag: set it as the first run did", k)
		}
	}
	return args
}

// findInput returns the input file given, else the one the job recorded if
// it is a file, else the one run would have read for this output by default
// if it exists, else "".
func findInput(opts *StatusOptions, recorded string) (string, error) {
	if opts.Input == "-" {
		return "", usageErr("--input: status cannot count records on stdin; give the input file")
	}
	if opts.Input != "" {
		if fi, err := os.Stat(opts.Input); err != nil {
			return "", usageErr("--input: %v", unwrapPath(err))
		} else if fi.IsDir() {
			return "", usageErr("--input: %s is a directory, not a JSONL file", opts.Input)
		}
		return opts.Input, nil
	}
	if fi, err := os.Stat(recorded); recorded != "-" && err == nil && fi.Mode().IsRegular() {
		return recorded, nil
	}
	if base, ok := strings.CutSuffix(opts.Output, ".out.jsonl"); ok {
		if fi, err := os.Stat(base + ".jsonl"); err == nil && fi.Mode().IsRegular() {
			return base + ".jsonl", nil
		}
	}
	return "", nil
}
