//go:build !linux

package boltstore

import "os"

// datasync flushes f: a full fsync where fdatasync is not available.
func datasync(f *os.File) error { return f.Sync() }
