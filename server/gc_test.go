package server

import (
	"testing"
	"time"
)

// TestGCInterval: a pass every tenth of the TTL, at most every 10 minutes (the default TTL of
// 24 h: every 10 minutes, so a target is forgotten at most 10 minutes late).
func TestGCInterval(t *testing.T) {
	for ttl, want := range map[time.Duration]time.Duration{
		time.Second: 100 * time.Millisecond, time.Hour: 6 * time.Minute, 24 * time.Hour: 10 * time.Minute,
	} {
		if got := gcInterval(ttl); got != want {
			t.Errorf("gcInterval(%v) = %v, want %v", ttl, got, want)
		}
	}
}
