package server

import (
	"errors"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// codec is grpc-go's default proto codec but for one thing: a request it cannot decode is not
// failed here. grpc-go answers any codec error with Internal, which tells the caller the server
// is at fault; instead the codec leaves the message empty but for a mark (markUndecodable) that
// rejectUndecodable finds and answers InvalidArgument. Decoding is protobuf-go's, which checks
// that string fields are UTF-8.
//
// It is installed with grpc.ForceServerCodecV2, not registered globally, so clients and other
// servers in the same process keep grpc-go's default.
type codec struct{ encoding.CodecV2 }

func newCodec() codec { return codec{encoding.GetCodecV2("proto")} }

// Unmarshal decodes data into v; a request it cannot decode is left empty with the mark of
// markUndecodable, and no error.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
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
