package llm

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTokenizerCount(t *testing.T) {
	tests := []struct {
		encoding string
		s        string
		want     int
	}{
		// Reference counts from OpenAI's Python tiktoken.
		{CL100K, "", 0},
		{CL100K, "hello world", 2},                     // [15339 1917]
		{CL100K, "hello world!你好，世界！", 10},             // tiktoken-go's test vector, from Python
		{CL100K, "tiktoken is great!", 6},              // the OpenAI cookbook's example
		{"", "tiktoken is great!", 6},                  // "" is cl100k_base
		{CL100K, "<|endoftext|>", 7},                   // a special token in user text is plain text
		{O200K, "hello world", 2},                      // [24912 2375]
		{O200K, "hello world!你好，世界！", 7},               // o200k is denser on CJK
		{O200K, "a" + strings.Repeat(" a", 999), 1000}, // " a" is one token
	}
	for _, tt := range tests {
		tk, err := NewTokenizer(tt.encoding)
		if err != nil {
			t.Fatalf("NewTokenizer(%q): %v", tt.encoding, err)
		}
		if got := tk.Count(tt.s); got != tt.want {
			t.Errorf("NewTokenizer(%q).Count(%.30q) = %d, want %d", tt.encoding, tt.s, got, tt.want)
		}
	}
}

func TestNewTokenizerUnknown(t *testing.T) {
	_, err := NewTokenizer("p50k_base")
	if err == nil {
		t.Fatal(`NewTokenizer("p50k_base") = nil error, want one naming the known encodings`)
	}
	for _, name := range []string{CL100K, O200K} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("NewTokenizer(\"p50k_base\") error %q does not name %s", err, name)
		}
	}
}

// TestTokenizerConcurrent has many goroutines build and use the encoding at
// once; run with -race.
func TestTokenizerConcurrent(t *testing.T) {
	tk, err := NewTokenizer(CL100K)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			s := fmt.Sprintf("item %d: hello world", i)
			if n := tk.Count(s); n < 4 || n > 8 {
				t.Errorf("Count(%q) = %d, want 4..8", s, n)
			}
		})
	}
	wg.Wait()
}

func TestEncodingFor(t *testing.T) {
	tests := []struct{ model, want string }{
		{"gpt-4o", O200K},
		{"gpt-4o-mini-2024-07-18", O200K},
		{"chatgpt-4o-latest", O200K},
		{"gpt-4.1-nano", O200K},
		{"gpt-5", O200K},
		{"gpt-5.1-mini", O200K},
		{"o1", O200K},
		{"o3-mini", O200K},
		{"o4-mini-high", O200K},
		{"openai/gpt-4o", O200K},
		{"GPT-4O", O200K},
		{"gpt-4", CL100K},
		{"gpt-4-turbo", CL100K},
		{"gpt-3.5-turbo", CL100K},
		{"deepseek-chat", CL100K},
		{"doubao-seed-1-6-250615", CL100K},
		{"qwen2.5:7b", CL100K},
		{"llama3", CL100K},
		{"o1x", CL100K},
		{"ollama", CL100K},
		{"", CL100K},
	}
	for _, tt := range tests {
		if got := EncodingFor(tt.model); got != tt.want {
			t.Errorf("EncodingFor(%q) = %q, want %q", tt.model, got, tt.want)
		}
	}
}

func ExampleTokenizer_Count() {
	tk, err := NewTokenizer(EncodingFor("gpt-4o-mini"))
	if err != nil {
		panic(err)
	}
	fmt.Println(tk.Count("hello world"))
	// Output: 2
}

// BenchmarkTokenizerCount counts a short support ticket, the typical item
// of a merged run.
func BenchmarkTokenizerCount(b *testing.B) {
	for _, enc := range []string{CL100K, O200K} {
		b.Run(enc, func(b *testing.B) {
			tk, _ := NewTokenizer(enc)
			if err := tk.Load(); err != nil {
				b.Fatal(err)
			}
			s := "Classify this support ticket: my card was charged twice for the same order, please refund one."
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				tk.Count(s)
			}
		})
	}
}

// BenchmarkTokenizerLoad builds an encoder as the first Count of a run does.
// tiktoken caches the parsed ranks, so after the first iteration this
// measures building the encoder from them; the first load of a process also
// parses the embedded file (about 0.1 s for cl100k_base).
func BenchmarkTokenizerLoad(b *testing.B) {
	for _, enc := range []string{CL100K, O200K} {
		b.Run(enc, func(b *testing.B) {
			for b.Loop() {
				e := &lazyEncoding{name: enc}
				if _, err := e.get(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCountLongWordIsFast: a prompt that is one long "word" (base64, say)
// must not take the square of its length to count.
func TestCountLongWordIsFast(t *testing.T) {
	tk, err := NewTokenizer("")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() { done <- tk.Count(strings.Repeat("A", 256<<10)) }()
	select {
	case n := <-done:
		if n < 256<<10/16 || n > 256<<10 {
			t.Errorf("Count(256 KiB of A) = %d, want a plausible count", n)
		}
	case <-time.After(20 * time.Second): // some hundred ms when chunked; minutes when not
		t.Fatal("Count(256 KiB without a space) did not finish in 20s")
	}
	if a, b := tk.Count("hello world, this is a test"), tk.Count("hello world, this is a test"); a != b || a < 5 {
		t.Errorf("Count of a short text = %d, %d", a, b)
	}
}
