package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// RunDecisionLog runs the decision log suite. newStore must return a fresh, empty store that
// applies limits, and register its Close with t.Cleanup.
func RunDecisionLog(t *testing.T, newStore func(t *testing.T, limits store.DecisionLogLimits) store.Store, opts ...Option) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	tests := []struct {
		name   string
		limits store.DecisionLogLimits
		fn     func(t *testing.T, s store.Store)
	}{
		{name: "NumbersAndLists", fn: testDecisionsNumbered},
		{name: "Pages", fn: testDecisionsPaged},
		{name: "TimeRange", fn: testDecisionsRange},
		{name: "RecentChangesInPlace", fn: testDecisionsRecentChange},
		{name: "MaxBytes", limits: store.DecisionLogLimits{MaxBytes: 2000}, fn: testDecisionsMaxBytes},
		{name: "Retention", limits: store.DecisionLogLimits{Retention: time.Hour}, fn: testDecisionsRetention},
		{name: "GoneWithTarget", fn: testDecisionsGone},
		{name: "Invalid", fn: testDecisionsInvalid},
		{name: "NotWrittenOnError", fn: testDecisionsNotOnError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t, tt.limits)
			tt.fn(t, s)
			for _, check := range cfg.invariants {
				check(t, s)
			}
		})
	}
}

// entry is decision i of a log, one minute after the one before, with a metric and a
// condition so that every field is encoded.
func entry(i int) store.DecisionEntry {
	at := t0.Add(time.Duration(i) * time.Minute)
	return store.DecisionEntry{
		Time: at, Until: at, Count: 1, CurrentReplicas: int32(i), DesiredReplicas: int32(i + 1),
		RecommendationID: fmt.Sprintf("rec-%d", i),
		Proposal:         int32(i + 2), Stabilized: int32(i + 1), Limited: int32(i + 1), Final: int32(i + 1),
		Metrics: []store.DecisionMetric{{Index: 0, Name: "cpu", Proposal: int32(i + 2), UsageRatio: 1.25, Value: "75",
			ReadyPods: 3, IgnoredPods: 1, MissingPods: 1, UnreadyPods: 1}},
		Conditions: []store.DecisionCondition{{Type: "AbleToScale", Status: "True", Reason: "ReadyForNewScale"}},
		Message:    fmt.Sprintf("decision %d", i),
		Outcome:    store.OutcomeUnreported,
	}
}

// decide appends decision i to the target's recent entries and retires all but the newest
// `keep` recent ones, as the server does.
func decide(t *testing.T, s store.Store, k store.Key, i, keep int) *store.Target {
	t.Helper()
	got, err := s.Update(t.Context(), k, func(cur *store.Target) (*store.Target, error) {
		if cur == nil {
			cur = &store.Target{Spec: recommender.Spec{MaxReplicas: 10}}
		}
		cur.LastSeen = t0.Add(time.Duration(i) * time.Minute)
		cur.RecentDecisions = append(cur.RecentDecisions, entry(i))
		if n := len(cur.RecentDecisions) - keep; n > 0 {
			cur.RetiredDecisions = cur.RecentDecisions[:n]
			cur.RecentDecisions = cur.RecentDecisions[n:]
		}
		return cur, nil
	})
	if err != nil {
		t.Fatalf("Update(%s) with decision %d: %v", k, i, err)
	}
	return got
}

func listAll(t *testing.T, s store.Store, k store.Key, opts store.DecisionListOptions) []store.DecisionEntry {
	t.Helper()
	var out []store.DecisionEntry
	for range 1000 {
		page, next, err := s.ListDecisions(t.Context(), k, opts)
		if err != nil {
			t.Fatalf("ListDecisions(%s, %+v): %v", k, opts, err)
		}
		if opts.PageSize > 0 && len(page) > opts.PageSize {
			t.Fatalf("ListDecisions(%s): %d entries on a page of %d", k, len(page), opts.PageSize)
		}
		out = append(out, page...)
		if next == "" {
			return out
		}
		opts.PageToken = next
	}
	t.Fatal("ListDecisions: no last page after 1000")
	return nil
}

// messages lists the entries' messages, in order.
func messages(es []store.DecisionEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Message)
	}
	return out
}

func newestFirst(from, to int) []string {
	var out []string
	for i := to; i >= from; i-- {
		out = append(out, fmt.Sprintf("decision %d", i))
	}
	return out
}

func testDecisionsNumbered(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	var got *store.Target
	for i := range 5 {
		got = decide(t, s, k, i, 2)
	}
	if got.RetiredDecisions != nil {
		t.Errorf("Update returned retired entries %v; want none", got.RetiredDecisions)
	}
	if len(got.RecentDecisions) != 2 || got.RecentDecisions[0].Seq != 4 || got.RecentDecisions[1].Seq != 5 {
		t.Fatalf("recent entries after 5 decisions: %+v; want seqs 4 and 5", got.RecentDecisions)
	}
	if got.DecisionLog.NextSeq != 6 || got.DecisionLog.Retired != 3 || got.DecisionLog.Bytes <= 0 {
		t.Errorf("DecisionLog = %+v; want NextSeq 6, 3 retired, bytes counted", got.DecisionLog)
	}
	all := listAll(t, s, k, store.DecisionListOptions{})
	if d := diff(messages(all), newestFirst(0, 4)); d != "" {
		t.Errorf("ListDecisions messages (-want +got):\n%s", d)
	}
	want := entry(2)
	want.Seq = 3
	if d := diff(all[2], want); d != "" {
		t.Errorf("retired entry read back (-want +got):\n%s", d)
	}
	if d := diff(mustGet(t, s, k).RecentDecisions, got.RecentDecisions); d != "" {
		t.Errorf("Get's recent entries differ from Update's (-want +got):\n%s", d)
	}
	// Another target's log is its own.
	other := key("c", "ns", "web-2")
	decide(t, s, other, 100, 1)
	decide(t, s, other, 101, 1)
	if d := diff(messages(listAll(t, s, other, store.DecisionListOptions{})), newestFirst(100, 101)); d != "" {
		t.Errorf("other target's log (-want +got):\n%s", d)
	}
	if d := diff(messages(listAll(t, s, k, store.DecisionListOptions{})), newestFirst(0, 4)); d != "" {
		t.Errorf("first target's log after the other's writes (-want +got):\n%s", d)
	}
}

func testDecisionsPaged(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	for i := range 11 {
		decide(t, s, k, i, 3)
	}
	for _, size := range []int{1, 2, 3, 4, 10, 11, 12} {
		got := listAll(t, s, k, store.DecisionListOptions{PageSize: size})
		if d := diff(messages(got), newestFirst(0, 10)); d != "" {
			t.Errorf("page size %d (-want +got):\n%s", size, d)
		}
	}
	// A page token stays valid while decisions are added: the next page goes on below it.
	first, next, err := s.ListDecisions(t.Context(), k, store.DecisionListOptions{PageSize: 4})
	if err != nil || next == "" {
		t.Fatalf("first page: %v, next %q", err, next)
	}
	decide(t, s, k, 11, 3)
	rest := listAll(t, s, k, store.DecisionListOptions{PageSize: 4, PageToken: next})
	if d := diff(messages(append(first, rest...)), newestFirst(0, 10)); d != "" {
		t.Errorf("pages across a write (-want +got):\n%s", d)
	}
}

func testDecisionsRange(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	for i := range 10 {
		decide(t, s, k, i, 2)
	}
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	for _, tc := range []struct {
		since, until time.Time
		want         []string
	}{
		{since: at(7), want: newestFirst(7, 9)},
		{until: at(2), want: newestFirst(0, 2)},
		{since: at(3), until: at(5), want: newestFirst(3, 5)},
		{since: at(3).Add(time.Second), until: at(3).Add(2 * time.Second), want: nil},
		{since: at(20), want: nil},
	} {
		got := listAll(t, s, k, store.DecisionListOptions{Since: tc.since, Until: tc.until, PageSize: 2})
		if d := diff(messages(got), tc.want); d != "" {
			t.Errorf("since %v until %v (-want +got):\n%s", tc.since, tc.until, d)
		}
	}
}

// testDecisionsRecentChange changes a recent entry in place (a run growing, an outcome) and
// retires it later: what is retired is the entry as last changed.
func testDecisionsRecentChange(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	decide(t, s, k, 0, 2)
	_, err := s.Update(t.Context(), k, func(cur *store.Target) (*store.Target, error) {
		e := &cur.RecentDecisions[len(cur.RecentDecisions)-1]
		e.Count, e.Until = 3, e.Time.Add(30*time.Second)
		e.Outcome, e.Error = store.OutcomeFailed, "conflict"
		return cur, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		decide(t, s, k, i, 1)
	}
	all := listAll(t, s, k, store.DecisionListOptions{})
	if len(all) != 4 {
		t.Fatalf("got %d entries; want 4", len(all))
	}
	want := entry(0)
	want.Seq, want.Count, want.Until, want.Outcome, want.Error = 1, 3, want.Time.Add(30*time.Second), store.OutcomeFailed, "conflict"
	if d := diff(all[3], want); d != "" {
		t.Errorf("changed then retired entry (-want +got):\n%s", d)
	}
}

func testDecisionsMaxBytes(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	var got *store.Target
	for i := range 60 {
		got = decide(t, s, k, i, 1)
	}
	all := listAll(t, s, k, store.DecisionListOptions{})
	if len(all) < 3 || len(all) >= 60 {
		t.Fatalf("kept %d entries of 60 under 2000 bytes; want some dropped, several kept", len(all))
	}
	if d := diff(messages(all), newestFirst(60-len(all), 59)); d != "" {
		t.Errorf("kept entries are not the newest (-want +got):\n%s", d)
	}
	if got.DecisionLog.Retired != len(all)-1 || got.DecisionLog.Bytes > 2000 {
		t.Errorf("DecisionLog = %+v with %d entries listed; want %d retired, at most 2000 bytes", got.DecisionLog, len(all), len(all)-1)
	}
}

func testDecisionsRetention(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	for i := range 100 { // a minute apart: 99 minutes
		decide(t, s, k, i, 1)
	}
	all := listAll(t, s, k, store.DecisionListOptions{})
	// The newest is at minute 99: retired entries before minute 39 go; the trim of each write
	// drops what it finds, so a few more than the hour may wait for the next writes (etcd).
	if len(all) < 61 || len(all) > 61+8 {
		t.Fatalf("kept %d entries over 99 minutes with an hour's retention; want 61", len(all))
	}
	if d := diff(messages(all), newestFirst(100-len(all), 99)); d != "" {
		t.Errorf("kept entries are not the newest (-want +got):\n%s", d)
	}
}

func testDecisionsGone(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	for i := range 5 {
		decide(t, s, k, i, 1)
	}
	if err := s.Delete(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ListDecisions(t.Context(), k, store.DecisionListOptions{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ListDecisions after Delete: %v; want ErrNotFound", err)
	}
	decide(t, s, k, 10, 1) // the same name again: a new log
	if d := diff(messages(listAll(t, s, k, store.DecisionListOptions{})), newestFirst(10, 10)); d != "" {
		t.Errorf("log of a target recreated after Delete (-want +got):\n%s", d)
	}
	// Garbage collection takes the log along too.
	for i := 11; i < 15; i++ {
		decide(t, s, k, i, 1)
	}
	if n, err := s.DeleteUnseenSince(t.Context(), t0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("DeleteUnseenSince = %d, %v; want 1", n, err)
	}
	decide(t, s, k, 20, 1)
	if d := diff(messages(listAll(t, s, k, store.DecisionListOptions{})), newestFirst(20, 20)); d != "" {
		t.Errorf("log of a target recreated after collection (-want +got):\n%s", d)
	}
}

func testDecisionsInvalid(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	if _, _, err := s.ListDecisions(t.Context(), k, store.DecisionListOptions{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ListDecisions of an unknown target: %v; want ErrNotFound", err)
	}
	decide(t, s, k, 0, 1)
	for _, opts := range []store.DecisionListOptions{{PageSize: -1}, {PageToken: "x"}, {PageToken: "0"}} {
		if _, _, err := s.ListDecisions(t.Context(), k, opts); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("ListDecisions(%+v): %v; want ErrInvalidArgument", opts, err)
		}
	}
	if _, _, err := s.ListDecisions(t.Context(), store.Key{}, store.DecisionListOptions{}); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("ListDecisions of an empty key: %v; want ErrInvalidArgument", err)
	}
}

// testDecisionsNotOnError: an UpdateFunc that fails writes none of its entries.
func testDecisionsNotOnError(t *testing.T, s store.Store) {
	k := key("c", "ns", "web")
	decide(t, s, k, 0, 1)
	_, err := s.Update(t.Context(), k, func(cur *store.Target) (*store.Target, error) {
		cur.RetiredDecisions = cur.RecentDecisions
		cur.RecentDecisions = []store.DecisionEntry{entry(1)}
		return nil, errors.New("refused")
	})
	if err == nil {
		t.Fatal("Update: no error")
	}
	got := listAll(t, s, k, store.DecisionListOptions{})
	if d := diff(got, []store.DecisionEntry{func() store.DecisionEntry { e := entry(0); e.Seq = 1; return e }()},
		cmpopts.EquateEmpty()); d != "" {
		t.Errorf("log after a refused update (-want +got):\n%s", d)
	}
}
