package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server is the opt-in HTTP listener of brook.metrics.listener.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Listen binds addr (HOST:PORT; port 0 picks one) for h.
func Listen(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener %s: %w", addr, err)
	}
	return &Server{ln: ln, srv: &http.Server{
		Handler: h,
		// Limits for a listener anyone on the network may reach: a slow
		// client cannot hold a connection open forever. WriteTimeout stays
		// above pprof's 30 s default profile.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
	}}, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until Shutdown.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics listener: %w", err)
	}
	return nil
}

// Shutdown stops accepting and waits for scrapes in progress until ctx
// ends, then closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	return err
}

// Close closes the server at once, served or not. The server is closed
// before its listener so that a Serve running sees ErrServerClosed rather
// than an accept error.
func (s *Server) Close() error {
	s.srv.Close()
	return s.ln.Close()
}
