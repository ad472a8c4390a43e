// Package boltstore is the embedded, default store.Store: one bbolt file on local disk, for a
// single server process (bbolt takes an exclusive file lock).
//
// bbolt is used as bbolt: every write is one read-modify-write of its target inside a bbolt
// write transaction, through DB.Batch, which commits the writes that arrive together in one
// transaction and one sync; reads are bbolt read transactions. There is no log, cache or
// commit machinery of the package's own. Every bucket and key is declared in schema.go;
// records use the shared codec (format 4 only). Open upgrades, once, a file an older release
// left, with its write-ahead log (migrate.go, legacywal.go): nothing else reads old formats.
//
// Batching: a batch commits once it holds MaxBatchSize writes or MaxBatchDelay after its first
// write. A batch larger than the writes in flight never fills, so each one waits out the delay
// (with bbolt's defaults, 1000 and 10 ms, 64 writers get about 6,000 writes/s), and a delay
// long against a commit's sync makes a lone writer wait for nothing. The defaults, 64 and
// 200 µs, measured with 1, 8 and 64 concurrent writers on the machine this was written on
// (BenchmarkUpdate; figures in the commit that set them): at 64 writers a batch fills and
// commits at once; at fewer, a batch waits at most 200 µs, about two syncs of a fast disk, so
// a lone writer pays that much latency and 8 writers still share their commits.
//
// A write that fails for lack of space (ENOSPC, EDQUOT) returns a *store.NoSpaceError naming
// the file; what was committed before stays, and Ping fails until a write commits again.
//
// It imports store, its codec and go.etcd.io/bbolt; never server, proto or gRPC.
package boltstore
