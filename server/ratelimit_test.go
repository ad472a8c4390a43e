package server

import (
	"fmt"
	"testing"
	"time"
)

func TestRateLimiterRefillsAndEvicts(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	l := newRateLimiter(2, 3) // 2/s, burst 3
	l.now = func() time.Time { return now }

	for i := range 3 {
		if ok, _ := l.allow("a"); !ok {
			t.Fatalf("call %d within the burst refused", i)
		}
	}
	ok, wait := l.allow("a")
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("over the burst: ok %v wait %v, want false 500ms", ok, wait)
	}
	if ok, _ := l.allow("b"); !ok {
		t.Fatal("another cluster refused")
	}
	now = now.Add(500 * time.Millisecond)
	if ok, _ := l.allow("a"); !ok {
		t.Fatal("refused after the advertised wait")
	}

	// The map stays bounded: full-again limiters go first, then the least recently used.
	l.max = 4
	for i := range 10 {
		now = now.Add(10 * time.Millisecond)
		l.allow(fmt.Sprintf("c%d", i))
		if n := l.size(); n > l.max {
			t.Fatalf("%d limiters, want at most %d", n, l.max)
		}
	}
	if _, ok := l.clusters["c9"]; !ok {
		t.Error("the newest limiter was evicted")
	}
	now = now.Add(time.Hour)
	l.allow("late")
	if n := l.size(); n != 1 {
		t.Errorf("%d buckets after an hour idle, want only the new one", n)
	}
}

func TestNoRateLimiterAllowsEverything(t *testing.T) {
	l := newRateLimiter(0, 10)
	if l != nil {
		t.Fatal("rate 0 built a limiter")
	}
	if ok, _ := l.allow("a"); !ok {
		t.Error("a nil limiter refused")
	}
}
