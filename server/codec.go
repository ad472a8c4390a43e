package server

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// codec is the server's gRPC codec: grpc-go's default proto codec, except that the API's
// messages are written and read by vtprotobuf's generated MarshalToSizedBufferVT and
// UnmarshalVT (proto/gen, `make generate`), a fraction of protobuf-go's reflective cost (the
// requests' many small maps above all), and that a request that cannot be decoded is not
// failed here. grpc-go answers any codec error with Internal, which tells the caller the
// server is at fault; instead the codec leaves the message empty but for a mark
// (markUndecodable) that rejectUndecodable finds and answers InvalidArgument.
//
// The generated unmarshaller does not check that string fields are UTF-8, as protobuf-go does
// (a string that is not would travel into a response that clients then cannot decode):
// checkUTF8 does, on the same bytes.
//
// A RecommendRequest's pods, containers and samples are recycled (vtprotobuf's generated pools):
// they were most of a call's allocations.
//
// It is installed with grpc.ForceServerCodecV2, not registered globally, so clients and other
// servers in the same process keep grpc-go's default.
type codec struct {
	fallback encoding.CodecV2
	strings  map[protoreflect.FullName]*stringFields // checkUTF8's tables of the API's messages
}

func newCodec() codec {
	c := codec{fallback: encoding.GetCodecV2("proto"), strings: map[protoreflect.FullName]*stringFields{}}
	msgs := pb.File_recommender_v1_recommender_proto.Messages()
	for i := range msgs.Len() {
		utf8Tables(msgs.Get(i), c.strings)
	}
	// A message field is looked into only if its type holds a string somewhere (a pod's
	// timestamps, for one, do not): marked until nothing changes, as message types may nest
	// in cycles.
	for changed := true; changed; {
		changed = false
		for _, t := range c.strings {
			if !t.hasStrings && slices.ContainsFunc(t.byNum, func(f fieldCheck) bool {
				return f.utf8 || f.msg != nil && f.msg.hasStrings
			}) {
				t.hasStrings, changed = true, true
			}
		}
	}
	return c
}

// vtMessage is a message with vtprotobuf's generated marshalling.
type vtMessage interface {
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
}

// Name is the content subtype the codec serves, the default one.
func (codec) Name() string { return "proto" }

// Marshal writes v with its generated marshaller, into a buffer from grpc-go's pool above its
// pooling threshold as the default codec does.
func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(vtMessage)
	if !ok {
		return c.fallback.Marshal(v)
	}
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if _, err := m.MarshalToSizedBufferVT(buf); err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if _, err := m.MarshalToSizedBufferVT(*buf); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// unmarshalRecommend decodes the hottest request, most of a call's allocations otherwise, into
// r with as few as it can: grpc-go hands a new message, which gets the lists of a recycled one
// (its pods, containers and samples are refilled in place; releaseRequest recycles r when the
// call is over), and its strings share b, a copy of the request's bytes that lives as long as
// one of them does. What the server keeps past the call copies the strings it takes from the
// request (the spec cache, the store's key) or encodes them (records); a decoded record the
// bbolt store caches may share a few (an observation's error, a scaleTargetRef) and so keep its
// last request's bytes alive, within its bounded cache.
func (c codec) unmarshalRecommend(b []byte, r *pb.RecommendRequest) {
	spare := pb.RecommendRequestFromVTPool()
	r.Pods, r.Metrics = spare.Pods, spare.Metrics
	c.checked(r, b, r.UnmarshalVTUnsafe(b))
}

// checked finishes decoding m from b, which returned err: the UTF-8 check of its strings, and
// on any error the message emptied and marked (markUndecodable).
func (c codec) checked(m proto.Message, b []byte, err error) {
	if t := c.strings[m.ProtoReflect().Descriptor().FullName()]; err == nil && t != nil {
		err = checkUTF8(b, t)
	}
	if err != nil {
		proto.Reset(m)
		markUndecodable(m, err)
	}
}

// releaseRequest recycles a RecommendRequest's messages once its call is over (see
// Unmarshal): nothing may keep the request, or anything reached through it, past the handler.
// The domain values converted from it share only its strings, which recycling does not change.
//
// Each pod's and container's requests map is kept, emptied, with its message: the generated
// decoder fills a map it finds instead of making one, and those maps were the largest part
// of what decoding a request allocated (a map and its first group per container). The
// generated reset would drop them, so the pods are reset here (resetPod) and the request's
// own reset, given no pods, keeps their list as it is.
func releaseRequest(req any) {
	r, ok := req.(*pb.RecommendRequest)
	if !ok {
		return
	}
	for _, p := range r.Pods {
		resetPod(p)
	}
	r.Pods = r.Pods[:0]
	r.ReturnToVTPool()
}

// resetPod is p.ResetVT() but for the requests maps of p and its containers, which it empties
// and keeps. A map found empty decodes as no requests, as a missing one does.
func resetPod(p *pb.PodState) {
	for _, c := range p.Containers {
		m := c.Requests
		c.ResetVT()
		c.Requests = emptied(m)
	}
	for _, c := range p.InitContainers {
		m := c.Requests
		c.ResetVT()
		c.Requests = emptied(m)
	}
	cs, ics, m := p.Containers[:0], p.InitContainers[:0], p.Requests
	p.Containers, p.InitContainers = nil, nil // already reset: p.ResetVT would drop their maps
	p.ResetVT()
	p.Containers, p.InitContainers, p.Requests = cs, ics, emptied(m)
}

// emptied clears m and returns it.
func emptied(m map[string]string) map[string]string {
	clear(m)
	return m
}

// vtRequest is a message with vtprotobuf's generated unmarshaller.
type vtRequest interface {
	proto.Message
	UnmarshalVT([]byte) error
}

// Unmarshal decodes data into v with its generated unmarshaller; a request it cannot decode is
// left empty with the mark of markUndecodable, and no error.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(vtRequest)
	if !ok {
		return c.fallback.Unmarshal(data, v)
	}
	if r, ok := m.(*pb.RecommendRequest); ok {
		c.unmarshalRecommend(data.Materialize(), r)
		return nil
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free() // UnmarshalVT copies what it keeps
	b := buf.ReadOnlyData()
	c.checked(m, b, m.UnmarshalVT(b))
	return nil
}

// stringFields says, for one message type, which of its fields checkUTF8 looks into: by field
// number, a string (utf8 true) or a message holding strings (msg set). Built once per codec
// from the descriptors (utf8Tables), so the check looks nothing up by name or number.
type stringFields struct {
	name       protoreflect.FullName
	byNum      []fieldCheck
	hasStrings bool // a string field, in this message or one it holds
}

type fieldCheck struct {
	utf8 bool
	msg  *stringFields
}

// utf8Tables builds the stringFields of md and of every message reachable from it, by name.
func utf8Tables(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]*stringFields) *stringFields {
	if t, ok := seen[md.FullName()]; ok {
		return t
	}
	t := &stringFields{name: md.FullName()}
	seen[md.FullName()] = t
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		var c fieldCheck
		switch fd.Kind() {
		case protoreflect.StringKind:
			c.utf8 = true
		case protoreflect.MessageKind: // a map's entries too
			c.msg = utf8Tables(fd.Message(), seen)
		default:
			continue
		}
		if n := int(fd.Number()); n >= len(t.byNum) {
			t.byNum = append(t.byNum, make([]fieldCheck, n+1-len(t.byNum))...)
		}
		t.byNum[fd.Number()] = c
	}
	return t
}

// checkUTF8 returns an error naming the first string field in b, a message of t's type in the
// wire format (nested messages, lists and maps included), that is not valid UTF-8, as
// protobuf-go's decoding would. It reads the bytes, allocating nothing: walking the decoded
// message by reflection cost as much as decoding it.
func checkUTF8(b []byte, t *stringFields) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if int(num) >= len(t.byNum) {
			continue // unknown: kept as bytes
		}
		switch c := t.byNum[num]; {
		case c.utf8 && !utf8.Valid(v):
			return fmt.Errorf("string field %s.%d contains invalid UTF-8", t.name, num)
		case c.msg != nil && c.msg.hasStrings:
			if err := checkUTF8(v, c.msg); err != nil {
				return err
			}
		}
	}
	return nil
}

// undecodableField is the field number of the mark: the largest there is, which the API will
// never use.
const undecodableField protowire.Number = protowire.MaxValidNumber

// markUndecodable keeps the decoding error in m's unknown fields, as the field
// undecodableField: state of the message itself, which dies with it.
func markUndecodable(m proto.Message, err error) {
	b := protowire.AppendTag(nil, undecodableField, protowire.BytesType)
	b = protowire.AppendString(b, err.Error())
	m.ProtoReflect().SetUnknown(b)
}

// decodeError returns the error markUndecodable kept in m, if any. A request whose bytes carry
// that field themselves is refused the same way: the API has no such field.
func decodeError(m proto.Message) error {
	b := m.ProtoReflect().GetUnknown()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if num == undecodableField && typ == protowire.BytesType {
			v, _ := protowire.ConsumeString(b)
			return errors.New(v)
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil
		}
		b = b[n:]
	}
	return nil
}
