package boltstore

import (
	"errors"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// The on-disk layout, version 4:
//
//	meta     bucket
//	  "schema_version" -> decimal ASCII, "4"
//	targets  bucket, its sequence is the revision counter
//	  codec.EncodeKey(key) -> codec record (carrying its own record version and revision)
//
// Versions: 1 holds records of record version 1 only (JSON). 2 holds records of version 2
// (JSON), which binaries of schema version 1 cannot read, and of version 1 not rewritten since.
// 3 writes records of version 3 (a hand-made binary layout), which binaries of schema version 2
// cannot read. 4 writes records of format 4 (protobuf, generated: store/proto), which binaries
// of schema version 3 cannot read, and holds the older ones until they are rewritten; this
// binary reads all four, and the write-ahead log may hold any of them. The layout is the same
// in all, and migrate upgrades a file by its version alone.
//
// Bump SchemaVersion when an older binary could no longer read what this one writes, and teach
// migrate to upgrade older files in place.
const SchemaVersion = 4

var (
	bucketMeta       = []byte("meta")
	bucketTargets    = []byte("targets")
	keySchemaVersion = []byte("schema_version")
)

// ErrUnsupportedSchema is returned by Open for a file whose schema version this binary cannot
// use: written by a newer binary, or not a store file at all.
var ErrUnsupportedSchema = errors.New("unsupported bolt store schema")

// initSchema creates the layout in an empty file, or checks the version of an existing one.
func initSchema(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		empty := true
		_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
		if !empty {
			return fmt.Errorf("file has buckets but no %q bucket, it is not an hpa-recommender store: %w",
				bucketMeta, ErrUnsupportedSchema)
		}
		var err error
		if meta, err = tx.CreateBucket(bucketMeta); err != nil {
			return err
		}
		if err := meta.Put(keySchemaVersion, []byte(strconv.Itoa(SchemaVersion))); err != nil {
			return err
		}
		_, err = tx.CreateBucket(bucketTargets)
		return err
	}
	raw := meta.Get(keySchemaVersion)
	if raw == nil {
		return fmt.Errorf("no schema version in bucket %q: %w", bucketMeta, ErrUnsupportedSchema)
	}
	v, err := strconv.Atoi(string(raw))
	switch {
	case err != nil || v < 1:
		return fmt.Errorf("corrupt schema version %q: %w", raw, ErrUnsupportedSchema)
	case v > SchemaVersion:
		return fmt.Errorf("schema version %d was written by a newer binary (this one supports up to %d); upgrade hpa-recommender: %w",
			v, SchemaVersion, ErrUnsupportedSchema)
	}
	if tx.Bucket(bucketTargets) == nil {
		return fmt.Errorf("bucket %q missing: %w", bucketTargets, ErrUnsupportedSchema)
	}
	if v < SchemaVersion {
		return migrate(meta)
	}
	return nil
}

// migrate upgrades a file of an older schema version in place, in Open's transaction. From
// versions 1 to 3 that is the version alone: its records stay as they are until they are
// rewritten, and a binary that could not read what this one writes then refuses the file at
// Open instead of failing on every record rewritten since.
func migrate(meta *bolt.Bucket) error {
	if err := meta.Put(keySchemaVersion, []byte(strconv.Itoa(SchemaVersion))); err != nil {
		return fmt.Errorf("upgrade schema version to %d: %w", SchemaVersion, err)
	}
	return nil
}

// keyWALApplied, in the meta bucket, is the newest write-ahead log segment whose entries are
// all in the file (decimal ASCII; absent: none). See wal.go.
var keyWALApplied = []byte("wal_applied")

// walApplied reads keyWALApplied.
func walApplied(tx *bolt.Tx) (uint64, error) {
	raw := tx.Bucket(bucketMeta).Get(keyWALApplied)
	if raw == nil {
		return 0, nil
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("corrupt %q in bucket %q: %q", keyWALApplied, bucketMeta, raw)
	}
	return n, nil
}
