package boltstore

import bolt "go.etcd.io/bbolt"

// View runs fn in a read transaction of s's file, for the external tests.
func View(s *Store, fn func(*bolt.Tx) error) error { return s.db.View(fn) }
