package store

import (
	"context"
	"io"
)

// Backuper is implemented by backends whose whole database is one file that a consistent copy
// of can be written while writes go on (bbolt). The server offers it as AdminService.Backup;
// a backend without it (etcd, whose own `etcdctl snapshot save` does this for the cluster, and
// the memory store, which keeps nothing) answers FailedPrecondition there.
type Backuper interface {
	// Backup writes a consistent snapshot of the database to w, as one read transaction sees
	// it: every Update committed before it began and none after. Writes are not blocked while
	// it runs. It returns the bytes written. What it writes is a file the backend opens as it
	// is (boltstore.Open). It stops with ctx.Err() when ctx ends, and with w's error when a
	// write fails; either way what w holds is then no backup.
	Backup(ctx context.Context, w io.Writer) (int64, error)
}
