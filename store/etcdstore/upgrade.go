package etcdstore

import (
	"context"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// Records of the formats older releases wrote (JSON 1 and 2, binary 3) are rewritten in the
// current one once per prefix, by the first store that opens it (New): from then on nothing on
// the request path reads an older format, and codec.Unmarshal refuses one. Each rewrite is a
// Put guarded by the ModRevision the record was read at, so replicas opening the prefix at
// once, or one already serving it, never overwrite each other's writes: a record that changed
// meanwhile is looked at again, and what a replica of this release wrote is current already.
// Once every record is current the store writes recordFormatKey, and a store that finds it
// there does not look at the records again. A record no release wrote (no reader knows its
// format) is left as it is: reading that target fails, naming the format, as it did before,
// and the others are served.
//
// Replicas of a release that writes an older format (schema version 1 or 2) must be stopped
// before a replica of this one opens their prefix: they do not look at the schema version again
// while they run, and what they write afterwards stays unreadable here.

// upgradeTxnBytes bounds the bytes of the records one Txn of the migration rewrites: etcd
// refuses requests over its --max-request-bytes, 1.5 MiB by default.
const upgradeTxnBytes = 512 << 10

// upgradeRecords rewrites every record under the prefix that is of an older format, unless
// recordFormatKey says it was done, and then says so there.
func (s *Store) upgradeRecords(ctx context.Context) error {
	resp, err := call(ctx, s, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return s.kv.Get(ctx, s.keys.recordFormat)
	})
	if err != nil {
		return err
	}
	if kv := firstKV(resp.Kvs); kv != nil && string(kv.Value) == recordFormat {
		return nil
	}
	from, end := s.keys.targets, clientv3.GetPrefixRangeEnd(s.keys.targets)
	for {
		page, err := call(ctx, s, func(ctx context.Context) (*clientv3.GetResponse, error) {
			return s.kv.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(gcBatch))
		})
		if err != nil {
			return err
		}
		if err := s.upgrade(ctx, page.Kvs); err != nil {
			return err
		}
		if !page.More || len(page.Kvs) == 0 {
			break
		}
		from = string(page.Kvs[len(page.Kvs)-1].Key) + "\x00"
	}
	_, err = call(ctx, s, func(ctx context.Context) (*clientv3.PutResponse, error) {
		return s.kv.Put(ctx, s.keys.recordFormat, recordFormat)
	})
	return err
}

// upgrade rewrites those of kvs that are of an older format, in Txns of guarded Puts. A record
// that changed since it was read comes back in the Txn's answer and is looked at again.
func (s *Store) upgrade(ctx context.Context, kvs []*mvccpb.KeyValue) error {
	for len(kvs) > 0 {
		var ops []clientv3.Op
		size, next := 0, len(kvs)
		for i, kv := range kvs {
			current, upgraded, err := codec.Upgrade(kv.Value)
			if err != nil || !upgraded {
				continue // current already, or a format no release wrote: left as it is
			}
			if len(ops) == gcTxnOps || (len(ops) > 0 && size+len(current) > upgradeTxnBytes) {
				next = i
				break
			}
			k := string(kv.Key)
			ops = append(ops, clientv3.OpTxn(
				[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)},
				[]clientv3.Op{clientv3.OpPut(k, string(current))},
				[]clientv3.Op{clientv3.OpGet(k)}))
			size += len(current)
		}
		kvs = kvs[next:]
		if len(ops) == 0 {
			continue
		}
		txn, err := call(ctx, s, func(ctx context.Context) (*clientv3.TxnResponse, error) {
			return s.kv.Txn(ctx).Then(ops...).Commit()
		})
		if err != nil {
			return err
		}
		for _, r := range txn.Responses {
			if sub := r.GetResponseTxn(); !sub.GetSucceeded() {
				if kv := firstKV(sub.GetResponses()[0].GetResponseRange().GetKvs()); kv != nil {
					kvs = append(kvs, kv) // changed meanwhile (deleted: nothing to do)
				}
			}
		}
	}
	return nil
}
