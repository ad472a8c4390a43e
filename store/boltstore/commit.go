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
// Every write is a read-modify-write of one key, in three steps. The committer reads the
// batch's keys; each writer's modify then runs in the writer's own goroutine, all of the
// batch's at once (decoding and deciding are most of a write's work, and would otherwise run
// one after another in the transaction); then the committer runs each finish, in arrival
// order, and commits. No finish runs before every modify has returned, so the values the
// modifies read stay as they are. A batch holds each key once: a second write of a key waits
// for the next batch, so that it reads what the first wrote.
//
// A transaction that fails is rolled back, and each of its writes is then committed alone, as
// DB.Batch does: one write's failure is not its neighbours'. So a write's modify may run more
// than once, and must start afresh each time.
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
	bucket, key []byte
	// modify computes the write from the key's value (nil: absent). It must not keep v, which
	// is bbolt's memory. Its error fails the transaction.
	modify func(v []byte) error
	// finish writes, in the transaction, what modify computed.
	finish func(tx *bolt.Tx) error

	value    chan []byte // committer to writer: run modify on this (buffered)
	modified chan error  // writer to committer: modify's result (buffered)
	err      chan error  // the commit's result (buffered: the committer never waits)
}

func newCommitter(db *bolt.DB, maxBatch int) *committer {
	c := &committer{db: db, maxBatch: maxBatch, calls: make(chan *call), stop: make(chan struct{}), stopped: make(chan struct{})}
	go c.run()
	return c
}

// write commits a read-modify-write of key in bucket, in a transaction with the writes waiting
// at the same time, and returns the error of the transaction it ended up in (or of its own,
// after a failed batch). modify runs in the caller's goroutine. After close it returns bbolt's
// ErrDatabaseNotOpen.
func (c *committer) write(bucket, key []byte, modify func(v []byte) error, finish func(*bolt.Tx) error) error {
	cl := &call{bucket: bucket, key: key, modify: modify, finish: finish,
		value: make(chan []byte, 1), modified: make(chan error, 1), err: make(chan error, 1)}
	select {
	case c.calls <- cl:
	case <-c.stop:
		return bolterrors.ErrDatabaseNotOpen
	}
	for {
		select {
		case v := <-cl.value:
			cl.modified <- cl.modify(v)
		case err := <-cl.err:
			return err
		}
	}
}

func (c *committer) run() {
	defer close(c.stopped)
	var (
		batch = make([]*call, 0, c.maxBatch)
		held  []*call // writes of a key the last batch already held
		keys  = make(map[string]bool, c.maxBatch)
	)
	// add takes cl into the batch, or holds it for the next one if the batch has its key.
	add := func(cl *call, next []*call) []*call {
		if keys[string(cl.key)] {
			return append(next, cl)
		}
		keys[string(cl.key)] = true
		batch = append(batch, cl)
		return next
	}
	for {
		batch = batch[:0]
		clear(keys)
		var next []*call
		for _, cl := range held {
			next = add(cl, next)
		}
		held = next
		if len(batch) == 0 {
			select {
			case cl := <-c.calls:
				add(cl, nil)
			case <-c.stop:
				return
			}
		}
		// The writers that arrived during the last commit are blocked on the send: take them.
	more:
		for len(batch)+len(held) < c.maxBatch {
			select {
			case cl := <-c.calls:
				held = add(cl, held)
			default:
				break more
			}
		}
		c.commit(batch)
		clear(batch)
		select {
		case <-c.stop:
			for _, cl := range held {
				cl.err <- bolterrors.ErrDatabaseNotOpen
			}
			return
		default:
		}
	}
}

func (c *committer) commit(batch []*call) {
	err := c.db.Update(func(tx *bolt.Tx) error {
		for _, cl := range batch {
			cl.value <- tx.Bucket(cl.bucket).Get(cl.key)
		}
		var failed error
		for _, cl := range batch {
			if err := <-cl.modified; err != nil && failed == nil {
				failed = err
			}
		}
		if failed != nil {
			return failed
		}
		for _, cl := range batch {
			if err := cl.finish(tx); err != nil {
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
		cl.err <- c.db.Update(func(tx *bolt.Tx) error {
			cl.value <- tx.Bucket(cl.bucket).Get(cl.key)
			if err := <-cl.modified; err != nil {
				return err
			}
			return cl.finish(tx)
		})
	}
}

// close stops taking writes and waits for the commit in progress. Writers blocked in write,
// or held for a next batch, then get ErrDatabaseNotOpen.
func (c *committer) close() {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.stopped
}
