package boltstore

import (
	"sync"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// committer is the store's one piece of write machinery: a goroutine that commits, in one
// bbolt write transaction, every write that waits when the previous commit ends. It replaces
// DB.Batch, which closes a batch when it holds MaxBatchSize writes or MaxBatchDelay after its
// first: a batch closed by the delay waits for the write lock while the next one fills, so on a
// disk whose commit takes longer than the delay every commit carries only a delay's worth of
// writes, however many wait (the package doc has the figures). Here a commit takes whatever
// waits, up to maxBatch, and never waits for more.
//
// A transaction whose function fails is rolled back, and each of its writes is then committed
// alone, as DB.Batch does: one write's failure is not its neighbours'. So a write's function
// may run more than once; Update's starts afresh each time.
type committer struct {
	db       *bolt.DB
	maxBatch int
	calls    chan *call
	stop     chan struct{} // closed by close: no call is taken after it
	stopOnce sync.Once
	stopped  chan struct{} // closed when the goroutine has returned
}

// call is one write waiting for its commit.
type call struct {
	fn  func(*bolt.Tx) error
	err chan error // buffered: the committer never waits for the writer
}

func newCommitter(db *bolt.DB, maxBatch int) *committer {
	c := &committer{db: db, maxBatch: maxBatch, calls: make(chan *call), stop: make(chan struct{}), stopped: make(chan struct{})}
	go c.run()
	return c
}

// write commits fn in a transaction with the writes waiting at the same time, and returns the
// error of the transaction fn ended up in (or of fn's own transaction, after a failed batch).
// After close it returns bbolt's ErrDatabaseNotOpen.
func (c *committer) write(fn func(*bolt.Tx) error) error {
	cl := &call{fn: fn, err: make(chan error, 1)}
	select {
	case c.calls <- cl:
		return <-cl.err
	case <-c.stop:
		return bolterrors.ErrDatabaseNotOpen
	}
}

func (c *committer) run() {
	defer close(c.stopped)
	batch := make([]*call, 0, c.maxBatch)
	for {
		select {
		case cl := <-c.calls:
			batch = append(batch[:0], cl)
		case <-c.stop:
			return
		}
		// The writers that arrived during the last commit are blocked on the send: take them.
	more:
		for len(batch) < c.maxBatch {
			select {
			case cl := <-c.calls:
				batch = append(batch, cl)
			default:
				break more
			}
		}
		c.commit(batch)
		clear(batch)
	}
}

func (c *committer) commit(batch []*call) {
	err := c.db.Update(func(tx *bolt.Tx) error {
		for _, cl := range batch {
			if err := cl.fn(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(batch) == 1 {
		for _, cl := range batch {
			cl.err <- err
		}
		return
	}
	for _, cl := range batch {
		cl.err <- c.db.Update(cl.fn)
	}
}

// close stops taking writes and waits for the commit in progress. Writers blocked in write
// then get ErrDatabaseNotOpen.
func (c *committer) close() {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.stopped
}
