package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Settings are the answer-shaping settings of a run (model, system prompt, template, parameters...), recorded
// in the journal's header. [Open] refuses a journal recorded with different settings. A key that is absent
// compares equal to one whose value is "", so adding a setting with an empty default keeps old journals usable.
type Settings map[string]string

// version is the journal format written in the header. Open refuses any other.
const version = 1

// headerKey is the header's first field; it marks a file as a journal.
const headerKey = `{"llmbatch_checkpoint":`

// header is the journal's first line.
type header struct {
	Version  *int     `json:"llmbatch_checkpoint"`
	Settings Settings `json:"settings"`
}

var (
	errNotJournal = errors.New("not a checkpoint journal header")
	errVersion    = errors.New("unsupported checkpoint version")
)

// encodeHeader returns the header line for s, newline included.
func encodeHeader(s Settings) []byte {
	if s == nil {
		s = Settings{}
	}
	v := version
	b, err := json.Marshal(header{Version: &v, Settings: s})
	if err != nil {
		panic("checkpoint: encoding header: " + err.Error()) // a map of strings always encodes
	}
	return append(b, '\n')
}

// parseHeader reads the settings out of a header line (without its newline).
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
	return h.Settings, nil
}

// diffSettings lists the keys whose values differ between old and new, sorted by key.
func diffSettings(old, new Settings) []SettingDiff {
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
