package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// Option adjusts Run.
type Option func(*config)

type config struct {
	invariants []func(t *testing.T, s store.Store)
}

// WithInvariant adds a backend-specific check run at the end of every subtest that leaves the
// store open (bbolt: its consistency check). It reports failures through t.
func WithInvariant(check func(t *testing.T, s store.Store)) Option {
	return func(c *config) { c.invariants = append(c.invariants, check) }
}

// Run runs the suite. newStore must return a fresh, empty store and register its Close with
// t.Cleanup; Close must tolerate being called twice (one subtest closes the store itself).
func Run(t *testing.T, newStore func(t *testing.T) store.Store, opts ...Option) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	tests := []struct {
		name string
		// closes is true when the test closes the store itself, so invariants cannot run.
		closes bool
		fn     func(t *testing.T, s store.Store)
	}{
		{name: "GetMissing", fn: testGetMissing},
		{name: "InvalidKey", fn: testInvalidKey},
		{name: "UpdateCreates", fn: testUpdateCreates},
		{name: "UpdateModifies", fn: testUpdateModifies},
		{name: "UpdateNilWritesNothing", fn: testUpdateNil},
		{name: "UpdateErrorAborts", fn: testUpdateErrorAborts},
		{name: "UpdateSetsKeyAndRevision", fn: testUpdateSetsKey},
		{name: "Delete", fn: testDelete},
		{name: "KeysWithSeparators", fn: testKeysWithSeparators},
		{name: "List", fn: testList},
		{name: "ListPaginationStable", fn: testListStable},
		{name: "ListInvalid", fn: testListInvalid},
		{name: "DeleteUnseenSince", fn: testDeleteUnseenSince},
		{name: "Isolation", fn: testIsolation},
		{name: "RoundTrip", fn: testRoundTrip},
		{name: "ConcurrentReadModifyWrite", fn: testConcurrent},
		{name: "Closed", closes: true, fn: testClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			tt.fn(t, s)
			if tt.closes {
				return
			}
			for _, check := range cfg.invariants {
				check(t, s)
			}
		})
	}
}

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 123456789, time.UTC)

func key(c, ns, n string) store.Key { return store.Key{Cluster: c, Namespace: ns, Name: n} }

// quantityCmp compares quantities by value and canonical form (they hold unexported caches).
var quantityCmp = cmp.Comparer(func(a, b resource.Quantity) bool {
	return a.Cmp(b) == 0 && a.String() == b.String()
})

// diff compares targets as the contract promises: empty and nil slices/maps are equal.
func diff(got, want any, extra ...cmp.Option) string {
	return cmp.Diff(want, got, append([]cmp.Option{quantityCmp, cmpopts.EquateEmpty()}, extra...)...)
}

var ignoreRevision = cmpopts.IgnoreFields(store.Target{}, "Revision")

// put stores t under k unconditionally.
func put(t *testing.T, s store.Store, k store.Key, tg *store.Target) *store.Target {
	t.Helper()
	got, err := s.Update(t.Context(), k, func(*store.Target) (*store.Target, error) { return tg, nil })
	if err != nil {
		t.Fatalf("Update(%s): %v", k, err)
	}
	return got
}

// touch stores a minimal target seen at seen with the given decision counts.
func touch(t *testing.T, s store.Store, k store.Key, seen time.Time, current, desired int32) {
	t.Helper()
	put(t, s, k, &store.Target{
		Spec:     recommender.Spec{MaxReplicas: 10},
		LastSeen: seen,
		LastDecision: &store.LastDecision{Decision: recommender.Decision{
			Time: seen, CurrentReplicas: current, DesiredReplicas: desired,
		}},
	})
}

func mustGet(t *testing.T, s store.Store, k store.Key) *store.Target {
	t.Helper()
	got, err := s.Get(t.Context(), k)
	if err != nil {
		t.Fatalf("Get(%s): %v", k, err)
	}
	return got
}

func testGetMissing(t *testing.T, s store.Store) {
	if _, err := s.Get(t.Context(), key("c", "ns", "missing")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(missing) error = %v, want ErrNotFound", err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping() = %v", err)
	}
}

func testInvalidKey(t *testing.T, s store.Store) {
	for _, k := range []store.Key{key("", "ns", "n"), key("c", "", "n"), key("c", "ns", ""), key("c", "ns", "\xff")} {
		if _, err := s.Get(t.Context(), k); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Get(%q) error = %v, want ErrInvalidArgument", k, err)
		}
		_, err := s.Update(t.Context(), k, func(*store.Target) (*store.Target, error) { return &store.Target{}, nil })
		if !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Update(%q) error = %v, want ErrInvalidArgument", k, err)
		}
		if err := s.Delete(t.Context(), k); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Delete(%q) error = %v, want ErrInvalidArgument", k, err)
		}
	}
}

func testUpdateCreates(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	var sawNil bool
	got, err := s.Update(t.Context(), k, func(cur *store.Target) (*store.Target, error) {
		sawNil = cur == nil
		return &store.Target{Spec: recommender.Spec{MaxReplicas: 7}, LastSeen: t0}, nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if !sawNil {
		t.Error("fn did not get nil for an absent target")
	}
	want := &store.Target{Key: k, Spec: recommender.Spec{MaxReplicas: 7}, LastSeen: t0}
	if d := diff(got, want, ignoreRevision); d != "" {
		t.Errorf("Update result (-want +got):\n%s", d)
	}
	if got.Revision == 0 {
		t.Error("Update result has no Revision")
	}
	if d := diff(mustGet(t, s, k), got); d != "" {
		t.Errorf("Get after Update (-want +got):\n%s", d)
	}
}

func testUpdateModifies(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	first := put(t, s, k, &store.Target{Spec: recommender.Spec{MaxReplicas: 3}, LastSeen: t0})
	second, err := s.Update(t.Context(), k, func(cur *store.Target) (*store.Target, error) {
		if cur == nil {
			return nil, errors.New("fn got nil for a stored target")
		}
		if d := diff(cur, first); d != "" {
			return nil, fmt.Errorf("fn got (-want +got):\n%s", d)
		}
		cur.Spec.MaxReplicas++
		cur.LastSeen = cur.LastSeen.Add(time.Second)
		return cur, nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if second.Spec.MaxReplicas != 4 || !second.LastSeen.Equal(t0.Add(time.Second)) {
		t.Errorf("Update result = %+v, want MaxReplicas 4 and LastSeen +1s", second)
	}
	if second.Revision <= first.Revision {
		t.Errorf("Revision went from %d to %d, want it to grow", first.Revision, second.Revision)
	}
	if d := diff(mustGet(t, s, k), second); d != "" {
		t.Errorf("Get after Update (-want +got):\n%s", d)
	}
}

func testUpdateNil(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	got, err := s.Update(t.Context(), k, func(*store.Target) (*store.Target, error) { return nil, nil })
	if err != nil || got != nil {
		t.Errorf("Update(absent, fn->nil) = %v, %v; want nil, nil", got, err)
	}
	if _, err := s.Get(t.Context(), k); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after no-op Update: error = %v, want ErrNotFound", err)
	}
	stored := put(t, s, k, &store.Target{LastSeen: t0})
	got, err = s.Update(t.Context(), k, func(*store.Target) (*store.Target, error) { return nil, nil })
	if err != nil {
		t.Fatalf("Update(present, fn->nil): %v", err)
	}
	if d := diff(got, stored); d != "" {
		t.Errorf("Update(present, fn->nil) (-want +got):\n%s", d)
	}
	if d := diff(mustGet(t, s, k), stored); d != "" {
		t.Errorf("Get after no-op Update (-want +got):\n%s", d)
	}
}

type fnError struct{ msg string }

func (e *fnError) Error() string { return e.msg }

func testUpdateErrorAborts(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	stored := put(t, s, k, &store.Target{Spec: recommender.Spec{MaxReplicas: 3}, LastSeen: t0,
		Reported: []string{"a"}})
	sentinel := errors.New("refused")
	for _, want := range []error{sentinel, &fnError{"typed"}, fmt.Errorf("wrapped: %w", store.ErrConflict)} {
		_, err := s.Update(t.Context(), k, func(cur *store.Target) (*store.Target, error) {
			// Mutating the argument before failing must not leak into the store.
			cur.Spec.MaxReplicas = 99
			cur.Reported[0] = "mutated"
			return cur, want
		})
		if !errors.Is(err, want) {
			t.Errorf("Update error = %v, want %v unchanged", err, want)
		}
		if d := diff(mustGet(t, s, k), stored); d != "" {
			t.Errorf("Get after failed Update (-want +got):\n%s", d)
		}
	}
	var typed *fnError
	_, err := s.Update(t.Context(), k, func(*store.Target) (*store.Target, error) { return nil, &fnError{"x"} })
	if !errors.As(err, &typed) {
		t.Errorf("errors.As(%v, *fnError) = false", err)
	}
	absent := key("c", "ns", "absent")
	_, err = s.Update(t.Context(), absent, func(*store.Target) (*store.Target, error) {
		return &store.Target{}, sentinel
	})
	if !errors.Is(err, sentinel) {
		t.Errorf("Update(absent) error = %v, want %v", err, sentinel)
	}
	if _, err := s.Get(t.Context(), absent); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after failed create: error = %v, want ErrNotFound", err)
	}
}

func testUpdateSetsKey(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	got := put(t, s, k, &store.Target{Key: key("other", "other", "other"), Revision: -5, LastSeen: t0})
	if got.Key != k || got.Revision <= 0 {
		t.Errorf("Update result Key, Revision = %v, %d; want %v and a positive revision", got.Key, got.Revision, k)
	}
	if _, err := s.Get(t.Context(), key("other", "other", "other")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(key fn returned): error = %v, want ErrNotFound", err)
	}
}

func testDelete(t *testing.T, s store.Store) {
	k, other := key("c", "ns", "web"), key("c", "ns", "web2")
	put(t, s, k, &store.Target{LastSeen: t0})
	put(t, s, other, &store.Target{LastSeen: t0})
	if err := s.Delete(t.Context(), k); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Get(t.Context(), k); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Delete: error = %v, want ErrNotFound", err)
	}
	if err := s.Delete(t.Context(), k); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second Delete: error = %v, want ErrNotFound", err)
	}
	mustGet(t, s, other)
	// A deleted target starts afresh.
	_, err := s.Update(t.Context(), k, func(cur *store.Target) (*store.Target, error) {
		if cur != nil {
			return nil, errors.New("fn got a deleted target")
		}
		return &store.Target{}, nil
	})
	if err != nil {
		t.Error(err)
	}
}

// separatorKeys are distinct keys that a naive "cluster/namespace/name" encoding would confuse.
var separatorKeys = []store.Key{
	key("a", "b/c", "d"),
	key("a/b", "c", "d"),
	key("a", "b", "c/d"),
	key("a", "b\x00c", "d"),
	key("a\x00b", "c", "d"),
	key("a", "b", "c\x00d"),
	key("a", "b", "c\x00"),
	key("a", "b", "c"),
	key("a\x01", "b", "c"),
	key("a", "b\xc3\xa9", "c"),
}

func testKeysWithSeparators(t *testing.T, s store.Store) {
	for i, k := range separatorKeys {
		put(t, s, k, &store.Target{Spec: recommender.Spec{MaxReplicas: int32(i + 1)}, LastSeen: t0})
	}
	for i, k := range separatorKeys {
		if got := mustGet(t, s, k); got.Spec.MaxReplicas != int32(i+1) || got.Key != k {
			t.Errorf("Get(%q) = key %q MaxReplicas %d, want MaxReplicas %d", k, got.Key, got.Spec.MaxReplicas, i+1)
		}
	}
	got := ListAll(t, s, store.ListOptions{}, 3)
	want := slices.Clone(separatorKeys)
	SortKeys(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("List keys (-want +got):\n%s", d)
	}
	got = ListAll(t, s, store.ListOptions{Cluster: "a", Namespace: "b"}, 2)
	want = []store.Key{key("a", "b", "c"), key("a", "b", "c\x00"), key("a", "b", "c\x00d"), key("a", "b", "c/d")}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("List a/b keys (-want +got):\n%s", d)
	}
}

func compareKeys(a, b store.Key) int {
	if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
		return c
	}
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// SortKeys sorts keys in the order List returns them: by cluster, then namespace, then name.
func SortKeys(ks []store.Key) { slices.SortFunc(ks, compareKeys) }

// ListAll pages through List with the given page size and returns the keys, checking that no
// page exceeds the size and only the last page has no token.
func ListAll(t *testing.T, s store.Store, opts store.ListOptions, size int) []store.Key {
	t.Helper()
	opts.PageSize = size
	var keys []store.Key
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("List did not terminate")
		}
		got, next, err := s.List(t.Context(), opts)
		if err != nil {
			t.Fatalf("List(%+v): %v", opts, err)
		}
		if limit := min(max(size, 0), store.MaxPageSize); (size == 0 && len(got) > store.DefaultPageSize) || (size > 0 && len(got) > limit) {
			t.Fatalf("List(%+v) returned %d targets, more than the page size", opts, len(got))
		}
		if next != "" && len(got) == 0 {
			t.Fatalf("List(%+v) returned an empty page with a next token", opts)
		}
		for _, sm := range got {
			keys = append(keys, sm.Key)
		}
		if next == "" {
			return keys
		}
		opts.PageToken = next
	}
}

func listFixture(t *testing.T, s store.Store) []store.Key {
	keys := []store.Key{
		key("east", "default", "api"),
		key("east", "default", "web"),
		key("east", "payments", "worker"),
		key("west", "default", "web"),
		key("west", "kube-system", "dns"),
		key("west", "payments", "worker"),
		key("north", "default", "solo"),
	}
	for i, k := range keys {
		touch(t, s, k, t0.Add(time.Duration(i)*time.Second), int32(i), int32(i+1))
	}
	SortKeys(keys)
	return keys
}

func testList(t *testing.T, s store.Store) {
	all := listFixture(t, s)
	filter := func(cluster, ns string) []store.Key {
		var out []store.Key
		for _, k := range all {
			if (cluster == "" || k.Cluster == cluster) && (ns == "" || k.Namespace == ns) {
				out = append(out, k)
			}
		}
		return out
	}
	tests := []struct {
		name      string
		cluster   string
		namespace string
	}{
		{name: "all"},
		{name: "cluster", cluster: "west"},
		{name: "cluster and namespace", cluster: "east", namespace: "default"},
		{name: "namespace in every cluster", namespace: "payments"},
		{name: "no such cluster", cluster: "south"},
		{name: "no such namespace", cluster: "east", namespace: "nope"},
		{name: "cluster prefix is not a match", cluster: "eas"},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 2, 3, 0, store.MaxPageSize + 1} {
			t.Run(fmt.Sprintf("%s/page%d", tt.name, size), func(t *testing.T) {
				got := ListAll(t, s, store.ListOptions{Cluster: tt.cluster, Namespace: tt.namespace}, size)
				if d := cmp.Diff(filter(tt.cluster, tt.namespace), got, cmpopts.EquateEmpty()); d != "" {
					t.Errorf("keys (-want +got):\n%s", d)
				}
			})
		}
	}

	// The summary carries what ListTargets shows.
	got, next, err := s.List(t.Context(), store.ListOptions{Cluster: "north"})
	if err != nil || next != "" || len(got) != 1 {
		t.Fatalf("List(north) = %v, %q, %v; want one target and no token", got, next, err)
	}
	want := store.TargetSummary{Key: key("north", "default", "solo"), HasDecision: true, CurrentReplicas: 6,
		DesiredReplicas: 7, LastSeen: t0.Add(6 * time.Second)}
	if d := diff(got[0], want, cmpopts.IgnoreFields(store.TargetSummary{}, "Revision")); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	if got[0].Revision == 0 {
		t.Error("summary has no Revision")
	}

	// Tokens are stable: asking twice for the same page gives the same answer.
	opts := store.ListOptions{PageSize: 2}
	p1, tok1, err := s.List(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.PageToken = tok1
	p2a, tokA, errA := s.List(t.Context(), opts)
	p2b, tokB, errB := s.List(t.Context(), opts)
	if errA != nil || errB != nil || tokA != tokB || cmp.Diff(p2a, p2b) != "" {
		t.Errorf("the same token gave different pages: %v %q %v / %v %q %v", p2a, tokA, errA, p2b, tokB, errB)
	}
	if len(p1) != 2 || len(p2a) != 2 || p2a[0].Key != all[2] {
		t.Errorf("pages %v then %v, want to continue at %v", p1, p2a, all[2])
	}
}

func testListStable(t *testing.T, s store.Store) {
	all := listFixture(t, s)
	// Walk with page size 2 while targets come and go: every target present for the whole
	// walk appears exactly once, in order.
	var got []store.Key
	opts := store.ListOptions{PageSize: 2}
	removed := all[3]
	for page := 0; ; page++ {
		sums, next, err := s.List(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, sm := range sums {
			got = append(got, sm.Key)
		}
		if page == 0 {
			// Insert before and after the cursor, delete one ahead of it.
			touch(t, s, key("aaa", "x", "y"), t0, 1, 1)
			touch(t, s, key("zzz", "x", "y"), t0, 1, 1)
			if err := s.Delete(t.Context(), removed); err != nil {
				t.Fatal(err)
			}
			// The last key of the page is deleted: its token must still work.
			if err := s.Delete(t.Context(), sums[len(sums)-1].Key); err != nil {
				t.Fatal(err)
			}
		}
		if next == "" {
			break
		}
		opts.PageToken = next
	}
	var want []store.Key
	for _, k := range all {
		if k != removed {
			want = append(want, k)
		}
	}
	want = append(want, key("zzz", "x", "y"))
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("keys seen (-want +got):\n%s", d)
	}
}

func testListInvalid(t *testing.T, s store.Store) {
	listFixture(t, s)
	_, tok, err := s.List(t.Context(), store.ListOptions{Cluster: "east", PageSize: 1})
	if err != nil || tok == "" {
		t.Fatalf("List: %q, %v", tok, err)
	}
	for _, opts := range []store.ListOptions{
		{PageSize: -1},
		{PageToken: "not a token!"},
		{PageToken: "AAAA"},
		{Cluster: "west", PageToken: tok},
		{Cluster: "east", Namespace: "payments", PageToken: tok},
	} {
		if _, _, err := s.List(t.Context(), opts); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("List(%+v) error = %v, want ErrInvalidArgument", opts, err)
		}
	}
	// The token is valid with its own filters and with none.
	for _, opts := range []store.ListOptions{{Cluster: "east", PageToken: tok}, {PageToken: tok}} {
		if _, _, err := s.List(t.Context(), opts); err != nil {
			t.Errorf("List(%+v): %v", opts, err)
		}
	}
}

func testDeleteUnseenSince(t *testing.T, s store.Store) {
	old, edge, fresh := key("c", "ns", "old"), key("c", "ns", "edge"), key("c", "ns", "fresh")
	never := key("c", "ns", "never") // zero LastSeen: the oldest possible
	touch(t, s, old, t0.Add(-time.Hour), 1, 1)
	touch(t, s, edge, t0, 1, 1)
	touch(t, s, fresh, t0.Add(time.Nanosecond), 1, 1)
	put(t, s, never, &store.Target{})
	n, err := s.DeleteUnseenSince(t.Context(), t0)
	if err != nil {
		t.Fatalf("DeleteUnseenSince: %v", err)
	}
	if n != 2 {
		t.Errorf("DeleteUnseenSince removed %d, want 2", n)
	}
	for _, k := range []store.Key{old, never} {
		if _, err := s.Get(t.Context(), k); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%s) error = %v, want ErrNotFound", k, err)
		}
	}
	mustGet(t, s, edge) // LastSeen == cutoff is kept: only "before" is removed
	mustGet(t, s, fresh)
	if n, err := s.DeleteUnseenSince(t.Context(), t0); n != 0 || err != nil {
		t.Errorf("second DeleteUnseenSince = %d, %v; want 0, nil", n, err)
	}
}

func testIsolation(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	in, want := fullTarget(k), fullTarget(k)
	out := put(t, s, k, in)
	// What Update was given, and what it returned, are not the store's.
	mutate(in)
	mutate(out)
	got := mustGet(t, s, k)
	if d := diff(got, want, ignoreRevision); d != "" {
		t.Fatalf("store changed through a caller's reference (-want +got):\n%s", d)
	}
	// Nor is what Get returned.
	mutate(got)
	if d := diff(mustGet(t, s, k), want, ignoreRevision); d != "" {
		t.Errorf("store changed through Get's result (-want +got):\n%s", d)
	}
	// Nor is what fn was given and returned, once Update is done.
	var kept *store.Target
	if _, err := s.Update(t.Context(), k, func(cur *store.Target) (*store.Target, error) {
		kept = cur
		return cur, nil
	}); err != nil {
		t.Fatal(err)
	}
	mutate(kept)
	if d := diff(mustGet(t, s, k), want, ignoreRevision); d != "" {
		t.Errorf("store changed through fn's argument (-want +got):\n%s", d)
	}
}

// mutate changes every nested reference of t.
func mutate(t *store.Target) {
	*t.Spec.MinReplicas = 1000
	t.Spec.Metrics[0].Resource.Target.AverageValue.Add(resource.MustParse("1"))
	t.Spec.Metrics[3].Object.Metric.Selector.MatchLabels["app"] = "mutated"
	t.Spec.Metrics[3].Object.Metric.Selector.MatchExpressions[0].Values[0] = "mutated"
	t.Spec.Behavior.ScaleUp.Policies[0].Value = 1000
	*t.Spec.Behavior.ScaleDown.SelectPolicy = "mutated"
	t.State.History.Recommendations[0].Replicas = 1000
	t.State.History.ScaleUpEvents = append(t.State.History.ScaleUpEvents[:0], recommender.ScaleEvent{Change: 1000})
	t.State.Conditions[0].Reason = "mutated"
	t.Pending[0].DesiredReplicas = 1000
	t.Reported[0] = "mutated"
	t.LastDecision.Decision.CurrentMetrics[0].Resource.Current.AverageUtilization = ptr[int32](1000)
	t.LastDecision.Decision.Explanation.Metrics[0].Name = "mutated"
	t.LastDecision.RecommendationID = "mutated"
}

func testRoundTrip(t *testing.T, s store.Store) {
	k := key("prod-eu", "shop", "frontend")
	in := fullTarget(k)
	out := put(t, s, k, in)
	if d := diff(out, fullTarget(k), ignoreRevision); d != "" {
		t.Errorf("Update result (-want +got):\n%s", d)
	}
	got := mustGet(t, s, k)
	if d := diff(got, fullTarget(k), ignoreRevision); d != "" {
		t.Errorf("Get (-want +got):\n%s", d)
	}
	// Times come back in UTC, to the nanosecond.
	if got.LastSeen.Location() != time.UTC || got.LastSeen.Nanosecond() != t0.Nanosecond() {
		t.Errorf("LastSeen = %v (%v), want %v in UTC", got.LastSeen, got.LastSeen.Location(), t0)
	}
	// Times in another zone are stored as the same instant.
	inZone := &store.Target{LastSeen: t0.In(time.FixedZone("X", 3*3600))}
	k2 := key("prod-eu", "shop", "zoned")
	put(t, s, k2, inZone)
	if got := mustGet(t, s, k2).LastSeen; !got.Equal(t0) || got.Location() != time.UTC {
		t.Errorf("LastSeen = %v, want %v", got, t0)
	}
}

func ptr[T any](v T) *T { return &v }

func qty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

// FullSpec returns the spec of the suite's full target, a new one each call: every pointer set,
// every kind of metric source, label selectors, both directions of behavior with policies. Tests
// of a backend's own handling of specs start from it.
func FullSpec() recommender.Spec { return fullTarget(store.Key{}).Spec }

// fullTarget returns a target with every field set to a non-zero value.
func fullTarget(k store.Key) *store.Target {
	sel := func() *recommender.LabelSelector {
		return &recommender.LabelSelector{
			MatchLabels: map[string]string{"app": "web", "tier": "front"},
			MatchExpressions: []recommender.LabelSelectorRequirement{
				{Key: "zone", Operator: "In", Values: []string{"a", "b"}},
			},
		}
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	conds := []recommender.Condition{
		{Type: recommender.ConditionAbleToScale, Status: recommender.StatusTrue, Reason: "SucceededRescale",
			Message: "the HPA controller was able to update the target scale to 4", LastTransitionTime: at(-time.Minute)},
		{Type: recommender.ConditionScaledToZero, Status: recommender.StatusFalse, Reason: "ScaledToZero",
			Message: "m", LastTransitionTime: at(-2 * time.Minute)},
	}
	return &store.Target{
		Key: k,
		Spec: recommender.Spec{
			ScaleTargetRef: recommender.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "frontend"},
			MinReplicas:    ptr[int32](2),
			MaxReplicas:    20,
			Metrics: []recommender.MetricSpec{
				{Type: recommender.MetricResource, Resource: &recommender.ResourceMetricSource{Name: "cpu",
					Target: recommender.MetricTarget{Type: recommender.TargetAverageValue, AverageValue: qty("500m")}}},
				{Type: recommender.MetricContainerResource, ContainerResource: &recommender.ContainerResourceMetricSource{
					Name: "memory", Container: "app",
					Target: recommender.MetricTarget{Type: recommender.TargetUtilization, AverageUtilization: ptr[int32](70)}}},
				{Type: recommender.MetricPods, Pods: &recommender.PodsMetricSource{
					Metric: recommender.MetricIdentifier{Name: "rps", Selector: sel()},
					Target: recommender.MetricTarget{Type: recommender.TargetAverageValue, AverageValue: qty("1.5Gi")}}},
				{Type: recommender.MetricObject, Object: &recommender.ObjectMetricSource{
					DescribedObject: recommender.ObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
					Metric:          recommender.MetricIdentifier{Name: "hits", Selector: sel()},
					Target:          recommender.MetricTarget{Type: recommender.TargetValue, Value: qty("10k"), AverageValue: qty("2")}}},
				{Type: recommender.MetricExternal, External: &recommender.ExternalMetricSource{
					Metric: recommender.MetricIdentifier{Name: "queue"},
					Target: recommender.MetricTarget{Type: recommender.TargetValue, Value: qty("30")}}},
			},
			Behavior: &recommender.Behavior{
				ScaleUp: &recommender.ScalingRules{
					StabilizationWindowSeconds: ptr[int32](0),
					SelectPolicy:               ptr(recommender.SelectMax),
					Policies: []recommender.ScalingPolicy{
						{Type: recommender.PolicyPods, Value: 4, PeriodSeconds: 15},
						{Type: recommender.PolicyPercent, Value: 100, PeriodSeconds: 15},
					},
					Tolerance: qty("50m"),
				},
				ScaleDown: &recommender.ScalingRules{
					StabilizationWindowSeconds: ptr[int32](300),
					SelectPolicy:               ptr(recommender.SelectMin),
					Policies:                   []recommender.ScalingPolicy{{Type: recommender.PolicyPercent, Value: 10, PeriodSeconds: 60}},
					Tolerance:                  qty("0"),
				},
			},
		},
		State: recommender.State{
			Seeded: true,
			History: recommender.History{
				Recommendations: []recommender.Recommendation{{Time: at(-30 * time.Second), Replicas: 3}, {Time: at(-15 * time.Second), Replicas: 4}},
				ScaleUpEvents:   []recommender.ScaleEvent{{Time: at(-45 * time.Second), Change: 2}},
				ScaleDownEvents: []recommender.ScaleEvent{{Time: at(-time.Hour), Change: 1}},
			},
			Conditions: conds,
		},
		Pending:  []store.PendingDecision{{RecommendationID: "rec-1", Time: at(-time.Second), CurrentReplicas: 3, DesiredReplicas: 4}},
		Reported: []string{"rec-0", "rec-00"},
		LastDecision: &store.LastDecision{
			RecommendationID: "rec-1",
			Decision: recommender.Decision{
				Time:            at(-time.Second),
				CurrentReplicas: 3,
				DesiredReplicas: 4,
				CurrentMetrics: []recommender.MetricStatus{
					{Type: recommender.MetricResource, Resource: &recommender.ResourceMetricStatus{Name: "cpu",
						Current: recommender.MetricValueStatus{AverageValue: qty("2867m"), AverageUtilization: ptr[int32](81)}}},
					{Type: recommender.MetricContainerResource, ContainerResource: &recommender.ContainerResourceMetricStatus{
						Name: "memory", Container: "app", Current: recommender.MetricValueStatus{AverageUtilization: ptr[int32](0)}}},
					{Type: recommender.MetricPods, Pods: &recommender.PodsMetricStatus{
						Metric: recommender.MetricIdentifier{Name: "rps", Selector: sel()}, Current: recommender.MetricValueStatus{AverageValue: qty("12")}}},
					{Type: recommender.MetricObject, Object: &recommender.ObjectMetricStatus{
						Metric: recommender.MetricIdentifier{Name: "hits"}, Current: recommender.MetricValueStatus{Value: qty("9500")},
						DescribedObject: recommender.ObjectReference{Kind: "Ingress", Name: "main"}}},
					{Type: recommender.MetricExternal, External: &recommender.ExternalMetricStatus{
						Metric: recommender.MetricIdentifier{Name: "queue"}, Current: recommender.MetricValueStatus{Value: qty("31"), AverageValue: qty("7750m")}}},
					{}, // a failed metric
				},
				Conditions: conds,
				Explanation: recommender.Explanation{
					Message: "scale up from 3 to 4: cpu above target",
					Metrics: []recommender.MetricExplanation{
						{Index: 0, Name: "cpu", Proposal: 4, UsageRatio: 1.146, ReadyPods: 3, IgnoredPods: 1, MissingPods: 1, UnreadyPods: 1},
						{Index: 5, Name: "broken", UsageRatio: 0.5, Error: "no metrics returned"},
					},
					WinningMetric:       0,
					Proposal:            6,
					Stabilized:          5,
					StabilizationWindow: 300 * time.Second,
					Limited:             4,
					LimitingPolicy:      "scaleUp Pods 4/15s",
					Final:               4,
					LimitReason:         "ScaleUpLimit",
				},
			},
		},
		LastSeen: t0,
	}
}

// Concurrency: the counter is Spec.MaxReplicas; each increment also records the count it saw
// in Reported (bounded), so a lost update shows as a short count or a repeated id.
const (
	writers    = 16
	increments = 50
)

func increment(cur *store.Target) (*store.Target, error) {
	if cur == nil {
		cur = &store.Target{LastSeen: t0}
	}
	id := fmt.Sprintf("n%d", cur.Spec.MaxReplicas)
	if cur.HasReported(id) {
		return nil, fmt.Errorf("count %d seen twice: an update was lost", cur.Spec.MaxReplicas)
	}
	cur.MarkReported(id)
	cur.Spec.MaxReplicas++
	return cur, nil
}

func testConcurrent(t *testing.T, s store.Store) {
	hot := key("c", "ns", "hot")
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			own := key("c", "ns", fmt.Sprintf("own-%02d", w))
			for range increments {
				if _, err := s.Update(t.Context(), hot, increment); err != nil {
					errs <- err
					return
				}
				if _, err := s.Update(t.Context(), own, increment); err != nil {
					errs <- err
					return
				}
				if _, err := s.Get(t.Context(), hot); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check := func(k store.Key, want int) {
		t.Helper()
		got := mustGet(t, s, k)
		if got.Spec.MaxReplicas != int32(want) {
			t.Errorf("%s: %d increments stored, want %d (lost updates)", k, got.Spec.MaxReplicas, want)
		}
		if n := min(want, store.MaxReported); len(got.Reported) != n || got.Reported[n-1] != fmt.Sprintf("n%d", want-1) {
			t.Errorf("%s: Reported = %v, want the last %d counts", k, got.Reported, n)
		}
	}
	check(hot, writers*increments)
	for w := range writers {
		check(key("c", "ns", fmt.Sprintf("own-%02d", w)), increments)
	}
}

func testClosed(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	put(t, s, k, &store.Target{LastSeen: t0})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Ping(t.Context()); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Ping after Close: %v, want ErrUnavailable", err)
	}
	if _, err := s.Get(t.Context(), k); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Get after Close: %v, want ErrUnavailable", err)
	}
	_, err := s.Update(t.Context(), k, increment)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Update after Close: %v, want ErrUnavailable", err)
	}
	if _, _, err := s.List(t.Context(), store.ListOptions{}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("List after Close: %v, want ErrUnavailable", err)
	}
	if err := s.Delete(t.Context(), k); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Delete after Close: %v, want ErrUnavailable", err)
	}
	if _, err := s.DeleteUnseenSince(t.Context(), t0.Add(time.Hour)); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("DeleteUnseenSince after Close: %v, want ErrUnavailable", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}
