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
// write. A batch larger than the writes in flight never fills, so each waits out the delay,
// and a delay short against a commit's syncs closes batches before the writes that arrive
// together have joined. The defaults are 64 and 1 ms: at 64 writers in flight a batch fills
// and commits without waiting; with fewer, a batch waits at most 1 ms, the latency a lone
// writer pays. BenchmarkUpdate (1, 8 and 64 writers, fsync on) on a disk whose syncs took 3 to
// 10 ms under a shared machine's load, writes/s for (size, delay):
//
//	               1 writer   8 writers   64 writers
//	1000, 10 ms        59        406         1475    (bbolt's defaults)
//	64, 10 ms          56        408         1670
//	64, 2 ms           80        677         1410
//	64, 1 ms       225-226    530-827      699-833   (the defaults)
//	64, 200 µs        130        207          427
//	64, 50 µs         136        339          377
//	1, 1 ms           271        172          184    (one transaction per write)
//
// Long delays buy 64 writers up to twice as much on a slow disk and cost a lone writer three
// quarters of its throughput (and 10 ms of latency on any disk); short ones or no batching
// halve what 64 writers get. A deployment whose disk syncs in ~0.1 ms may shorten the delay.
//
// A write that fails for lack of space (ENOSPC, EDQUOT) returns a *store.NoSpaceError naming
// the file; what was committed before stays, and Ping fails until its own probe, a write of
// several batches' size, commits again.
//
// It imports store, its codec and go.etcd.io/bbolt; never server, proto or gRPC.
package boltstore
