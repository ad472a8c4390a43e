// Package boltstore is the embedded, default store.Store: one bbolt file on local disk, for a
// single server process (bbolt takes an exclusive file lock). Writes go through db.Batch, so
// concurrent Updates share one fsync (group commit); each Update is still one atomic
// read-modify-write of its target.
//
// Every bucket and key is declared in schema.go; records use the shared codec.
//
// It imports store, its codec and go.etcd.io/bbolt; never server, proto or gRPC.
package boltstore
