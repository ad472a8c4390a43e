package boltstore

import (
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/bounded"
)

// hints is a bounded cache of decoded records, so that an update need not read and decode the
// record it starts from (decoding is most of an update's CPU). An entry is a hint, never the
// truth: the write transaction checks that the stored record still carries the entry's
// revision and, if not, starts again from the stored record. So an entry may be stale, or even
// come from a transaction that rolled back, without harm, as long as every write of a key sets
// or drops that key's entry in the same transaction (which the store's writers do). Only this
// process writes the file (bbolt locks it), so entries go stale only by our own writes.
//
// Entries are shared and frozen: nothing modifies a target once it is put, and nothing hands
// one out without copying it (codec.Normalize). An entry's Spec may be the very one of the entry
// it replaced (codec.MarshalNormalizedAfter).
type hints = bounded.Map[hint]

// hint is a record as stored under its key: its revision, its decoded form, and its spec's
// encoding, which tells the next update whether its spec is the same.
type hint struct {
	rev  int64
	t    *store.Target
	spec []byte
}
