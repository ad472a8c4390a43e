package boltstore

import (
	"errors"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// The on-disk layout, version 5:
//
//	meta     bucket
//	  "schema_version" -> decimal ASCII, "5"
//	  "ping_probe"     -> Ping's probe after a failed write, removed again at once
//	targets  bucket, its sequence is the revision counter
//	  codec.EncodeKey(key) -> codec record of format 4 (carrying its revision)
//	decisions bucket: the retired entries of the targets' decision logs (store/decisions.go)
//	  codec.EncodeDecisionKey(key, seq) -> codec.MarshalDecision(entry)
//
// The decisions bucket came with version 5 files of a later release, without a version bump:
// Open creates it when missing, and a release that does not know it reads the file as before
// (it ignores the bucket and drops the logs' recent entries when it rewrites a record).
//
// Versions: 1 held records of JSON version 1; 2 also JSON version 2; 3 also the binary format
// 3; 4 also format 4, and a write-ahead log beside the file (<file>.wal/, its newest segment
// in the file under "wal_applied"). 5 holds records of format 4 only and has no log: Open
// upgrades a file of versions 1 to 4 to it once (migrate.go), and binaries of version 4 or
// older refuse it.
//
// Bump SchemaVersion when an older binary could no longer read what this one writes, and teach
// migrate to upgrade older files.
const SchemaVersion = 5

var (
	bucketMeta       = []byte("meta")
	bucketTargets    = []byte("targets")
	bucketDecisions  = []byte("decisions")
	keySchemaVersion = []byte("schema_version")
	keyProbe         = []byte("ping_probe")
)

// ErrUnsupportedSchema is returned by Open for a file whose schema version this binary cannot
// use: written by a newer binary, or not a store file at all.
var ErrUnsupportedSchema = errors.New("unsupported bolt store schema")

// initSchema creates the layout in an empty file (created true), or checks the layout of an
// existing one, and returns its schema version.
func initSchema(tx *bolt.Tx) (version int, created bool, err error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		empty := true
		_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
		if !empty {
			return 0, false, fmt.Errorf("file has buckets but no %q bucket, it is not an hpa-recommender store: %w",
				bucketMeta, ErrUnsupportedSchema)
		}
		if meta, err = tx.CreateBucket(bucketMeta); err != nil {
			return 0, false, err
		}
		if err := meta.Put(keySchemaVersion, []byte(strconv.Itoa(SchemaVersion))); err != nil {
			return 0, false, err
		}
		if _, err = tx.CreateBucket(bucketTargets); err != nil {
			return 0, false, err
		}
		_, err = tx.CreateBucket(bucketDecisions)
		return SchemaVersion, true, err
	}
	raw := meta.Get(keySchemaVersion)
	if raw == nil {
		return 0, false, fmt.Errorf("no schema version in bucket %q: %w", bucketMeta, ErrUnsupportedSchema)
	}
	v, err := strconv.Atoi(string(raw))
	switch {
	case err != nil || v < 1:
		return 0, false, fmt.Errorf("corrupt schema version %q: %w", raw, ErrUnsupportedSchema)
	case v > SchemaVersion:
		return 0, false, fmt.Errorf("schema version %d was written by a newer binary (this one supports up to %d); upgrade hpa-recommender: %w",
			v, SchemaVersion, ErrUnsupportedSchema)
	}
	if tx.Bucket(bucketTargets) == nil {
		return 0, false, fmt.Errorf("bucket %q missing: %w", bucketTargets, ErrUnsupportedSchema)
	}
	if _, err := tx.CreateBucketIfNotExists(bucketDecisions); err != nil {
		return 0, false, err
	}
	return v, false, nil
}
