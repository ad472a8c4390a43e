package memstore_test

import (
	"testing"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := memstore.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
