// An HTTP/2 server with prior knowledge (h2c) made of Go's net/http alone, for
// crates/barrage/tests/it/h2.rs: a third-party HTTP/2 implementation that barrage's client
// uploads bodies to. It counts what it received and says it on /stats, so a test asserts
// exact byte counts. Built by .ci/install into bin/h2c-upload (go build -o bin/h2c-upload .).
//
//	h2c-upload [-window N]   listen on 127.0.0.1 with a free port, print "listening PORT";
//	                         N: the receive window per stream and per connection (Go's
//	                         default, 1 MiB, when not given)
//
// POST (any path but /stats): the body is read to its end and counted, the reply is 200 with
// the count as text (400 if the body's length differs from its content-length).
// GET /stats: "requests R bytes B connections C short S" (S: bodies that were not whole),
// over HTTP/1.x too (each /stats call is a connection of its own).
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
)

func main() {
	window := flag.Int("window", 0, "receive window per stream and connection, bytes")
	flag.Parse()
	var requests, bytes, conns, short atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "requests %d bytes %d connections %d short %d\n",
			requests.Load(), bytes.Load(), conns.Load(), short.Load())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		requests.Add(1)
		bytes.Add(n)
		if err != nil || (r.ContentLength >= 0 && n != r.ContentLength) {
			short.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("content-type", "text/plain")
		io.WriteString(w, strconv.FormatInt(n, 10))
	})
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true) // prior knowledge: barrage's h2c
	protocols.SetHTTP1(true)            // the tests' /stats over HTTP/1.0
	srv := &http.Server{
		Handler:   mux,
		Protocols: &protocols,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	if *window > 0 {
		srv.HTTP2 = &http.HTTP2Config{
			MaxReceiveBufferPerConnection: *window,
			MaxReceiveBufferPerStream:     *window,
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening %d\n", l.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	if err := srv.Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
