package batch

import (
	"slices"
	"time"
)

// PackerConfig sets the caps of a [Packer]. A zero field takes its default.
type PackerConfig struct {
	MaxItems  int           // items per merged request at most; default 20
	MaxTokens int           // the items' prompt tokens (Item.PromptTokens) summed, at most; default 8000
	Wait      time.Duration // a partly filled group is released this long after its first item; default 200ms
}

// A Packer groups mergeable items into the requests of DESIGN §4: items of
// the same Group key share a request, up to MaxItems items and MaxTokens
// prompt tokens. Items that cannot be merged, and items too large to share,
// are released at once as groups of one; the caller sends a group of one as
// the item's own request.
//
// A Packer is a plain value owned by one goroutine: it is not safe for
// concurrent use, starts no goroutine and keeps no timer. Time comes in as
// the now argument, and the owner keeps the timer, asking [Packer.UntilNext]
// how long to set it for. Memory is bounded by the open groups: at most
// MaxItems items for each Group key seen within the last Wait.
//
// # Use
//
// The owning loop (the packer stage of the pipeline) looks like this:
//
//	p := NewPacker(cfg)
//	t := time.NewTimer(time.Hour)
//	defer t.Stop()
//	for {
//		if d, ok := p.UntilNext(time.Now()); ok {
//			t.Reset(d)
//		}
//		select {
//		case it, ok := <-items:
//			if !ok {
//				send(p.Flush()...)
//				return
//			}
//			send(p.Add(it, time.Now())...)
//		case <-t.C:
//			send(p.Due(time.Now())...)
//		case <-ctx.Done():
//			return
//		}
//	}
type Packer struct {
	cfg   PackerConfig
	byKey map[string]*openGroup
	open  []*openGroup // in the order they were opened, so ties release oldest first
}

// openGroup is a group still taking items.
type openGroup struct {
	key    string
	items  []*Item
	tokens int       // the items' prompt tokens summed
	since  time.Time // when the first item was added
}

// NewPacker returns an empty Packer with cfg's caps, defaults filled in.
func NewPacker(cfg PackerConfig) *Packer {
	if cfg.MaxItems <= 0 {
		cfg.MaxItems = 20
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 8000
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 200 * time.Millisecond
	}
	return &Packer{cfg: cfg, byKey: map[string]*openGroup{}}
}

// Add takes one item that arrived at now and returns the groups it made
// ready, oldest first, or nil:
//   - an item with no Prompt, or whose prompt alone exceeds MaxTokens, is
//     returned at once as a group of one, and no open group changes;
//   - otherwise, if the item would push the open group of its Group key past
//     MaxTokens, that group is returned and the item starts a new one;
//   - a group that reaches MaxItems with the item is returned.
//
// Items keep the order in which they were added.
func (p *Packer) Add(it *Item, now time.Time) (ready [][]*Item) {
	if it.Prompt == "" {
		return [][]*Item{{it}}
	}
	n := it.PromptTokens
	if n > p.cfg.MaxTokens {
		return [][]*Item{{it}}
	}
	g := p.byKey[it.Group]
	if g != nil && g.tokens+n > p.cfg.MaxTokens {
		ready = append(ready, p.release(g))
		g = nil
	}
	if g == nil {
		g = &openGroup{key: it.Group, since: now, items: make([]*Item, 0, min(p.cfg.MaxItems, 8))}
		p.byKey[it.Group] = g
		p.open = append(p.open, g)
	}
	g.items = append(g.items, it)
	g.tokens += n
	if len(g.items) >= p.cfg.MaxItems {
		ready = append(ready, p.release(g))
	}
	return ready
}

// Due returns the groups whose first item has waited at least Wait at now,
// oldest first, and closes them; nil when none is due.
func (p *Packer) Due(now time.Time) [][]*Item {
	var ready [][]*Item
	kept := p.open[:0]
	for _, g := range p.open {
		if now.Before(g.since.Add(p.cfg.Wait)) {
			kept = append(kept, g)
			continue
		}
		ready = append(ready, g.items)
		delete(p.byKey, g.key)
	}
	clear(p.open[len(kept):]) // let the released groups be collected
	p.open = kept
	return ready
}

// Flush returns every open group, oldest first, and leaves the Packer empty;
// nil when none is open. The owner calls it at the end of the input.
func (p *Packer) Flush() [][]*Item {
	var ready [][]*Item
	for _, g := range p.open {
		ready = append(ready, g.items)
	}
	p.open = nil
	clear(p.byKey)
	return ready
}

// UntilNext returns how long after now the next open group is due (0 when
// one is due already), and false when no group is open, so no timer is
// needed.
func (p *Packer) UntilNext(now time.Time) (time.Duration, bool) {
	if len(p.open) == 0 {
		return 0, false
	}
	first := p.open[0].since
	for _, g := range p.open[1:] { // the clock of the caller may step back
		if g.since.Before(first) {
			first = g.since
		}
	}
	return max(0, first.Add(p.cfg.Wait).Sub(now)), true
}

// release closes g and returns its items.
func (p *Packer) release(g *openGroup) []*Item {
	delete(p.byKey, g.key)
	if i := slices.Index(p.open, g); i >= 0 {
		p.open = slices.Delete(p.open, i, i+1)
	}
	return g.items
}
