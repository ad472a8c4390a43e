package codec

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// TestReviseEqualsMarshal: MarshalNormalized's record, revised, is Marshal(t, rev) for any
// positive revision, once; a spent record, a record that is not one without a revision, and
// a revision that is not positive are refused.
func TestReviseEqualsMarshal(t *testing.T) {
	targets := []*store.Target{
		{},
		{Key: store.Key{Cluster: "c", Namespace: "ns", Name: "web"}, Spec: recommender.Spec{MaxReplicas: 9},
			Reported: []string{"a", "b"}, LastSeen: time.Unix(1, 5)},
	}
	for _, tgt := range targets {
		for _, rev := range []int64{1, 9, 10, 123456789, 1<<62 + 3, math.MaxInt64} {
			u, _, _, err := MarshalNormalized(tgt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := u.Revise(rev)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Marshal(tgt, rev)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Revise(%d) =\n%s\nwant Marshal(t, %d) =\n%s", rev, got, rev, want)
			}
			if again, err := u.Revise(rev + 1); err == nil || u.Bytes() != nil {
				t.Errorf("a second Revise gave %q, %v; want an error and no bytes left", again, err)
			}
		}
	}
	withRev, _ := Marshal(targets[1], 4)
	for _, bad := range [][]byte{nil, []byte(`{}`), []byte(`{"v":3,"key":{}}`), []byte(`{"v":0,"key":{}}`),
		[]byte(`{"v":1,"rev":3,"key":{}}`), withRev} {
		u := unrevised(bad)
		if _, err := u.Revise(5); err == nil {
			t.Errorf("Revise of %q succeeded, want an error", bad)
		}
	}
	u := unrevised([]byte(`{"v":2,"key":{}}`))
	if _, err := u.Revise(0); err == nil {
		t.Error("Revise(0) succeeded, want an error")
	}
	// A record of version 1, as an older binary wrote it, keeps its version.
	u = unrevised([]byte(`{"v":1,"key":{}}`))
	if got, err := u.Revise(12); err != nil || string(got) != `{"v":1,"rev":12,"key":{}}` {
		t.Errorf("Revise(12) of a version 1 record = %q, %v", got, err)
	}
}
