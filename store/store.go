package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// Sentinel errors. Backends wrap them with %w (and may also wrap the driver's error), so callers
// test with errors.Is.
var (
	// ErrNotFound: no target with that key.
	ErrNotFound = errors.New("target not found")
	// ErrConflict: a concurrent writer kept winning and the backend gave up retrying an Update
	// (etcd compare-and-swap). An UpdateFunc may also return it to refuse a write.
	ErrConflict = errors.New("concurrent update conflict")
	// ErrUnavailable: the backend cannot be reached or is closed. The call may be retried.
	ErrUnavailable = errors.New("store unavailable")
	// ErrInvalidArgument: a malformed key, page size or page token.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNoSpace: a write failed because the disk or database holding the store is full
	// (ENOSPC, EDQUOT, a database quota). Nothing of that write is stored and nothing stored
	// before is lost; writes succeed again once there is room. Backends return it as a
	// *NoSpaceError, which names what is full.
	ErrNoSpace = errors.New("no space left for the store")
)

// NoSpaceError is a write refused for lack of space; errors.Is(err, ErrNoSpace) holds for it.
type NoSpaceError struct {
	// Where names what is full, as an operator finds it: the bbolt file's path, the etcd
	// endpoints. It is safe to show a caller; Err is not.
	Where string
	// Err is the driver's error, for logs.
	Err error
}

func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("no space left on the disk of %s: %v", e.Where, e.Err)
}

// Is makes errors.Is(err, ErrNoSpace) hold.
func (e *NoSpaceError) Is(target error) bool { return target == ErrNoSpace }

func (e *NoSpaceError) Unwrap() error { return e.Err }

// Store keeps one Target per Key.
//
// Concurrency: every method is safe for concurrent use, across goroutines and (for shared
// backends such as etcd) across processes. Update is an atomic read-modify-write of one target:
// no update is lost and no caller sees a half-written record. Nothing is atomic across keys.
//
// Ownership: Targets passed in and returned are deep copies; a caller may mutate what it gets
// and the store never keeps a reference to what it is given.
//
// Normalization: what comes back is what the encoding keeps. Times are returned in UTC with
// nanoseconds and without a monotonic reading; empty slices and maps come back nil; quantities
// come back parsed from their canonical String() form. Key and Revision are always set by the
// store.
//
// Writes: Update is the only way to write a target (Delete and DeleteUnseenSince only remove
// them). A caller that needs several things of one target written together (its record and,
// an entry of its decision log) writes them in one Update.
//
// Errors: ErrNotFound, ErrConflict, ErrUnavailable, ErrInvalidArgument and ErrNoSpace (wrapped,
// use errors.Is); an error returned by an UpdateFunc comes back unchanged, so errors.Is and
// errors.As see it; ctx.Err() when the context ends before the operation starts (a backend may
// not be able to abandon a write already in flight). Anything else is an internal failure.
type Store interface {
	// Get returns the target stored under key, or ErrNotFound.
	Get(ctx context.Context, key Key) (*Target, error)

	// Update atomically reads the target under key, calls fn with a private copy of it (nil
	// when absent) and stores what fn returns, then returns fn's result as stored: a copy of
	// the struct with Key and its new Revision set and its decision log entries numbered,
	// whose slices and pointers are fn's own (it is not read back, so the normalization above
	// shows in a later Get, not in it).
	//
	// fn MAY BE CALLED MORE THAN ONCE (bbolt batches retry, etcd compare-and-swap retries): it
	// must be a pure function of its argument and of values it closes over, and must not keep
	// side effects of any call but the one whose result Update returns. If fn returns nil
	// (and no error), nothing is written and Update returns the current target unchanged, or
	// (nil, nil) when there is none. If fn returns an error, nothing is written and Update
	// returns that error unchanged. To remove a target, use Delete. fn must not call the
	// Store (it may run inside the backend's write transaction or lock) and should be quick:
	// in bbolt it runs while other targets' writes wait for the same commit.
	Update(ctx context.Context, key Key, fn UpdateFunc) (*Target, error)

	// Delete removes the target under key, or returns ErrNotFound.
	Delete(ctx context.Context, key Key) error

	// List returns summaries of the targets matching opts, ordered by (cluster, namespace,
	// name), at most opts.PageSize of them, and the token of the next page ("" on the last
	// page). A token names the last key returned, so paging is stable while targets are added
	// or removed: no target present for the whole walk is skipped or returned twice. A token
	// is only valid with the same Cluster and Namespace filters.
	List(ctx context.Context, opts ListOptions) ([]TargetSummary, string, error)

	// DeleteUnseenSince removes every target whose LastSeen is before cutoff (TTL garbage
	// collection) and returns how many it removed. Targets updated concurrently are
	// re-checked before removal, so a target seen again is kept.
	DeleteUnseenSince(ctx context.Context, cutoff time.Time) (int, error)

	// ListDecisions returns the decision log of the target under key, newest first: its
	// recent entries, then the retired ones the backend keeps, filtered and paged by opts,
	// and the token of the next page ("" on the last). ErrNotFound when there is no target.
	ListDecisions(ctx context.Context, key Key, opts DecisionListOptions) ([]DecisionEntry, string, error)

	// Ping returns nil when the backend answers, else an error wrapping ErrUnavailable.
	Ping(ctx context.Context) error

	// Close releases the backend. Calls after Close fail with ErrUnavailable.
	Close() error
}

// UpdateFunc computes the new record from the current one (nil when absent). See Store.Update.
type UpdateFunc func(current *Target) (*Target, error)

// Key names one autoscaler: the HPA Name in Namespace of Cluster. Every part must be non-empty
// and valid UTF-8; any character, separators included, is allowed.
type Key struct {
	Cluster   string
	Namespace string
	Name      string
}

// String is for logs and error messages; it is not an encoding (parts may contain "/").
func (k Key) String() string { return k.Cluster + "/" + k.Namespace + "/" + k.Name }

// Validate returns an error wrapping ErrInvalidArgument when a part is empty.
func (k Key) Validate() error {
	switch {
	case k.Cluster == "":
		return fmt.Errorf("key %q: empty cluster: %w", k, ErrInvalidArgument)
	case k.Namespace == "":
		return fmt.Errorf("key %q: empty namespace: %w", k, ErrInvalidArgument)
	case k.Name == "":
		return fmt.Errorf("key %q: empty name: %w", k, ErrInvalidArgument)
	}
	return nil
}

// Target is everything stored for one autoscaler.
type Target struct {
	// Key is set by the store.
	Key Key
	// Spec is the spec last seen in a Recommend.
	Spec recommender.Spec
	// State is the algorithm's memory: seeded flag, history, conditions.
	State recommender.State
	// Pending are the decisions that asked for a scale write and await ReportScale, oldest
	// first.
	Pending []PendingDecision
	// Reported are the recommendation ids already reported, oldest first, at most
	// MaxReported of them (see MarkReported); ReportScale uses them to answer a repeat
	// idempotently.
	Reported []string
	// LastDecision is the latest non-dry-run decision; nil before the first.
	LastDecision *LastDecision
	// LastSeen is the time of the latest call about this target; DeleteUnseenSince uses it.
	LastSeen time.Time
	// FirstSeen is the time of the call that first stored this target (its age, as AGE shows
	// an object's); zero for a target stored before FirstSeen was kept.
	FirstSeen time.Time
	// RecentDecisions are the newest entries of the decision log, oldest first, stored in the
	// record: the ones a later write may still change (decisions.go).
	RecentDecisions []DecisionEntry
	// RetiredDecisions are entries an UpdateFunc moved out of RecentDecisions, oldest first
	// and older than every recent one; the store appends them to the target's log in the
	// same write. Always nil in what the store returns.
	RetiredDecisions []DecisionEntry
	// DecisionLog is the store's bookkeeping of the retired entries.
	DecisionLog DecisionLogState
	// Revision is set by the store: it changes on every write of this target and is larger
	// after a later write. Its values are otherwise backend-specific; it is not part of the
	// stored record.
	Revision int64
}

// PendingDecision is a decision that asked for a scale write and awaits ReportScale.
type PendingDecision struct {
	RecommendationID string
	Time             time.Time
	CurrentReplicas  int32
	DesiredReplicas  int32
}

// LastDecision is a decision as returned to the caller: recommender.Decision lacks the
// recommendation id the server assigned to it.
type LastDecision struct {
	// RecommendationID is empty when the decision did not ask for a scale.
	RecommendationID string
	Decision         recommender.Decision
}

// MaxReported bounds Target.Reported.
const MaxReported = 64

// HasReported reports whether id is among the recently reported recommendation ids.
func (t *Target) HasReported(id string) bool { return slices.Contains(t.Reported, id) }

// MarkReported records id as reported, dropping the oldest ids beyond MaxReported. Marking an
// id already present does nothing.
func (t *Target) MarkReported(id string) {
	if t.HasReported(id) {
		return
	}
	t.Reported = append(t.Reported, id)
	if n := len(t.Reported) - MaxReported; n > 0 {
		t.Reported = slices.Delete(t.Reported, 0, n)
	}
}

// Summary returns the fields ListTargets shows.
func (t *Target) Summary() TargetSummary {
	s := TargetSummary{Key: t.Key, LastSeen: t.LastSeen, FirstSeen: t.FirstSeen, Revision: t.Revision}
	if d := t.LastDecision; d != nil {
		s.HasDecision = true
		s.CurrentReplicas = d.Decision.CurrentReplicas
		s.DesiredReplicas = d.Decision.DesiredReplicas
	}
	return s
}

// TargetSummary is one row of List.
type TargetSummary struct {
	Key Key
	// HasDecision is false before the first decision; the replica counts are then 0.
	HasDecision     bool
	CurrentReplicas int32
	DesiredReplicas int32
	LastSeen        time.Time
	FirstSeen       time.Time // zero: not kept when the target was stored
	Revision        int64
}

// Page size limits for List.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// ListOptions filter and page List. Empty filters match everything; Namespace without
// Cluster matches that namespace in every cluster.
type ListOptions struct {
	Cluster   string
	Namespace string
	// PageSize is the most targets one page returns: 0 means DefaultPageSize, larger than
	// MaxPageSize means MaxPageSize, negative is ErrInvalidArgument.
	PageSize int
	// PageToken is the nextPageToken of the previous page, "" for the first.
	PageToken string
}

// EffectivePageSize validates and clamps PageSize.
func (o ListOptions) EffectivePageSize() (int, error) {
	switch {
	case o.PageSize < 0:
		return 0, fmt.Errorf("page size %d: %w", o.PageSize, ErrInvalidArgument)
	case o.PageSize == 0:
		return DefaultPageSize, nil
	case o.PageSize > MaxPageSize:
		return MaxPageSize, nil
	}
	return o.PageSize, nil
}

// Matches reports whether key passes the Cluster and Namespace filters.
func (o ListOptions) Matches(key Key) bool {
	return (o.Cluster == "" || key.Cluster == o.Cluster) &&
		(o.Namespace == "" || key.Namespace == o.Namespace)
}

// CommitStats is what a backend that commits writes in batches (bbolt) reports for
// monitoring; the server exports it on /metrics. Counters count from the store's opening.
type CommitStats struct {
	// Commits is the number of write transactions committed, Writes the writes (of Update,
	// Delete and DeleteUnseenSince) they carried: Writes/Commits is how many writes share a
	// commit and its syncs.
	Commits, Writes uint64
	// WriteTime is the time the commits spent writing their pages to the file and syncing them.
	WriteTime time.Duration
}

// CommitReporter is implemented by backends that report CommitStats (bbolt).
type CommitReporter interface {
	CommitStats() CommitStats
}

// CompactionStats is what a backend that compacts its database's history (etcd) reports for
// monitoring; the server exports it on /metrics. Counters count from the store's opening.
type CompactionStats struct {
	// Compactions counts the compactions done (one another client made first included),
	// Failures those that failed.
	Compactions, Failures uint64
	// Revision is the revision the history was last compacted to (0: not yet).
	Revision int64
}

// CompactionReporter is implemented by backends that report CompactionStats (etcd).
type CompactionReporter interface {
	CompactionStats() CompactionStats
}
