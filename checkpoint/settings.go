package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Settings are the settings of a run, recorded in the journal's header. They are of two kinds:
//
//   - Answer-shaping settings (model, system prompt, template, parameters...): [Open] refuses a journal recorded
//     with different ones, since resuming would mix answers to two different questions. A key that is absent
//     compares equal to one whose value is "", so adding a setting with an empty default keeps old journals usable.
//   - Run settings, whose keys begin with [RunPrefix]: how the run was made (provider, endpoint, concurrency,
//     limits...), enough for `llmbatch status` to print the command that resumes the job. They are recorded when
//     the journal is created and never compared, so a rerun may change them; they must never hold a secret.
//
// Both kinds travel in one map so that a caller records them with the one [Open] call it already makes.
type Settings map[string]string

// RunPrefix begins the keys of [Settings] that are run settings: "run.concurrency" records a run's concurrency.
// A journal written before run settings existed has none.
const RunPrefix = "run."

// Run returns the run settings of s, without their prefix: {"run.rpm": "60"} gives {"rpm": "60"}. It returns an
// empty map when s has none.
func (s Settings) Run() map[string]string {
	run := map[string]string{}
	for k, v := range s {
		if name, ok := strings.CutPrefix(k, RunPrefix); ok {
			run[name] = v
		}
	}
	return run
}

// Answer returns the answer-shaping settings of s: every key but the run settings.
func (s Settings) Answer() Settings {
	answer := Settings{}
	for k, v := range s {
		if !strings.HasPrefix(k, RunPrefix) {
			answer[k] = v
		}
	}
	return answer
}

// version is the journal format written in the header. Open refuses any other. Run settings did not change it:
// they sit in a header field of their own, which a reader that predates them ignores.
const version = 1

// headerKey is the header's first field; it marks a file as a journal.
const headerKey = `{"llmbatch_checkpoint":`

// header is the journal's first line. Run holds the run settings without their prefix, and is left out when
// there are none, so that such a header reads exactly as before run settings existed.
type header struct {
	Version  *int              `json:"llmbatch_checkpoint"`
	Settings Settings          `json:"settings"`
	Run      map[string]string `json:"run,omitempty"`
}

var (
	errNotJournal = errors.New("not a checkpoint journal header")
	errVersion    = errors.New("unsupported checkpoint version")
)

// encodeHeader returns the header line for s, newline included.
func encodeHeader(s Settings) []byte {
	v := version
	b, err := json.Marshal(header{Version: &v, Settings: s.Answer(), Run: s.Run()})
	if err != nil {
		panic("checkpoint: encoding header: " + err.Error()) // maps of strings always encode
	}
	return append(b, '\n')
}

// parseHeader reads the settings out of a header line (without its newline), run settings included under
// their prefix.
func parseHeader(line []byte) (Settings, error) {
	if !bytes.HasPrefix(line, []byte(headerKey)) {
		return nil, errNotJournal
	}
	var h header
	if err := json.Unmarshal(line, &h); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotJournal, err)
	}
	if h.Version == nil {
		return nil, errNotJournal
	}
	if *h.Version != version {
		return nil, fmt.Errorf("%w %d (this llmbatch reads version %d)", errVersion, *h.Version, version)
	}
	s := h.Settings.Answer() // a prefixed key here is not a run setting: keep it out of the way
	if len(h.Settings) == 0 && len(h.Run) == 0 {
		return h.Settings, nil // nil stays nil, as before run settings existed
	}
	for k, v := range h.Run {
		s[RunPrefix+k] = v
	}
	return s, nil
}

// diffSettings lists the answer-shaping keys whose values differ between old and new, sorted by key. Run
// settings are not compared.
func diffSettings(old, new Settings) []SettingDiff {
	old, new = old.Answer(), new.Answer()
	var diff []SettingDiff
	for k, o := range old {
		if n := new[k]; n != o {
			diff = append(diff, SettingDiff{Key: k, Old: o, New: n})
		}
	}
	for k, n := range new {
		if _, ok := old[k]; !ok && n != "" {
			diff = append(diff, SettingDiff{Key: k, New: n})
		}
	}
	slices.SortFunc(diff, func(a, b SettingDiff) int { return cmp.Compare(a.Key, b.Key) })
	return diff
}

// tornHeader reports whether b, a file with no complete line, is what is left of a header whose write was cut
// short: a prefix of it, or more than the header's key, possibly followed by NUL bytes where a power loss
// kept the file's new size but not its data (a file of NULs alone qualifies). Such a file holds no records
// (the header is synced before any record is written), so it is safe to start it afresh; anything else is
// some other file, which must not be overwritten.
func tornHeader(b []byte) bool {
	b = bytes.TrimRight(b, "\x00")
	return bytes.HasPrefix(b, []byte(headerKey)) || bytes.HasPrefix([]byte(headerKey), b)
}
