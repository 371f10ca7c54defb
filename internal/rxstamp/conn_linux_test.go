package rxstamp

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// loopbackPair returns both ends of a loopback TCP connection, the client's
// with receive timestamps.
func loopbackPair(t *testing.T) (client *Conn, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	client, ok := New(c)
	if !ok {
		c.Close()
		server.Close()
		t.Skip("this kernel refuses SO_TIMESTAMPNS on TCP sockets")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestReceiveTimestampIsTheArrival reads bytes 100 ms after they arrived:
// their arrival time is when they came, not when they were read.
//
// On loopback the kernel stamps the bytes inside the server's write call,
// so the arrival is bracketed by the clock read before the write and the
// one after it, not compared with the latter alone: on a busy machine the
// writer can wait milliseconds for a CPU between its write and its next
// clock read, and the arrival then comes that long "before the write".
func TestReceiveTimestampIsTheArrival(t *testing.T) {
	client, server := loopbackPair(t)
	// The kernel turns receive timestamps on for everyone a moment after
	// the first socket asks: bytes that came before were never stamped.
	for deadline := time.Now().Add(5 * time.Second); ; {
		server.Write([]byte("warm-up"))
		if _, err := io.ReadFull(client, make([]byte, len("warm-up"))); err != nil {
			t.Fatal(err)
		}
		if client.Stamped() {
			break
		}
		if time.Now().After(deadline) {
			t.Skip("this kernel does not timestamp TCP reads")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 3 {
		writing := time.Now()
		stepFrom := WallOffset(writing)
		if _, err := server.Write([]byte("data: x\n\n")); err != nil {
			t.Fatal(err)
		}
		written := time.Now()
		time.Sleep(100 * time.Millisecond) // a client busy elsewhere
		buf := make([]byte, 64)
		n, err := client.Read(buf)
		read := time.Now()
		if err != nil || string(buf[:n]) != "data: x\n\n" {
			t.Fatalf("read %d: %q, %v", i, buf[:n], err)
		}
		at := client.LastArrival()
		if at.Before(writing) || at.After(written.Add(20*time.Millisecond)) {
			t.Errorf("read %d: arrival %v after the write began, which took %v; want during the write, or within 20 ms of its end (the system clock was stepped by %v meanwhile)",
				i, at.Sub(writing), written.Sub(writing), WallOffset(read)-stepFrom)
		}
		if wait := read.Sub(at); wait < 90*time.Millisecond {
			t.Errorf("read %d: read %v after the arrival, want about 100 ms: the stamp is the read's, not the kernel's", i, wait)
		}
	}
}

func TestConnEndsLikeAConn(t *testing.T) {
	t.Run("EOF", func(t *testing.T) {
		client, server := loopbackPair(t)
		server.Write([]byte("ab"))
		server.Close()
		got, err := io.ReadAll(client)
		if err != nil || string(got) != "ab" {
			t.Fatalf("got %q, %v; want \"ab\" and EOF", got, err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		client, _ := loopbackPair(t)
		client.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := client.Read(make([]byte, 8))
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read past the deadline: %v", err)
		}
	})
	t.Run("closed while reading", func(t *testing.T) {
		client, _ := loopbackPair(t)
		done := make(chan error, 1)
		go func() {
			_, err := client.Read(make([]byte, 8))
			done <- err
		}()
		for deadline := time.Now().Add(5 * time.Second); !readBlocked() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		client.Close()
		select {
		case err := <-done:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("read on a closed connection: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not end the blocked Read")
		}
	})
}

// TestRxTimestamp reads a timestamp that follows another control message,
// and refuses control data that is empty, zero or cut short.
func TestRxTimestamp(t *testing.T) {
	want := time.Unix(1764000000, 123456789)
	b := make([]byte, 64)
	first := syscall.CmsgSpace(4)
	rights := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
	rights.Level, rights.Type = syscall.SOL_SOCKET, syscall.SCM_RIGHTS
	rights.SetLen(syscall.CmsgLen(4))
	size := int(unsafe.Sizeof(syscall.Timespec{}))
	stamp := (*syscall.Cmsghdr)(unsafe.Pointer(&b[first]))
	stamp.Level, stamp.Type = syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS
	stamp.SetLen(syscall.CmsgLen(size))
	*(*syscall.Timespec)(unsafe.Pointer(&b[first+syscall.CmsgLen(0)])) = syscall.NsecToTimespec(want.UnixNano())
	end := first + syscall.CmsgSpace(size)

	if got, ok := Timestamp(b[:end]); !ok || !got.Equal(want) {
		t.Errorf("Timestamp = %v, %v; want %v", got, ok, want)
	}
	for _, short := range [][]byte{nil, make([]byte, 4), make([]byte, 64), b[:first], b[:end-8]} {
		if got, ok := Timestamp(short); ok {
			t.Errorf("found %v in %d bytes that hold no whole timestamp", got, len(short))
		}
	}
}

// A kernel stamp is on the wall clock; a step of the system clock between
// the bytes' arrival and the read would move the arrival by the step. The
// step seen since the connection's previous read is taken off a lag it
// lengthened, and never makes an arrival earlier than it was.
func TestArrivalAcrossAClockStep(t *testing.T) {
	now := time.Now()
	const lag = 2 * time.Millisecond
	for _, c := range []struct {
		name string
		k    time.Time     // the stamp, on the wall clock
		step time.Duration // the step seen since the previous read
		want time.Duration // the arrival, before now
	}{
		{"no step", now.Add(-lag), 0, lag},
		// Stamped 2 ms before the read, on the wall clock before it jumped
		// forward by 480 µs: the wall clock's lag is 2.48 ms.
		{"forward after the arrival", now.Add(-lag - 480*time.Microsecond), 480 * time.Microsecond, lag},
		// The jump came before the arrival: the lag is the wall clock's,
		// and taking the step off makes the arrival later, by the step.
		{"forward before the arrival", now.Add(-lag), 480 * time.Microsecond, lag - 480*time.Microsecond},
		// A jump of a minute forward after the arrival.
		{"a minute forward", now.Add(-lag - time.Minute), time.Minute, lag},
		// Stepped back by 78 s after the arrival: the stamp is after the
		// read, which is not believed; the read's own time stands.
		{"back after the arrival", now.Add(-lag + 78*time.Second), -78 * time.Second, 0},
		// Stepped back by 300 µs before the arrival: the wall clock's lag
		// stands (the step may as well have come after, making it later).
		{"back before the arrival", now.Add(-lag), -300 * time.Microsecond, lag},
		{"too old to believe", now.Add(-MaxLag), 0, 0},
	} {
		if d := WallOffset(epoch); d != 0 {
			t.Fatalf("WallOffset(epoch) = %v, want 0", d)
		}
		t.Run(c.name, func(t *testing.T) {
			at := ArrivalAt(now, c.k, c.step)
			if got := now.Sub(at); got != c.want {
				t.Errorf("arrival %v before the read, want %v", got, c.want)
			}
		})
	}
}

// readBlocked reports whether a goroutine waits for the network in a
// stampedConn's Read.
func readBlocked() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "[IO wait") && strings.Contains(g, "(*stampedConn).Read") {
			return true
		}
	}
	return false
}

// TestStampedReadAllocatesNothing: a timestamped read is one recvmsg whose
// arguments live in the connection, not on the heap.
func TestStampedReadAllocatesNothing(t *testing.T) {
	client, server := loopbackPair(t)
	buf := make([]byte, 64)
	msg := []byte("data: x\n\n")
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := server.Write(msg); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < len(msg); {
			n, err := client.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations a write and its read", allocs)
	}
}
