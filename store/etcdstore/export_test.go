package etcdstore

import (
	"context"
	"time"
)

// DeleteUnseenSinceWithPause is DeleteUnseenSince running between after each range read, before
// that batch's guarded deletions.
func (s *Store) DeleteUnseenSinceWithPause(ctx context.Context, cutoff time.Time, between func()) (int, error) {
	return s.deleteUnseenSince(ctx, cutoff, between)
}
