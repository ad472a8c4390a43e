// Package boltstore is the embedded, default store.Store: one bbolt file on local disk, for a
// single server process (bbolt takes an exclusive file lock), with a write-ahead log next to it
// (<file>.wal/). Writes go through a group commit: the writes that arrive while one commit
// syncs are committed together next, by one of their own goroutines, in one log frame and one
// sync; a checkpoint copies logged records into bbolt in the background, and Open replays what a
// crash left in the log (wal.go). Each write is still one atomic read-modify-write of its
// target, acknowledged only once it is synced.
//
// Every bucket and key is declared in schema.go; records use the shared codec.
//
// It imports store, its codec and go.etcd.io/bbolt; never server, proto or gRPC.
package boltstore
