// Package etcdstore is the shared store.Store: targets live in an etcd cluster under a
// configured key prefix, so several server replicas can serve the same targets. Each Update is
// one read-modify-write guarded by the key's ModRevision (compare-and-swap in a Txn), retried a
// bounded number of times; each TTL deletion is guarded the same way, so a target seen again by
// another replica is kept.
//
// Every key and its encoding is declared in schema.go; records use the shared codec, and the
// first store to open a prefix an older release left rewrites its records of older formats once
// (upgrade.go), so that only the current format is read on the request path. Each replica
// compacts etcd's history, which every write grows (compact.go). No error of etcd's reaches a
// caller: errors.go says what each means in the store's words.
//
// It imports store, its codec and the etcd client; never server, proto or gRPC services.
package etcdstore
