// Package memstore is an in-memory store.Store for tests and --store memory. Records are kept
// in their encoded form (the record format every store writes), so callers never alias stored
// state and see exactly the normalization a durable backend applies. Nothing survives the
// process.
//
// It imports store and its codec only; never server, proto or gRPC.
package memstore
