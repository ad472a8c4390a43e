package server

import (
	"math"
	"sync"
	"time"
)

// maxRateBuckets bounds the per-cluster buckets kept in memory. Buckets idle long enough to
// be full again are evicted first (losslessly: a new bucket starts full); only when every
// bucket is busy does the least recently used one go.
const maxRateBuckets = 10000

// rateLimiter is a token bucket per cluster: rate tokens per second up to burst; one
// Recommend takes one token. It reads the wall clock, not the decision clock.
type rateLimiter struct {
	rate  float64
	burst float64
	max   int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// newRateLimiter returns nil (no limit) when rate is not positive.
func newRateLimiter(rate float64, burst int) *rateLimiter {
	if rate <= 0 {
		return nil
	}
	return &rateLimiter{rate: rate, burst: float64(max(burst, 1)), max: maxRateBuckets, now: time.Now, buckets: map[string]*bucket{}}
}

// allow takes a token from cluster's bucket; when it is empty it returns false and how long
// until a token is available.
func (l *rateLimiter) allow(cluster string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[cluster]
	if !ok {
		if len(l.buckets) >= l.max {
			l.evict(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[cluster] = b
	}
	l.refill(b, now)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration(math.Ceil((1 - b.tokens) / l.rate * float64(time.Second)))
	return false, max(wait, time.Millisecond)
}

func (l *rateLimiter) refill(b *bucket, now time.Time) {
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(l.burst, b.tokens+el.Seconds()*l.rate)
		b.last = now
	}
}

// evict drops every bucket that is full again; if none is, the least recently used one.
func (l *rateLimiter) evict(now time.Time) {
	var lru string
	var lruTime time.Time
	found := false
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
			continue
		}
		if !found || b.last.Before(lruTime) {
			lru, lruTime, found = k, b.last, true
		}
	}
	if len(l.buckets) >= l.max && found {
		delete(l.buckets, lru)
	}
}

// size is the number of buckets held (tests).
func (l *rateLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
