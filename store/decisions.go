package store

import (
	"fmt"
	"strconv"
	"time"
)

// The decision log: every decision the server makes for a target is an entry of that target's
// log, written in the same Update as the record (one write per decision).
//
// A log lives in two parts. The newest entries, those a later write may still change (a run of
// identical decisions grows; ReportScale sets an outcome), are Target.RecentDecisions, stored
// inside the record. Older entries are retired: an UpdateFunc moves them from RecentDecisions
// to RetiredDecisions, and the backend appends them to the target's log under keys of their
// own, so a decision writes the record and at most a few small entries, never the whole log.
// The backend trims retired entries to its DecisionLogLimits in the same write, and removes
// them with the target.

// DecisionEntry is one logged decision, or a run of Count identical ones from Time to Until.
type DecisionEntry struct {
	// Seq orders a target's entries: larger is newer. The store sets it when the entry is
	// first written (an entry with Seq 0 is new); callers keep it.
	Seq                                  uint64
	Time, Until                          time.Time
	Count                                int32
	RecommendationID                     string
	CurrentReplicas, DesiredReplicas     int32
	Proposal, Stabilized, Limited, Final int32
	Metrics                              []DecisionMetric
	Conditions                           []DecisionCondition
	Message                              string
	// Outcome is OutcomeSucceeded, OutcomeFailed (Error says why) or OutcomeUnreported.
	Outcome string
	Error   string
}

// Outcomes of a logged decision's scale write.
const (
	OutcomeSucceeded  = "succeeded"
	OutcomeFailed     = "failed"
	OutcomeUnreported = "unreported"
)

// DecisionMetric is one metric's part in a logged decision.
type DecisionMetric struct {
	Index                                            int32
	Name                                             string
	Proposal                                         int32
	UsageRatio                                       float64
	Value                                            string
	ReadyPods, IgnoredPods, MissingPods, UnreadyPods int32
	Error                                            string
}

// DecisionCondition is a condition as a logged decision reported it, without its message.
type DecisionCondition struct{ Type, Status, Reason string }

// DecisionLogState is a backend's bookkeeping of a target's retired entries, kept in the
// record. Callers leave it as they read it.
type DecisionLogState struct {
	// NextSeq is the Seq the next new entry gets.
	NextSeq uint64
	// Retired and Bytes count the retired entries stored and their encoded size.
	Retired int
	Bytes   int64
}

// DecisionLogLimits bound a target's log; a backend applies them in each write that retires
// entries, oldest entries first. Zero fields mean no bound.
type DecisionLogLimits struct {
	// Retention drops retired entries whose Until is older than this before the newest
	// entry's.
	Retention time.Duration
	// MaxBytes drops retired entries while the log (retired and recent entries, encoded) is
	// larger.
	MaxBytes int64
}

// Default decision log limits (the server's --decision-log-retention and --decision-log-bytes).
const (
	DefaultDecisionLogRetention = 24 * time.Hour
	DefaultDecisionLogBytes     = 32 << 10
)

// DecisionListOptions select and page ListDecisions.
type DecisionListOptions struct {
	// Since keeps entries whose Until is at or after it; zero: no bound.
	Since time.Time
	// Until keeps entries whose Time is at or before it; zero: no bound.
	Until time.Time
	// PageSize is the most entries one page returns: 0 means DefaultPageSize, larger than
	// MaxPageSize means MaxPageSize, negative is ErrInvalidArgument.
	PageSize int
	// PageToken is the nextPageToken of the previous page, "" for the first.
	PageToken string
}

// DecisionPager walks a log newest first for ListDecisions: backends feed it the recent
// entries and then the retired ones, newest first, and stop when Add says so.
type DecisionPager struct {
	opts   DecisionListOptions
	size   int
	before uint64 // only entries with Seq below it (0: no bound)
	out    []DecisionEntry
	next   string
	done   bool
}

// NewDecisionPager validates opts.
func NewDecisionPager(opts DecisionListOptions) (*DecisionPager, error) {
	size, err := ListOptions{PageSize: opts.PageSize}.EffectivePageSize()
	if err != nil {
		return nil, err
	}
	p := &DecisionPager{opts: opts, size: size}
	if opts.PageToken != "" {
		seq, err := strconv.ParseUint(opts.PageToken, 10, 64)
		if err != nil || seq == 0 {
			return nil, fmt.Errorf("decision page token %q: %w", opts.PageToken, ErrInvalidArgument)
		}
		p.before = seq
	}
	return p, nil
}

// Before is the Seq the walk starts below (0: from the newest). Backends may seek to it.
func (p *DecisionPager) Before() uint64 { return p.before }

// Add offers the next older entry and reports whether the walk should go on.
func (p *DecisionPager) Add(e DecisionEntry) bool {
	if p.done {
		return false
	}
	if p.before != 0 && e.Seq >= p.before {
		return true
	}
	if !p.opts.Since.IsZero() && e.Until.Before(p.opts.Since) {
		p.done = true // older entries end earlier still
		return false
	}
	if !p.opts.Until.IsZero() && e.Time.After(p.opts.Until) {
		return true
	}
	if len(p.out) == p.size {
		p.next = strconv.FormatUint(p.out[len(p.out)-1].Seq, 10)
		p.done = true
		return false
	}
	p.out = append(p.out, e)
	return true
}

// AddRecent offers a target's recent entries (oldest first, as stored) and reports whether
// the walk should go on to the retired ones.
func (p *DecisionPager) AddRecent(recent []DecisionEntry) bool {
	for i := len(recent) - 1; i >= 0; i-- {
		if !p.Add(recent[i]) {
			return false
		}
	}
	return true
}

// Page returns the entries gathered and the next page's token.
func (p *DecisionPager) Page() ([]DecisionEntry, string) { return p.out, p.next }

// NumberDecisions gives the entries of t that have no Seq yet theirs, retired ones first (they
// are older), counting from t.DecisionLog.NextSeq or from floor when that is larger (a backend
// that finds retired entries the record does not account for passes the next free Seq), and
// advances NextSeq. Backends call it on an UpdateFunc's result before encoding it.
func NumberDecisions(t *Target, floor uint64) {
	next := max(t.DecisionLog.NextSeq, floor, 1)
	numbered := false
	for _, list := range [][]DecisionEntry{t.RetiredDecisions, t.RecentDecisions} {
		for i := range list {
			if list[i].Seq == 0 {
				list[i].Seq = next
				next++
				numbered = true
			}
		}
	}
	if numbered {
		t.DecisionLog.NextSeq = next
	}
}

// Expired reports whether limits drop the retired entry e of a log whose newest entry is newest
// and whose encoded size is size.
func (l DecisionLogLimits) Expired(e *DecisionEntry, newest time.Time, size int64) bool {
	return (l.MaxBytes > 0 && size > l.MaxBytes) ||
		(l.Retention > 0 && e.Until.Before(newest.Add(-l.Retention)))
}

// NewestDecisionTime is the Until of t's newest entry (zero when none).
func (t *Target) NewestDecisionTime() time.Time {
	if n := len(t.RecentDecisions); n > 0 {
		return t.RecentDecisions[n-1].Until
	}
	if n := len(t.RetiredDecisions); n > 0 {
		return t.RetiredDecisions[n-1].Until
	}
	return time.Time{}
}
