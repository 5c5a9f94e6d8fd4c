package batch

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/llmbatch/llmbatch/llm"
)

// encodeObject is json.Marshal of obj with, when msgs is not nil, a
// "messages" field holding msgs: keys sorted, values compacted. It writes
// into a buffer sized once, so that a prompt of many megabytes is copied
// once where the encoder's doubling buffer (and a RawMessage per level)
// would copy it several times.
func encodeObject(obj map[string]json.RawMessage, msgs []llm.Message) ([]byte, error) {
	keys := make([]string, 0, len(obj)+1)
	n := 2
	for k, v := range obj {
		keys = append(keys, k)
		n += len(k) + len(v) + 8
	}
	if msgs != nil {
		keys = append(keys, "messages")
		for _, m := range msgs {
			n += len(m.Role) + len(m.Content) + 32
		}
	}
	slices.Sort(keys)
	b := bytes.NewBuffer(make([]byte, 0, n))
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(k) // a string always marshals
		b.Write(name)
		b.WriteByte(':')
		var err error
		if k == "messages" && msgs != nil {
			err = encodeMessages(b, msgs)
		} else {
			err = json.Compact(b, obj[k])
		}
		if err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// encodeMessages appends msgs to b as json.Marshal would, but for HTML
// characters, which it leaves as they are.
func encodeMessages(b *bytes.Buffer, msgs []llm.Message) error {
	b.WriteByte('[')
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		role, _ := json.Marshal(m.Role)
		b.WriteString(`{"role":`)
		b.Write(role)
		b.WriteString(`,"content":`)
		if len(m.Content) == 0 {
			b.WriteString("null")
		} else if err := json.Compact(b, m.Content); err != nil {
			return err
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return nil
}
