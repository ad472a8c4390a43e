package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The key layout under Config.Prefix (normalized to end with "/"), version 3:
//
//	<prefix>meta/schema_version   -> decimal ASCII, "3"
//	<prefix>meta/record_format    -> decimal ASCII, "4": every record below is of format 4
//	                                 (written once upgrade.go has rewritten the older ones)
//	<prefix>targets/<codec key>   -> codec record (its own format; no revision,
//	                                 Target.Revision is the key's etcd ModRevision)
//	<prefix>decisions/<codec decision key> -> a retired decision log entry
//	                                 (codec.EncodeDecisionKey, codec.MarshalDecision)
//
// decisions/ came with a later release of version 3, without a version bump: a release that
// does not know it ignores it (and drops the logs' recent entries when it rewrites a record).
//
// codec.EncodeKey keeps (cluster, namespace, name) order in byte order, so a range read over
// targets/ lists in order and a cluster or namespace filter is a key prefix.
//
// Versions: 1 holds records of record version 1 only. 2 holds records of version 2, which
// binaries of schema version 1 cannot read, and of version 1 not rewritten since (this binary
// reads both). 3 writes records of format 4 (protobuf, generated: store/proto), which binaries
// of schema version 2 cannot read, so replicas sharing a prefix are upgraded together: an older
// replica still running fails on every record a newer one wrote. The layout is the same in
// all, and upgradeSchema upgrades an older prefix by its version alone; the records of older
// formats a prefix still holds are rewritten once, at New (upgrade.go), and
// meta/record_format says when that is done. (It is a key of its own, not a schema version,
// because releases of schema version 3 that read older formats also write format 4 only:
// they may still open the prefix afterwards.)
//
// Bump SchemaVersion when an older binary could no longer read what this one writes, and
// teach checkSchema to upgrade older layouts.
const SchemaVersion = 3

const (
	schemaVersionKey = "meta/schema_version"
	recordFormatKey  = "meta/record_format"
	targetsDir       = "targets/"
	decisionsDir     = "decisions/"
	// recordFormat is recordFormatKey's value: the one format the codec reads.
	recordFormat = "4"
)

// ErrUnsupportedSchema is returned by New for a prefix whose layout this binary cannot use:
// written by a newer binary, or holding keys that are not an hpa-recommender store.
var ErrUnsupportedSchema = errors.New("unsupported etcd store schema")

// keys holds the absolute keys of one store.
type keys struct {
	prefix       string // ends with "/"
	version      string
	recordFormat string
	targets      string // ends with "/"
	decisions    string // ends with "/"
}

func newKeys(prefix string) keys {
	return keys{prefix: prefix, version: prefix + schemaVersionKey, recordFormat: prefix + recordFormatKey,
		targets: prefix + targetsDir, decisions: prefix + decisionsDir}
}

func (k keys) target(encoded []byte) string { return k.targets + string(encoded) }

// decisionsOf is the prefix of the retired decisions of the target whose encoded key is encoded.
func (k keys) decisionsOf(encoded []byte) string { return k.decisions + string(encoded) }

// checkSchema writes the schema version under an empty prefix, or checks the one found. Several
// replicas may start at once: each step is a Txn conditional on the version being absent, so
// whoever loses the race reads what the winner wrote (and never mistakes the winner's keys
// for someone else's).
func (s *Store) checkSchema(ctx context.Context) error {
	absent := clientv3.Compare(clientv3.CreateRevision(s.keys.version), "=", 0)
	probe, err := s.kv.Txn(ctx).
		If(absent).
		Then(clientv3.OpGet(s.keys.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())).
		Else(clientv3.OpGet(s.keys.version)).
		Commit()
	if err != nil {
		return err
	}
	get := probe.Responses[0].GetResponseRange()
	if probe.Succeeded {
		// No version: refuse to adopt a prefix that already holds someone else's keys.
		if get.Count > 0 {
			return fmt.Errorf("prefix %q holds %d keys but no %q, it is not an hpa-recommender store: %w",
				s.keys.prefix, get.Count, schemaVersionKey, ErrUnsupportedSchema)
		}
		create, err := s.kv.Txn(ctx).
			If(absent).
			Then(clientv3.OpPut(s.keys.version, strconv.Itoa(SchemaVersion))).
			Else(clientv3.OpGet(s.keys.version)).
			Commit()
		if err != nil {
			return err
		}
		if create.Succeeded {
			return nil
		}
		get = create.Responses[0].GetResponseRange()
	}
	if len(get.Kvs) == 0 {
		return fmt.Errorf("schema version %q vanished while opening: %w", s.keys.version, ErrUnsupportedSchema)
	}
	raw := get.Kvs[0].Value
	v, err := strconv.Atoi(string(raw))
	switch {
	case err != nil || v < 1:
		return fmt.Errorf("corrupt schema version %q at %q: %w", raw, s.keys.version, ErrUnsupportedSchema)
	case v > SchemaVersion:
		return fmt.Errorf("schema version %d at %q was written by a newer binary (this one supports up to %d); upgrade hpa-recommender: %w",
			v, s.keys.version, SchemaVersion, ErrUnsupportedSchema)
	case v < SchemaVersion:
		return s.upgradeSchema(ctx, raw)
	}
	return nil
}

// upgradeSchema upgrades a prefix of the older schema version old. From version 1 that is the
// version alone: its records stay as they are until they are rewritten, and a binary that could
// not read what this one writes then refuses the prefix at New instead of failing on every
// record rewritten since. Replicas may upgrade at once: the write is conditional on the version
// read, and whoever loses checks again what the winner wrote.
func (s *Store) upgradeSchema(ctx context.Context, old []byte) error {
	up, err := s.kv.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(s.keys.version), "=", string(old))).
		Then(clientv3.OpPut(s.keys.version, strconv.Itoa(SchemaVersion))).
		Commit()
	if err != nil {
		return fmt.Errorf("upgrade schema version %q at %q to %d: %w", old, s.keys.version, SchemaVersion, err)
	}
	if !up.Succeeded {
		return s.checkSchema(ctx)
	}
	return nil
}
