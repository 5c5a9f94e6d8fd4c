package mock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// closeBound is how long Close lets in-flight requests finish before it cuts
// their connections.
const closeBound = time.Second

// Server is a mock provider listening on loopback, as started by [Start].
// Its handler runs in goroutines of its own until [Server.Close] is called.
type Server struct {
	URL     string   // base URL ending in /v1, e.g. "http://127.0.0.1:41234/v1"
	Handler *Handler // the handler served, for its Stats

	srv  *http.Server
	done chan struct{} // closed when Serve has returned
	err  error         // Serve's error, other than http.ErrServerClosed; read after done
}

// Start listens on 127.0.0.1 on a port of the system's choosing and serves
// New(cfg) in a goroutine. The caller must call Close.
func Start(cfg Config) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mock: listen: %w", err)
	}
	h := New(cfg)
	s := &Server{
		URL:     "http://" + ln.Addr().String() + "/v1",
		Handler: h,
		srv:     &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		done:    make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
	return s, nil
}

// Close stops the server: it stops accepting connections, gives requests in
// flight up to a second to finish (a long Latency may not), then closes every
// connection, which cancels the requests still waiting. It returns once the
// serving goroutine has ended. Calling Close again is harmless.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeBound)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		// Requests outlived the bound: not an error of the caller's.
		_ = s.srv.Close()
	}
	<-s.done
	if s.err != nil {
		return fmt.Errorf("mock: serve: %w", s.err)
	}
	return nil
}
