package codec

import (
	"bytes"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

func TestWithRevisionEqualsMarshal(t *testing.T) {
	targets := []*store.Target{
		{},
		{Key: store.Key{Cluster: "c", Namespace: "ns", Name: "web"}, Spec: recommender.Spec{MaxReplicas: 9},
			Reported: []string{"a", "b"}, LastSeen: time.Unix(1, 5)},
	}
	for _, tgt := range targets {
		for _, rev := range []int64{1, 9, 10, 123456789, 1<<62 + 3} {
			unrev, err := Marshal(tgt, 0)
			if err != nil {
				t.Fatal(err)
			}
			kept := bytes.Clone(unrev)
			got, err := WithRevision(unrev, rev)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Marshal(tgt, rev)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("WithRevision(Marshal(t, 0), %d) =\n%s\nwant Marshal(t, %d) =\n%s", rev, got, rev, want)
			}
			if !bytes.Equal(unrev, kept) {
				t.Error("WithRevision modified its input")
			}
		}
	}
	withRev, _ := Marshal(targets[1], 4)
	for _, bad := range [][]byte{nil, []byte(`{}`), []byte(`{"v":2,"key":{}}`), withRev} {
		if _, err := WithRevision(bad, 5); err == nil {
			t.Errorf("WithRevision(%q) succeeded, want an error", bad)
		}
	}
	if _, err := WithRevision([]byte(`{"v":1,"key":{}}`), 0); err == nil {
		t.Error("WithRevision(rev 0) succeeded, want an error")
	}
}
