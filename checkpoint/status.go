package checkpoint

// Status is what the journal knows of a key. Its values are the bytes written to disk, so they never change.
type Status byte

const (
	Done   Status = 'd' // a result line for the key is durable in the output
	Failed Status = 'f' // the key failed permanently (it is in the errors file)
	Bad    Status = 'b' // an input line that was rejected (the caller chooses the key, e.g. "line:12")
	Fixed  Status = 'r' // a rejected input line that has since been fixed: it counts no more
)

// String returns "done", "failed", "bad" or "fixed", or "Status(0x..)" for any other value.
func (s Status) String() string {
	switch s {
	case Done:
		return "done"
	case Failed:
		return "failed"
	case Bad:
		return "bad"
	case Fixed:
		return "fixed"
	}
	const hex = "0123456789abcdef"
	return "Status(0x" + string([]byte{hex[s>>4], hex[s&0xf]}) + ")"
}

// valid reports whether s is one of the statuses that may be written to a journal.
func (s Status) valid() bool { return s == Done || s == Failed || s == Bad || s == Fixed }
