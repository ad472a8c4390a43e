package storetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hpa-recommender/hpa-recommender/store"
)

// CheckLegacy checks that old, a store opened on a legacy fixture (data an older release wrote
// for FixtureTargets), returns every fixture target exactly as fresh, an empty store of the
// same backend, returns it (Get) after storing it now; and that old still takes writes afterwards.
func CheckLegacy(t *testing.T, old, fresh store.Store) {
	t.Helper()
	ctx := context.Background()
	for _, want := range FixtureTargets() {
		if _, err := fresh.Update(ctx, want.Key, func(*store.Target) (*store.Target, error) { return want, nil }); err != nil {
			t.Fatalf("store %s in a fresh store: %v", want.Key, err)
		}
		stored := mustGet(t, fresh, want.Key)
		got, err := old.Get(ctx, want.Key)
		if err != nil {
			t.Errorf("Get(%s) from the legacy fixture: %v", want.Key, err)
			continue
		}
		if d := diff(got, stored, cmpopts.IgnoreFields(store.Target{}, "Revision")); d != "" {
			t.Errorf("%s from the legacy fixture (-want +got):\n%s", want.Key, d)
		}
	}
	k := FixtureTargets()[0].Key
	up, err := old.Update(ctx, k, func(cur *store.Target) (*store.Target, error) {
		cur.Spec.MaxReplicas++
		return cur, nil
	})
	if err != nil {
		t.Fatalf("update %s after reading the fixture: %v", k, err)
	}
	if got := mustGet(t, old, k); got.Spec.MaxReplicas != up.Spec.MaxReplicas || got.Revision != up.Revision {
		t.Errorf("after an update: %+v, want max %d rev %d", got.Spec.MaxReplicas, up.Spec.MaxReplicas, up.Revision)
	}
	if n := len(ListAll(t, old, store.ListOptions{}, 7)); n != len(FixtureTargets()) {
		t.Errorf("List gives %d targets, want %d", n, len(FixtureTargets()))
	}
}
