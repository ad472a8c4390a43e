package server

import (
	"errors"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// codec is the server's gRPC codec: grpc-go's default proto codec, except that responses are
// written by vtprotobuf's generated MarshalToSizedBufferVT (proto/gen, `make generate`), which
// takes a fraction of protobuf-go's reflective encoding, and that a request that cannot be
// decoded is not failed here. grpc-go answers any codec error with Internal, which tells the
// caller the server is at fault; instead the codec leaves the message empty but for a mark
// (markUndecodable) that rejectUndecodable finds and answers InvalidArgument.
//
// Requests are decoded by protobuf-go, whose errors and UTF-8 checks of string fields the
// generated unmarshaller lacks (a string that is not UTF-8 would otherwise travel into a
// response that clients then cannot decode).
//
// It is installed with grpc.ForceServerCodecV2, not registered globally, so clients and other
// servers in the same process keep grpc-go's default.
type codec struct{ fallback encoding.CodecV2 }

func newCodec() codec { return codec{fallback: encoding.GetCodecV2("proto")} }

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

// Unmarshal decodes data into v as the default codec does; a request it cannot decode is
// left empty with the mark of markUndecodable, and no error.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.fallback.Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if err == nil || !ok {
		return err
	}
	proto.Reset(m)
	markUndecodable(m, err)
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
