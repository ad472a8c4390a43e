package server

import (
	_ "embed"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	v1reflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1"
	v1alphareflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// apiDescriptors is the API's .proto file as `buf build --exclude-imports` writes it (make
// generate), comments included. The descriptors protoc-gen-go embeds in the generated code
// carry no source info, so reflection served from them shows no comments: with this one,
// `grpcurl describe` shows the API's documentation.
//
//go:embed apidescriptors.binpb
var apiDescriptors []byte

// registerReflection registers the reflection services (v1 and v1alpha) on s, answering for
// the API's file from apiDescriptors and for everything else (health, reflection itself, the
// well-known types) from the generated code.
func registerReflection(s *grpc.Server) error {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(apiDescriptors, &set); err != nil {
		return fmt.Errorf("reflection: decode the API descriptors: %w", err)
	}
	api := new(protoregistry.Files)
	for _, fdp := range set.GetFile() {
		fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
		if err != nil {
			return fmt.Errorf("reflection: API descriptor %s: %w", fdp.GetName(), err)
		}
		if err := api.RegisterFile(fd); err != nil {
			return fmt.Errorf("reflection: API descriptor %s: %w", fdp.GetName(), err)
		}
	}
	opts := reflection.ServerOptions{Services: s, DescriptorResolver: apiFirst{api}, ExtensionResolver: protoregistry.GlobalTypes}
	v1reflectiongrpc.RegisterServerReflectionServer(s, reflection.NewServerV1(opts))
	v1alphareflectiongrpc.RegisterServerReflectionServer(s, reflection.NewServer(opts))
	return nil
}

// apiFirst resolves from the API's own descriptors, then from the generated code's.
type apiFirst struct{ api *protoregistry.Files }

func (r apiFirst) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	if fd, err := r.api.FindFileByPath(path); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(path)
}

func (r apiFirst) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d, err := r.api.FindDescriptorByName(name); err == nil {
		return d, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(name)
}
