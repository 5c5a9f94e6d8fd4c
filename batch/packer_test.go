package batch

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// packItem returns a mergeable item for packer tests whose prompt weighs n
// tokens; n = 0 makes an item that cannot be merged.
func packItem(id, group string, n int) *Item {
	return &Item{ID: id, Group: group, Prompt: strings.Repeat("x", n), PromptTokens: n}
}

// groupIDs shows groups as "a b|c": items of a group by id, groups apart by "|".
func groupIDs(groups [][]*Item) string {
	var gs []string
	for _, g := range groups {
		var s []string
		for _, it := range g {
			s = append(s, it.ID)
		}
		gs = append(gs, strings.Join(s, " "))
	}
	return strings.Join(gs, "|")
}

func TestPacker(t *testing.T) {
	type step struct {
		at   int   // milliseconds after the start
		add  *Item // else:
		op   string
		want string // the groups released, as groupIDs() shows them
	}
	tests := []struct {
		name  string
		cfg   PackerConfig
		steps []step
	}{
		{"full at MaxItems", PackerConfig{MaxItems: 3}, []step{
			{add: packItem("a", "g", 1)}, {add: packItem("b", "g", 1)}, {add: packItem("c", "g", 1), want: "a b c"},
			{add: packItem("d", "g", 1)}, {op: "flush", want: "d"},
		}},
		{"MaxItems 1 sends each alone", PackerConfig{MaxItems: 1}, []step{
			{add: packItem("a", "g", 1), want: "a"}, {add: packItem("b", "g", 1), want: "b"}, {op: "flush"},
		}},
		{"no prompt goes alone and leaves the open group", PackerConfig{MaxItems: 2}, []step{
			{add: packItem("a", "g", 1)}, {add: packItem("x", "g", 0), want: "x"}, {add: packItem("b", "g", 1), want: "a b"},
		}},
		{"too large goes alone", PackerConfig{MaxTokens: 10}, []step{
			{add: packItem("a", "g", 3)}, {add: packItem("big", "g", 11), want: "big"},
			{add: packItem("edge", "g", 7)}, {op: "flush", want: "a edge"},
		}},
		{"token cap releases the open group", PackerConfig{MaxTokens: 10}, []step{
			{add: packItem("a", "g", 4)}, {add: packItem("b", "g", 4)}, {add: packItem("c", "g", 4), want: "a b"},
			{add: packItem("d", "g", 6)}, {add: packItem("e", "g", 1), want: "c d"}, {op: "flush", want: "e"},
		}},
		{"token cap then MaxItems in one Add", PackerConfig{MaxItems: 1, MaxTokens: 10}, []step{
			// MaxItems 1 releases every item at once, so the token cap never has an open group to close.
			{add: packItem("a", "g", 9), want: "a"}, {add: packItem("b", "g", 9), want: "b"},
		}},
		{"groups by key", PackerConfig{MaxItems: 2}, []step{
			{add: packItem("a", "g1", 1)}, {add: packItem("b", "g2", 1)}, {add: packItem("c", "g1", 1), want: "a c"},
			{add: packItem("d", "", 1)}, {op: "flush", want: "b|d"},
		}},
		{"due after Wait, per group", PackerConfig{Wait: 100 * time.Millisecond}, []step{
			{at: 0, add: packItem("a", "g1", 1)}, {at: 50, add: packItem("b", "g2", 1)}, {at: 60, add: packItem("c", "g1", 1)},
			{at: 99, op: "due"}, {at: 100, op: "due", want: "a c"}, {at: 140, op: "due"},
			{at: 145, add: packItem("d", "g1", 1)}, {at: 150, op: "due", want: "b"}, {at: 300, op: "due", want: "d"},
			{at: 400, op: "due"}, {op: "flush"},
		}},
		{"due releases oldest first", PackerConfig{Wait: 10 * time.Millisecond}, []step{
			{at: 0, add: packItem("a", "g2", 1)}, {at: 1, add: packItem("b", "g1", 1)}, {at: 2, add: packItem("c", "g3", 1)},
			{at: 50, op: "due", want: "a|b|c"},
		}},
		{"a full group restarts the clock", PackerConfig{MaxItems: 2, Wait: 100 * time.Millisecond}, []step{
			{at: 0, add: packItem("a", "g", 1)}, {at: 90, add: packItem("b", "g", 1), want: "a b"},
			{at: 95, add: packItem("c", "g", 1)}, {at: 120, op: "due"}, {at: 195, op: "due", want: "c"},
		}},
		{"flush empty", PackerConfig{}, []step{{op: "flush"}, {op: "due"}}},
		{"defaults: 20 items", PackerConfig{}, func() []step {
			var s []step
			for i := range 19 {
				s = append(s, step{add: packItem(fmt.Sprint(i), "g", 10)})
			}
			return append(s, step{add: packItem("19", "g", 10), want: "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19"})
		}()},
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPacker(tt.cfg)
			for i, s := range tt.steps {
				now := t0.Add(time.Duration(s.at) * time.Millisecond)
				var got [][]*Item
				var call string
				switch {
				case s.add != nil:
					got, call = p.Add(s.add, now), fmt.Sprintf("Add(%s)", s.add.ID)
				case s.op == "due":
					got, call = p.Due(now), "Due"
				case s.op == "flush":
					got, call = p.Flush(), "Flush"
				}
				if groupIDs(got) != s.want {
					t.Errorf("step %d at %dms: %s = %q, want %q", i, s.at, call, groupIDs(got), s.want)
				}
			}
		})
	}
}

func TestPackerUntilNext(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	p := NewPacker(PackerConfig{Wait: 200 * time.Millisecond})
	check := func(at int, wantD time.Duration, wantOK bool) {
		t.Helper()
		if d, ok := p.UntilNext(ms(at)); d != wantD || ok != wantOK {
			t.Errorf("UntilNext(+%dms) = %v, %v, want %v, %v", at, d, ok, wantD, wantOK)
		}
	}
	check(0, 0, false)
	p.Add(packItem("x", "g", 0), ms(0)) // goes alone: nothing opens
	check(0, 0, false)
	p.Add(packItem("a", "g1", 1), ms(10))
	p.Add(packItem("b", "g2", 1), ms(60))
	check(50, 160*time.Millisecond, true)
	check(210, 0, true)
	check(500, 0, true) // overdue: no negative durations
	p.Due(ms(210))
	check(210, 50*time.Millisecond, true)
	p.Flush()
	check(210, 0, false)
}

// TestPackerProperties feeds random items and checks what any sequence
// must give: every item comes out exactly once; a group holds items of one
// key in the order added, within the caps (a group of one may exceed the
// token cap); Due never releases a group before its Wait.
func TestPackerProperties(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		cfg := PackerConfig{MaxItems: 1 + r.IntN(6), MaxTokens: 5 + r.IntN(30), Wait: time.Duration(1+r.IntN(50)) * time.Millisecond}
		p := NewPacker(cfg)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		added := map[*Item]int{} // order of adding
		firstAdd := map[*Item]time.Time{}
		seen := map[*Item]bool{}
		check := func(groups [][]*Item, due bool) {
			for _, g := range groups {
				if len(g) == 0 || len(g) > cfg.MaxItems {
					t.Fatalf("seed %d: group of %d items, MaxItems %d", seed, len(g), cfg.MaxItems)
				}
				tokens := 0
				for i, it := range g {
					if seen[it] {
						t.Fatalf("seed %d: item %s released twice", seed, it.ID)
					}
					seen[it] = true
					tokens += len(it.Prompt)
					if i > 0 && (it.Group != g[0].Group || added[it] < added[g[i-1]]) {
						t.Fatalf("seed %d: group %q mixes keys or order", seed, groupIDs([][]*Item{g}))
					}
				}
				if len(g) > 1 && tokens > cfg.MaxTokens {
					t.Fatalf("seed %d: group of %d tokens, MaxTokens %d", seed, tokens, cfg.MaxTokens)
				}
				if due && now.Sub(firstAdd[g[0]]) < cfg.Wait {
					t.Fatalf("seed %d: Due released %q after %v, Wait %v", seed, groupIDs([][]*Item{g}), now.Sub(firstAdd[g[0]]), cfg.Wait)
				}
			}
		}
		for i := range 300 {
			now = now.Add(time.Duration(r.IntN(10)) * time.Millisecond)
			if r.IntN(4) == 0 {
				check(p.Due(now), true)
				continue
			}
			it := packItem(fmt.Sprint(i), fmt.Sprint("g", r.IntN(3)), r.IntN(cfg.MaxTokens+5))
			added[it], firstAdd[it] = i, now
			check(p.Add(it, now), false)
		}
		check(p.Flush(), false)
		if len(seen) != len(added) {
			t.Fatalf("seed %d: %d items released, %d added", seed, len(seen), len(added))
		}
	}
}

func BenchmarkPackerAdd(b *testing.B) {
	p := NewPacker(PackerConfig{})
	items := make([]*Item, 1000)
	for i := range items {
		items[i] = packItem(fmt.Sprint(i), fmt.Sprint("g", i%4), 20+i%180)
	}
	now := time.Now()
	i := 0
	for b.Loop() {
		p.Add(items[i%len(items)], now)
		i++
	}
}
