// The grpc-go helloworld Greeter, RouteGuide.ListFeatures as a server stream of fixed
// length, and RouteGuide.RouteChat as an echo of each note, for bench/grpc.py.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	pb "google.golang.org/grpc/examples/helloworld/helloworld"
	rg "google.golang.org/grpc/examples/route_guide/routeguide"
)

type server struct {
	pb.UnimplementedGreeterServer
}

func (s *server) SayHello(_ context.Context, in *pb.HelloRequest) (*pb.HelloReply, error) {
	return &pb.HelloReply{Message: "Hello " + in.GetName()}, nil
}

// guide answers RouteGuide.ListFeatures with as many features as the rectangle's lo latitude
// says (10 when it says none): a server stream of fixed length.
type guide struct {
	rg.UnimplementedRouteGuideServer
}

func (g *guide) ListFeatures(r *rg.Rectangle, s rg.RouteGuide_ListFeaturesServer) error {
	n := int(r.GetLo().GetLatitude())
	if n <= 0 {
		n = 10
	}
	for i := 0; i < n; i++ {
		f := &rg.Feature{Name: "feature", Location: &rg.Point{Latitude: int32(i)}}
		if err := s.Send(f); err != nil {
			return err
		}
	}
	return nil
}

// RouteChat echoes each note as it comes: a bidirectional call answered message by message.
func (g *guide) RouteChat(s rg.RouteGuide_RouteChatServer) error {
	for {
		n, err := s.Recv()
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if err := s.Send(n); err != nil {
			return err
		}
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %d\n", lis.Addr().(*net.TCPAddr).Port)
	s := grpc.NewServer()
	pb.RegisterGreeterServer(s, &server{})
	rg.RegisterRouteGuideServer(s, &guide{})
	reflection.Register(s)
	s.Serve(lis)
}
