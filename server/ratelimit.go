package server

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxRateLimiters bounds the per-cluster limiters kept in memory. Limiters idle long enough to
// be full again are dropped first (losslessly: a new limiter starts full); only when every one
// is busy does the least recently used one go.
const maxRateLimiters = 10000

// rateLimiter is Config.RateLimit: a golang.org/x/time/rate token bucket per cluster, rate
// tokens per second up to burst; one Recommend takes one token. It reads the wall clock, not
// the decision clock.
type rateLimiter struct {
	limit rate.Limit
	burst int
	max   int
	now   func() time.Time

	mu       sync.Mutex
	clusters map[string]*clusterLimiter
}

type clusterLimiter struct {
	*rate.Limiter
	last time.Time // the last call's
}

// newRateLimiter returns nil (no limit) when r is not positive.
func newRateLimiter(r float64, burst int) *rateLimiter {
	if r <= 0 {
		return nil
	}
	return &rateLimiter{limit: rate.Limit(r), burst: max(burst, 1), max: maxRateLimiters, now: time.Now,
		clusters: map[string]*clusterLimiter{}}
}

// allow takes a token from cluster's bucket; when it is empty it returns false and how long
// until a token is available.
func (l *rateLimiter) allow(cluster string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	c, ok := l.clusters[cluster]
	if !ok {
		if len(l.clusters) >= l.max {
			l.evict(now)
		}
		c = &clusterLimiter{Limiter: rate.NewLimiter(l.limit, l.burst)}
		l.clusters[cluster] = c
	}
	c.last = now
	l.mu.Unlock()
	r := c.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now) // refused: the token is not taken
		return false, max(wait, time.Millisecond)
	}
	return true, 0
}

// evict drops every limiter that is full again; if none is, the least recently used one.
func (l *rateLimiter) evict(now time.Time) {
	var lru string
	var lruTime time.Time
	found := false
	for k, c := range l.clusters {
		if c.TokensAt(now) >= float64(l.burst) {
			delete(l.clusters, k)
			continue
		}
		if !found || c.last.Before(lruTime) {
			lru, lruTime, found = k, c.last, true
		}
	}
	if len(l.clusters) >= l.max && found {
		delete(l.clusters, lru)
	}
}

// size is the number of limiters held (tests).
func (l *rateLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clusters)
}
