package boltstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// The upgrade, at Open, of a data directory an older release left: a file of schema version 1
// to 4, perhaps with the write-ahead log of versions up to 4 beside it, holding records of
// formats 1 to 4. In order:
//
//  1. replay: the log's segments after "wal_applied" are copied into the file in one bbolt
//     transaction, which raises the revision counter to their highest revision and records
//     the newest segment as applied (legacywal.go reads them);
//  2. upgrade: every record of an older format is rewritten in format 4 (codec.Upgrade), its
//     revision kept, upgradeChunk records per transaction;
//  3. the schema version becomes SchemaVersion and "wal_applied" goes, in one transaction;
//  4. the log directory is removed.
//
// Each step is idempotent and none removes anything before what it holds is committed in the
// file, so a kill at any point loses nothing: the next Open starts again where the file says
// (a file of version SchemaVersion with a log beside it has replayed it: step 4 alone).
// After step 3 an older binary refuses the file.

// keyWALApplied, in the meta bucket of versions up to 4, is the newest log segment whose
// entries are all in the file (decimal ASCII; absent: none).
var keyWALApplied = []byte("wal_applied")

// upgradeChunk is how many records one upgrade transaction reads.
const upgradeChunk = 1000

// migrate checks the file's schema and upgrades it to SchemaVersion.
func migrate(db *bolt.DB, path string) error {
	var (
		version int
		created bool
	)
	err := db.Update(func(tx *bolt.Tx) error {
		var err error
		version, created, err = initSchema(tx)
		return err
	})
	if err != nil {
		return err
	}
	dir := path + walSuffix
	_, err = os.Stat(dir)
	logged := err == nil
	if version == SchemaVersion && (!created || !logged) {
		if logged {
			return removeLog(dir) // replayed by the migration that bumped the version
		}
		return nil
	}
	// An older file, or a new one beside a log (its file was lost; the log still holds
	// every write it did not checkpoint).
	if err := replay(db, dir); err != nil {
		return err
	}
	if err := upgradeRecords(db); err != nil {
		return err
	}
	if err := bumpVersion(db); err != nil {
		return err
	}
	return removeLog(dir)
}

// bumpVersion sets the schema version to SchemaVersion and drops what only the log needed.
func bumpVersion(db *bolt.DB) error {
	err := db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if err := meta.Delete(keyWALApplied); err != nil {
			return err
		}
		return meta.Put(keySchemaVersion, []byte(strconv.Itoa(SchemaVersion)))
	})
	if err != nil {
		return fmt.Errorf("upgrade schema version to %d: %w", SchemaVersion, err)
	}
	return nil
}

// removeLog removes the log directory, whose writes the file holds.
func removeLog(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the replayed write-ahead log: %w", err)
	}
	return nil
}

// replay copies into the file, in one transaction, every entry of the log segments in dir
// that "wal_applied" does not cover, in log order (the last entry of a key wins).
func replay(db *bolt.DB, dir string) error {
	var applied uint64
	err := db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketMeta).Get(keyWALApplied)
		if raw == nil {
			return nil
		}
		var err error
		if applied, err = strconv.ParseUint(string(raw), 10, 64); err != nil {
			return fmt.Errorf("corrupt %q in bucket %q: %q", keyWALApplied, bucketMeta, raw)
		}
		return nil
	})
	if err != nil {
		return err
	}
	segs, err := listSegments(dir)
	if err != nil {
		return err
	}
	last := applied
	var es []entry
	for i, n := range segs {
		last = max(last, n)
		if n <= applied {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, segmentName(n)))
		if err != nil {
			return fmt.Errorf("read write-ahead log: %w", err)
		}
		r := readFrames(data, n)
		if !r.complete && i < len(segs)-1 {
			// Only the newest segment can end in a frame a crash cut short: the older ones
			// were sealed and synced before the next one started.
			return fmt.Errorf("write-ahead log segment %s is corrupt at byte %d of %d; it holds acknowledged writes that are not in the bbolt file. Keep a copy of %s for recovery",
				segmentName(n), r.end, len(data), dir)
		}
		es = append(es, r.es...)
	}
	if last == applied && len(es) == 0 {
		return nil
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTargets)
		top := b.Sequence()
		for _, e := range es {
			var err error
			if e.val == nil {
				err = b.Delete([]byte(e.key))
			} else {
				err = b.Put([]byte(e.key), e.val)
			}
			if err != nil {
				return err
			}
			top = max(top, uint64(max(e.rev, 0)))
		}
		if err := b.SetSequence(top); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyWALApplied, []byte(strconv.FormatUint(last, 10)))
	})
	if err != nil {
		return fmt.Errorf("replay write-ahead log: %w", err)
	}
	return nil
}

// upgradeRecords rewrites every record of an older format in format 4.
func upgradeRecords(db *bolt.DB) error {
	var after []byte // the last key of the previous chunk; nil: start
	for {
		done := false
		err := db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketTargets)
			c := b.Cursor()
			k, v := c.First()
			if after != nil {
				if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			type rewrite struct{ k, v []byte }
			var out []rewrite
			n := 0
			for ; k != nil && n < upgradeChunk; k, v = c.Next() {
				up, upgraded, err := codec.Upgrade(v)
				if err != nil {
					return fmt.Errorf("upgrade the record of stored key %q: %w", k, err)
				}
				if upgraded {
					out = append(out, rewrite{bytes.Clone(k), up})
				}
				after = bytes.Clone(k)
				n++
			}
			done = k == nil
			for _, r := range out { // not while the cursor walks: a put may move it
				if err := b.Put(r.k, r.v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}
