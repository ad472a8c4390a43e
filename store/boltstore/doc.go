// Package boltstore is the embedded, default store.Store: one bbolt file on local disk, for a
// single server process (bbolt takes an exclusive file lock). Writes go through a group
// commit (one goroutine commits every Update queued while the previous commit synced, or
// db.Batch with Options.MaxBatchDelay), so concurrent Updates share one fsync; each Update is
// still one atomic read-modify-write of its target.
//
// Every bucket and key is declared in schema.go; records use the shared codec.
//
// It imports store, its codec and go.etcd.io/bbolt; never server, proto or gRPC.
package boltstore
