package boltstore

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync flushes f's data and the metadata needed to read it back (its size), not its times:
// what bbolt does on Linux too.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
