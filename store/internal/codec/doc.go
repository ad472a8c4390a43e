// Package codec is the stored encoding shared by every backend: the order-preserving key
// encoding, page tokens, and the versioned record format built from the domain types.
//
// Changing a JSON tag or the meaning of a field here changes data already on disk: add a new
// record version instead, keep decoding the old one, and bump the backends' schema version when
// old binaries could not read what new ones write.
//
// It imports store and recommender only; never server, proto or gRPC.
package codec
