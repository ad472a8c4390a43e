// Package codec is the stored encoding shared by every backend: the order-preserving key
// encoding, page tokens, and the record format.
//
// Records are written in format 4 (record.go): the message generated from
// store/proto/hparecommender/storage/v1/record.proto by `make generate` (package recordpb,
// protobuf-go types with vtprotobuf's marshalling), converted from and to the domain types in
// convert.go, by hand because the record is built from domain types no generator knows. The
// formats older releases wrote (JSON 1 and 2, binary 3) are read as they are, never written
// (legacy_json.go, legacy_binary.go), so data on disk and in etcd needs no migration step;
// testdata holds records those releases wrote.
//
// Changing a field's number or meaning in record.proto changes data already stored: add a
// field instead, and bump the backends' schema version when old binaries could not read what
// new ones write.
//
// It imports store, recommender and its generated recordpb only; never server, proto or gRPC.
package codec
