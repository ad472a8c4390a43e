// Package bounded is a map of at most a given number of entries that the stores keep in memory
// beside their database (the etcd store's latest records):
// random replacement, and once full, few of the keys that missed admitted, so that a fleet
// larger than the map, decided target after target, keeps most entries until their next use.
//
// It imports the standard library only: never recommender, server, proto or gRPC. Only the
// store backends import it.
package bounded
