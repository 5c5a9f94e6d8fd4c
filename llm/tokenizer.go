package llm

import (
	"fmt"
	"strings"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/llmbatch/llmbatch/internal/textclip"
)

// Encoding names accepted by [NewTokenizer].
const (
	CL100K = "cl100k_base" // GPT-4, GPT-3.5; the estimate used for other vendors' models
	O200K  = "o200k_base"  // GPT-4o, GPT-4.1, GPT-5, o-series
)

// encodings holds one lazily built encoder per known encoding, shared by
// every Tokenizer of the process: building one parses the embedded BPE ranks
// and sorts them, which costs tens of milliseconds and tens of MB, so it is
// done at most once per encoding, and only when a count is first needed.
var encodings = map[string]*lazyEncoding{
	CL100K: {name: CL100K},
	O200K:  {name: O200K},
}

// setLoader points tiktoken at the BPE files embedded in the binary, so that
// nothing is downloaded at run time. tiktoken keeps the loader in a package
// variable, so it is set once, before the first encoding is built.
var setLoader sync.Once

type lazyEncoding struct {
	name string
	once sync.Once
	tk   *tiktoken.Tiktoken
	err  error
}

func (e *lazyEncoding) get() (*tiktoken.Tiktoken, error) {
	e.once.Do(func() {
		setLoader.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
		e.tk, e.err = tiktoken.GetEncoding(e.name)
		if e.err != nil {
			e.err = fmt.Errorf("llm: tokenizer %s: %w", e.name, e.err)
		}
	})
	return e.tk, e.err
}

// Tokenizer counts tokens for one encoding. It is safe for concurrent use by
// multiple goroutines. The encoding is built on the first call to
// [Tokenizer.Count] or [Tokenizer.Load] and then shared by every Tokenizer of
// the same encoding in the process.
type Tokenizer struct {
	enc *lazyEncoding
}

// NewTokenizer returns a Tokenizer for encoding: "cl100k_base" or
// "o200k_base"; "" means cl100k_base. Another name is an error that lists
// the known ones. It is cheap: the encoding is built when first used.
func NewTokenizer(encoding string) (*Tokenizer, error) {
	if encoding == "" {
		encoding = CL100K
	}
	e, ok := encodings[encoding]
	if !ok {
		return nil, fmt.Errorf("llm: unknown tokenizer encoding %q (known: %s, %s)", encoding, CL100K, O200K)
	}
	return &Tokenizer{enc: e}, nil
}

// Load builds the encoding now, if it is not built yet, and reports whether
// it could be. Calling it is optional: it moves the one-time cost (see
// [Tokenizer]) to a moment of the caller's choosing and surfaces an error
// that Count would otherwise hide.
func (t *Tokenizer) Load() error {
	_, err := t.enc.get()
	return err
}

// Count returns the number of tokens of s. Special tokens such as
// "<|endoftext|>" in s are counted as ordinary text, as an API counts them in
// a user's message. If the encoding could not be built (the BPE files are
// embedded, so this means a broken build; [Tokenizer.Load] reports it), Count
// falls back to [EstimateTokens] rather than return a count of zero.
func (t *Tokenizer) Count(s string) int {
	if s == "" {
		return 0
	}
	tk, err := t.enc.get()
	if err != nil || len(s) > maxCountBytes {
		return EstimateTokens(s)
	}
	// BPE takes time in the square of a word's length, and a prompt may be
	// one long "word" (base64, a minified file): count it in pieces cut at
	// a space where there is one. Each cut may shift the count by a token.
	n := 0
	for len(s) > 0 {
		piece := s[:cutAt(s, countChunk)]
		n += len(tk.EncodeOrdinary(piece))
		s = s[len(piece):]
	}
	return n
}

const (
	countChunk    = 1 << 10  // bytes counted at once
	maxCountBytes = 16 << 20 // longer texts are estimated, not counted
)

// cutAt returns where to cut s to at most n bytes: at the last space in
// its second half (before it), else at a rune boundary.
func cutAt(s string, n int) int {
	if len(s) <= n {
		return len(s)
	}
	if i := strings.LastIndexAny(s[n/2:n], " \n\t"); i >= 0 {
		return n/2 + i // before the space: tokens carry their leading space
	}
	return len(textclip.Prefix(s, n))
}

// o200kPrefixes are the model families whose tokenizer is o200k_base.
var o200kPrefixes = []string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "o1", "o3", "o4"}

// EncodingFor returns the encoding to count tokens for model: o200k_base for
// OpenAI's GPT-4o, GPT-4.1, GPT-4.5, GPT-5 and o-series models, cl100k_base
// for everything else. A vendor prefix such as "openai/" is ignored and case
// does not matter.
//
// DeepSeek, Doubao, Qwen, Llama and the like have tokenizers of their own
// that are not shipped here; cl100k_base is a reasonable estimate of them
// (within some tens of percent), so callers that enforce a limit with it
// should apply a safety margin.
func EncodingFor(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for _, p := range o200kPrefixes {
		if !strings.HasPrefix(m, p) {
			continue
		}
		// "o1", "o3-mini" and "o4-mini-high", but not "o1x": the short
		// o-series names must end there or go on with a dash.
		if rest := m[len(p):]; p[0] != 'o' || rest == "" || rest[0] == '-' {
			return O200K
		}
	}
	return CL100K
}
