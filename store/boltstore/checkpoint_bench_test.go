//go:build unix

package boltstore

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// BenchmarkCheckpointRecordSize is what a checkpoint costs per record in bbolt alone, by the
// size of a record and the file's page size: 10,000 stored targets, of which 4,096 distinct
// ones wait (the default CheckpointRecords), written sorted in transactions of
// DefaultCheckpointChunk, each synced, as checkpointSized writes them. bbolt never splits a
// leaf of four entries or fewer, so records of a few KB sit two to four to a leaf, which every
// write of one of them rewrites whole; a leaf larger than a page is written from a buffer
// allocated for it (bbolt pools one-page buffers only). The metrics are per record: the bytes
// of the pages written, the write calls, the time (mostly the disk's syncs) and the process's
// CPU time.
//
//	go test ./store/boltstore -run '^$' -bench CheckpointRecordSize -benchtime 300x
func BenchmarkCheckpointRecordSize(b *testing.B) {
	// 4,400 bytes: a record of format 1 (codec's testdata/record-v1.json); 3,600: the same
	// record in format 2; 1,400: what a binary encoding of it would take.
	for _, size := range []int{4400, 3600, 1400} {
		for _, pageSize := range []int{4096, 8192, 16384} {
			b.Run(fmt.Sprintf("bytes=%d/page=%d", size, pageSize), func(b *testing.B) {
				benchCheckpoint(b, size, pageSize)
			})
		}
	}
}

// benchCheckpoint is BenchmarkCheckpointRecordSize for records of size bytes in a file of
// pageSize pages.
func benchCheckpoint(b *testing.B, size, pageSize int) {
	const targets, waiting = 10000, DefaultCheckpointRecords
	db, err := bolt.Open(filepath.Join(b.TempDir(), "ck.db"), 0o600, &bolt.Options{
		NoFreelistSync: true, FreelistType: bolt.FreelistMapType, PageSize: pageSize,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	if err := db.Update(initSchema); err != nil {
		b.Fatal(err)
	}
	keys := make([]string, targets)
	for i := range keys {
		keys[i] = string(codec.EncodeKey(store.Key{Cluster: "bench", Namespace: "bench", Name: fmt.Sprintf("bench-%d", i)}))
	}
	val := []byte(strings.Repeat("x", size))
	entries := func(idx []int) []entry {
		es := make([]entry, 0, len(idx))
		for _, i := range idx {
			es = append(es, entry{key: keys[i], val: val, rev: int64(i + 1)})
		}
		slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.key, b.key) })
		return es
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// Populated as the store populates itself: checkpoints of new targets, in chunks.
	for c := range slices.Chunk(entries(rng.Perm(targets)), DefaultCheckpointChunk) {
		if err := db.Update(func(tx *bolt.Tx) error { return applyEntries(tx, c, 0) }); err != nil {
			b.Fatal(err)
		}
	}
	var pending []entry
	before, cpu0 := db.Stats().TxStats, processCPU(b)
	b.ResetTimer()
	for range b.N {
		if len(pending) == 0 {
			pending = entries(rng.Perm(targets)[:waiting])
		}
		chunk := pending[:min(len(pending), DefaultCheckpointChunk)]
		pending = pending[len(chunk):]
		if err := db.Update(func(tx *bolt.Tx) error { return applyEntries(tx, chunk, 0) }); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after, cpu1 := db.Stats().TxStats, processCPU(b)
	records := float64(b.N * DefaultCheckpointChunk)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/records, "ns/record")
	b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/records, "cpu-ns/record")
	b.ReportMetric(float64(after.GetPageAlloc()-before.GetPageAlloc())/records, "pageB/record")
	b.ReportMetric(float64(after.GetWrite()-before.GetWrite())/records, "writes/record")
}

// processCPU is the CPU time (user and system) the process has used so far: what a benchmark's
// operation costs apart from the time it waits (for the disk's syncs).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
