// Package store keeps each autoscaling target's durable record: the spec last seen, the
// decision history the HPA algorithm needs (recommendations, scale events, conditions), the
// decisions awaiting ReportScale, the last decision and when the target was last seen, and its
// decision log (decisions.go: the newest entries in the record, older ones under keys of their
// own, written in the same Update and trimmed to the backend's DecisionLogLimits).
//
// It owns the Store interface, its sentinel errors and the record types. Backends live in
// sub-packages: boltstore (embedded, the default), memstore (tests and --store memory) and
// etcdstore (shared by several server replicas). storetest is the suite every backend runs;
// it is the specification of the contract written on Store.
//
// The stored encoding is the store's own and versioned (see store/internal/codec and each
// backend's schema.go); it is built from the domain types in package recommender and never from
// the public API messages.
//
// Imports: the standard library, recommender (domain types) and storage drivers. store never
// imports server, proto or gRPC: mapping its errors to status codes is the server's job.
package store
