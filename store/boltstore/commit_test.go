package boltstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// holdCommit starts a write whose function blocks inside its commit until the returned
// release is called, and returns once that commit runs: writes added meanwhile stay pending.
// done gets the held write's outcome.
func holdCommit(t *testing.T, s *Store) (release func(), done <-chan error) {
	t.Helper()
	started, hold := make(chan struct{}), make(chan struct{})
	out := make(chan error, 1)
	go func() {
		out <- s.batch(func(*batchTx) error {
			close(started)
			<-hold
			return nil
		})
	}()
	<-started
	return sync.OnceFunc(func() { close(hold) }), out
}

// waitPending waits until n writes are pending, failing after a minute.
func waitPending(t *testing.T, s *Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		s.cmu.Lock()
		p := len(s.pending)
		s.cmu.Unlock()
		if p == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes pending, want %d", p, n)
		}
	}
}

// recv is <-ch, failing the test when nothing comes in a minute: a write never answered.
func recv(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(time.Minute):
		t.Fatal("a write was not answered in a minute")
		return nil
	}
}

// bumpAll starts n writers, each bumping its own target t0 ... t<n-1>, and returns where their
// outcomes arrive.
func bumpAll(t *testing.T, s *Store, n int) <-chan error {
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := s.Update(t.Context(), wkey(fmt.Sprintf("t%d", i)), bump)
			errs <- err
		}()
	}
	return errs
}

// bumpedOnce checks that targets t0 ... t<n-1> were each bumped once.
func bumpedOnce(t *testing.T, s *Store, n int) {
	t.Helper()
	for i := range n {
		if got := maxOf(t, s, fmt.Sprintf("t%d", i)); got != 1 {
			t.Errorf("t%d: maxReplicas %d, want 1", i, got)
		}
	}
}

// TestWritesArrivingDuringACommitShareTheNext: while one commit runs, the writes that arrive
// wait; one of them is then handed the lead and commits them together, up to MaxBatchSize per
// commit, handing the lead on until none is pending. Every write is answered and stored.
func TestWritesArrivingDuringACommitShareTheNext(t *testing.T) {
	const writers = 20
	for _, tc := range []struct {
		maxBatch, commits int
	}{
		{0, 1},  // the default, 64: one commit takes them all
		{8, 3},  // 8 + 8 + 4: the lead is handed on twice
		{1, 20}, // every write leads a commit of its own
	} {
		t.Run(fmt.Sprintf("maxBatch=%d", tc.maxBatch), func(t *testing.T) {
			opts := noCheckpoints
			opts.MaxBatchSize = tc.maxBatch
			// Not openT: its cleanup's Close would wait forever for a write never answered.
			s, err := Open(filepath.Join(t.TempDir(), "x.db"), opts)
			if err != nil {
				t.Fatal(err)
			}
			release, held := holdCommit(t, s)
			errs := bumpAll(t, s, writers)
			waitPending(t, s, writers)
			before := s.Stats()
			release()
			if err := recv(t, held); err != nil {
				t.Fatalf("held write: %v", err)
			}
			for range writers {
				if err := recv(t, errs); err != nil {
					t.Errorf("write: %v", err)
				}
			}
			after := s.Stats()
			if got := after.Commits - before.Commits; got != uint64(tc.commits) {
				t.Errorf("%d commits for %d pending writes, want %d", got, writers, tc.commits)
			}
			if got := after.CommitWrites - before.CommitWrites; got != writers {
				t.Errorf("commits carried %d writes, want %d", got, writers)
			}
			bumpedOnce(t, s, writers)
			s.cmu.Lock()
			leading, pending := s.leading, len(s.pending)
			s.cmu.Unlock()
			if leading || pending != 0 {
				t.Errorf("after every write returned: leading %v, %d pending; want no leader and none pending", leading, pending)
			}
			if err := s.Check(); err != nil {
				t.Error(err)
			}
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestCloseAnswersPendingWrites: Close waits for the writes already added, which commit, and
// refuses the ones after it; what was acknowledged is there after reopening.
func TestCloseAnswersPendingWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	s, err := Open(path, Options{MaxBatchSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	release, held := holdCommit(t, s)
	const writers = 10
	errs := bumpAll(t, s, writers)
	waitPending(t, s, writers)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Close marks the store closed before it waits: a write after that is refused.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		s.mu.RLock()
		c := s.closed
		s.mu.RUnlock()
		if c {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Close did not mark the store closed")
		}
	}
	if _, err := s.Update(t.Context(), wkey("late"), bump); err == nil {
		t.Error("Update after Close began: nil error, want the store's unavailable error")
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a commit was held and %d writes pending", err, writers)
	default:
	}
	release()
	if err := recv(t, held); err != nil {
		t.Fatalf("held write: %v", err)
	}
	for range writers {
		if err := recv(t, errs); err != nil {
			t.Errorf("pending write at Close: %v, want it committed", err)
		}
	}
	if err := recv(t, closed); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path, Options{})
	bumpedOnce(t, s, writers) // after reopening
	if _, err := s.Get(t.Context(), wkey("late")); err == nil {
		t.Error("the write refused at Close is stored")
	}
}

// TestFailedWriteInALedCommit: a write whose function fails inside a commit another write
// leads gets its own error, and the lead still passes on.
func TestFailedWriteInALedCommit(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "x.db"), Options{MaxBatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	release, held := holdCommit(t, s)
	boom := errors.New("boom")
	failed := make(chan error, 1)
	go func() { failed <- s.batch(func(*batchTx) error { panic(boom) }) }()
	waitPending(t, s, 1)
	errs := bumpAll(t, s, 3)
	waitPending(t, s, 4)
	release()
	if err := recv(t, held); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, failed); err == nil || err.Error() != "panic in update: boom" {
		t.Errorf("panicking write: %v, want its panic as its error", err)
	}
	for range 3 {
		if err := recv(t, errs); err != nil {
			t.Errorf("write sharing a commit with a failed one: %v", err)
		}
	}
	bumpedOnce(t, s, 3)
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}
