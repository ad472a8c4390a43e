package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BoltProbe says what ProbeBolt measures: the ceiling of a bare bbolt file on a disk, as the
// bbolt store writes (one read-modify-write of a record per write, through DB.Batch, fsync on),
// with nothing of the service around it.
type BoltProbe struct {
	// Dir is where the scratch file goes (empty: a temporary directory made in the current
	// directory, on the disk the tool runs from, removed afterwards).
	Dir string
	// Writers is how many goroutines write at once; MaxBatchSize is set to it, so a batch
	// commits as soon as every writer waits in it instead of waiting out MaxBatchDelay.
	Writers int
	// Keys is how many records there are; each write picks one at random.
	Keys int
	// Size is each record's size in bytes.
	Size int
	// Duration is how long the writers write (the records are written once before).
	Duration time.Duration
}

// DefaultBoltProbe is 64 writers over 10,000 records of 2.2 KB (a stored target's size at the
// payload's 20 pods) for 10 s.
func DefaultBoltProbe() BoltProbe {
	return BoltProbe{Writers: 64, Keys: 10_000, Size: 2200, Duration: 10 * time.Second}
}

// RegisterFlags binds p's fields to the flags of the probe's mode (--bolt-probe).
func (p *BoltProbe) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&p.Dir, "bolt-probe-dir", p.Dir, "with --bolt-probe: the directory of the scratch bbolt file, on the disk to measure (empty: a temporary directory in the current one, removed afterwards)")
	fs.IntVar(&p.Writers, "bolt-probe-writers", p.Writers, "with --bolt-probe: goroutines writing at once (bbolt's MaxBatchSize is set to it)")
	fs.IntVar(&p.Keys, "bolt-probe-keys", p.Keys, "with --bolt-probe: records, each write picking one at random")
	fs.IntVar(&p.Size, "bolt-probe-size", p.Size, "with --bolt-probe: bytes per record")
}

// BoltCeiling is what ProbeBolt measured.
type BoltCeiling struct {
	Writers int `json:"writers"`
	Keys    int `json:"keys"`
	Size    int `json:"record_bytes"`
	// Writes is how many read-modify-writes committed; PerSec is Writes over Wall.
	Writes int           `json:"writes"`
	Wall   time.Duration `json:"wall_ns"`
	PerSec float64       `json:"writes_per_sec"`
	// Latency is each write's, from calling DB.Batch to its return (its batch committed and
	// synced).
	Latency Latency `json:"latency"`
	// Commits is how many write transactions committed over the run, and WritesPerCommit Writes
	// over it: how full the batches were.
	Commits         int     `json:"commits"`
	WritesPerCommit float64 `json:"writes_per_commit"`
	// Counted is the sum of the records' write counters after the run, less the one write of
	// each before it: Writes again, read back from the file.
	Counted uint64 `json:"counted"`
	// Path is the scratch file (removed afterwards).
	Path string `json:"path"`
}

// boltProbeBucket holds the probe's records.
var boltProbeBucket = []byte("probe")

// ProbeBolt writes p.Keys records of p.Size bytes into a new bbolt file in p.Dir, then for
// p.Duration (or until ctx ends) has p.Writers goroutines each, in a loop, read a random record,
// bump the write counter in its first 8 bytes and put it back, in one DB.Batch call, with
// fsync on and MaxBatchSize p.Writers. It returns the writes a second and their latency,
// and removes the file.
func ProbeBolt(ctx context.Context, p BoltProbe) (BoltCeiling, error) {
	switch {
	case p.Writers < 1:
		return BoltCeiling{}, fmt.Errorf("bolt probe: %d writers, want 1 or more", p.Writers)
	case p.Keys < 1:
		return BoltCeiling{}, fmt.Errorf("bolt probe: %d keys, want 1 or more", p.Keys)
	case p.Size < 8:
		return BoltCeiling{}, fmt.Errorf("bolt probe: records of %d bytes, want 8 or more (the write counter)", p.Size)
	case p.Duration <= 0:
		return BoltCeiling{}, fmt.Errorf("bolt probe: a duration of %s", p.Duration)
	}
	dir := p.Dir
	if dir == "" {
		d, err := os.MkdirTemp(".", "hpa-bench-bolt-probe-")
		if err != nil {
			return BoltCeiling{}, fmt.Errorf("bolt probe: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	f, err := os.CreateTemp(dir, "bolt-probe-*.db")
	if err != nil {
		return BoltCeiling{}, fmt.Errorf("bolt probe: %w", err)
	}
	path := f.Name()
	f.Close()
	defer os.Remove(path)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return BoltCeiling{}, fmt.Errorf("bolt probe: open %s: %w", path, err)
	}
	defer db.Close()
	db.MaxBatchSize = p.Writers
	if err := fillProbe(db, p); err != nil {
		return BoltCeiling{}, fmt.Errorf("bolt probe: write the records: %w", err)
	}

	runCtx, cancel := context.WithTimeout(ctx, p.Duration)
	defer cancel()
	before := writeTxs(db)
	recs := make([]Recorder, p.Writers)
	errs := make([]error, p.Writers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range p.Writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			for runCtx.Err() == nil {
				key := probeKey(rng.IntN(p.Keys))
				t := time.Now()
				if err := db.Batch(func(tx *bolt.Tx) error { return bumpRecord(tx, key) }); err != nil {
					errs[w] = err
					return
				}
				recs[w].Record(time.Since(t))
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return BoltCeiling{}, fmt.Errorf("bolt probe: %w", err)
	}
	var all Recorder
	for i := range recs {
		all.Merge(&recs[i])
	}
	c := BoltCeiling{
		Writers: p.Writers, Keys: p.Keys, Size: p.Size, Writes: all.Count(), Wall: wall,
		Latency: all.Summary(), Commits: writeTxs(db) - before, Path: path,
	}
	c.PerSec = float64(c.Writes) / wall.Seconds()
	if c.Commits > 0 {
		c.WritesPerCommit = float64(c.Writes) / float64(c.Commits)
	}
	if c.Counted, err = countProbe(db, p.Keys); err != nil {
		return BoltCeiling{}, fmt.Errorf("bolt probe: read the records back: %w", err)
	}
	return c, nil
}

// writeTxs is the id of db's last committed write transaction, which each commit increments.
func writeTxs(db *bolt.DB) int {
	var id int
	_ = db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
	return id
}

// probeKey is record i's key, as long as a stored target's.
func probeKey(i int) []byte {
	return strconv.AppendInt([]byte("fleet/namespace/bench-"), int64(i), 10)
}

// fillProbe writes every record once (counter 1), a thousand to a transaction.
func fillProbe(db *bolt.DB, p BoltProbe) error {
	val := make([]byte, p.Size)
	for i := range val[8:] {
		val[8+i] = byte('a' + i%26)
	}
	binary.LittleEndian.PutUint64(val, 1)
	for lo := 0; lo < p.Keys; lo += 1000 {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(boltProbeBucket)
			if err != nil {
				return err
			}
			for i := lo; i < min(lo+1000, p.Keys); i++ {
				if err := b.Put(probeKey(i), val); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// bumpRecord is one read-modify-write: the record is read, copied (bbolt's bytes are valid
// only in the transaction, and a store decodes them into a record of its own), its counter
// incremented, and put back.
func bumpRecord(tx *bolt.Tx, key []byte) error {
	b := tx.Bucket(boltProbeBucket)
	v := b.Get(key)
	if len(v) < 8 {
		return fmt.Errorf("record %s: %d bytes", key, len(v))
	}
	rec := append([]byte(nil), v...)
	binary.LittleEndian.PutUint64(rec, binary.LittleEndian.Uint64(rec)+1)
	return b.Put(key, rec)
}

// countProbe sums the records' counters, less the fill's one each.
func countProbe(db *bolt.DB, keys int) (uint64, error) {
	var sum uint64
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltProbeBucket)
		n := 0
		err := b.ForEach(func(_, v []byte) error {
			n++
			sum += binary.LittleEndian.Uint64(v) - 1
			return nil
		})
		if err == nil && n != keys {
			err = fmt.Errorf("%d records, want %d", n, keys)
		}
		return err
	})
	return sum, err
}

// WriteText prints c in a few lines.
func (c BoltCeiling) WriteText(w io.Writer) error {
	l := c.Latency
	_, err := fmt.Fprintf(w, "bare bbolt: %d writers, DB.Batch (MaxBatchSize %d), fsync on, read-modify-write of %d records of %d bytes, in %s\n"+
		"writes/s %.0f (%d writes in %s; %d commits, %.1f writes each)\n"+
		"latency: mean %s, p50 %s, p90 %s, p99 %s, p99.9 %s, max %s\n",
		c.Writers, c.Writers, c.Keys, c.Size, filepath.Dir(c.Path),
		c.PerSec, c.Writes, c.Wall.Round(time.Millisecond), c.Commits, c.WritesPerCommit,
		round(l.Mean), round(l.P50), round(l.P90), round(l.P99), round(l.P999), round(l.Max))
	return err
}

// round keeps three significant-ish digits of a latency.
func round(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
