// Package codec is the stored encoding shared by every backend: the order-preserving key
// encoding, page tokens, and the record format.
//
// Records are written and read in format 4 (record.go): the message generated from
// store/proto/hparecommender/storage/v1/record.proto by `make generate` (package recordpb,
// protobuf-go types with vtprotobuf's marshalling), converted from and to the domain types in
// convert.go, by hand because the record is built from domain types no generator knows.
// Marshal, Unmarshal and LastSeen know format 4 only.
//
// The formats older releases wrote (JSON 1 and 2, binary 3; legacy_json.go, legacy_binary.go)
// are read by one entry point, Upgrade (upgrade.go), which a backend's migration calls once per
// record when it opens data an older release left, and which returns the record in format 4.
// No other function reads them; testdata holds records those releases wrote.
//
// Changing a field's number or meaning in record.proto changes data already stored: add a
// field instead, and bump the backends' schema version when old binaries could not read what
// new ones write.
//
// It imports store, recommender and its generated recordpb only; never server, proto or gRPC.
package codec
