package pace

import (
	"testing"
	"time"
)

func TestMeter(t *testing.T) {
	var m meter
	if got := m.sum(t0, at(time.Minute)); got != 0 || !m.first.IsZero() {
		t.Errorf("empty meter: sum %v, first %v; want 0, zero", got, m.first)
	}
	// 20 a second for 10 s, from 2 s on.
	for i := range 200 {
		m.add(at(2*time.Second+time.Duration(i)*50*time.Millisecond), 1)
	}
	tests := []struct {
		name     string
		from, to time.Duration
		want     float64
	}{
		{"the last 4 s", 8 * time.Second, 11*time.Second + 950*time.Millisecond, 80},
		{"all of it", 0, time.Minute, 200},
		{"whole slots: the one to falls in counts whole", 2 * time.Second, 2*time.Second + 10*time.Millisecond, 4},
		{"nothing before the first", 0, time.Second, 0},
	}
	for _, tt := range tests {
		if got := m.sum(at(tt.from), at(tt.to)); got != tt.want {
			t.Errorf("%s: sum = %v, want %v", tt.name, got, tt.want)
		}
	}
	// A slot older than the memory is forgotten, not counted again.
	later := at(2*time.Second + time.Duration(len(m.slots))*meterSlot)
	m.add(later, 5)
	if got := m.sum(later.Add(-memory), later); got != 200-4+5 {
		t.Errorf("after a slot was reused: sum over the memory = %v, want %v", got, 200-4+5)
	}
}
