package rxstamp

import (
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Conn is a TCP connection whose reads also take the kernel's receive
// timestamp (SO_TIMESTAMPNS): the time the last byte a read returns
// reached the socket, before any wait for a CPU in this process. Like a
// net.Conn, it is read by one goroutine at a time.
type Conn struct {
	*net.TCPConn
	raw     syscall.RawConn
	oob     []byte
	last    time.Time     // arrival of the bytes the last read returned
	stamped bool          // the kernel timestamped the last read
	offset  time.Duration // the wall clock's lead on the monotonic at the last read

	// The read in progress, for recv, which is a method value made once so
	// that a read allocates nothing.
	p      []byte
	n      int
	err    error
	recvFn func(fd uintptr) bool
	// recvmsg's arguments, kept here so that a read allocates nothing
	// (x/sys/unix's Recvmsg moves its own to the heap).
	iov unix.Iovec
	msg unix.Msghdr
}

// MaxLag bounds how far before the read a kernel timestamp may be and
// still be believed; beyond it (a wall-clock step, say) the read's own
// time is used.
const MaxLag = 10 * time.Second

// epoch anchors WallOffset.
var epoch = time.Now()

// New turns on receive timestamps for c, a TCP connection, and returns it
// wrapped to read them. Where that is not possible (c is not TCP, the
// kernel refuses) it returns nil and false.
func New(c net.Conn) (*Conn, bool) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, false
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, false
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	})
	if err != nil || serr != nil {
		return nil, false
	}
	s := &Conn{TCPConn: tc, raw: raw, oob: make([]byte, 64), offset: WallOffset(time.Now())}
	s.recvFn = s.recv
	return s, true
}

// Read reads like the TCP connection's Read and notes when the bytes it
// returns arrived (see LastArrival).
func (s *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.p, s.n, s.err = p, 0, nil
	err := s.raw.Read(s.recvFn)
	s.p = nil
	switch {
	case err != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: err}
	case s.err != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: s.err}
	case s.n == 0:
		return 0, io.EOF
	}
	return s.n, nil
}

// recv is one recvmsg on the socket; false asks to wait until it is
// readable.
func (s *Conn) recv(fd uintptr) bool {
	s.iov = unix.Iovec{Base: &s.p[0]}
	s.iov.SetLen(len(s.p))
	s.msg = unix.Msghdr{Iov: &s.iov, Iovlen: 1, Control: &s.oob[0]}
	s.msg.SetControllen(len(s.oob))
	defer func() { s.iov.Base = nil }() // the caller's buffer is not the connection's to keep
	for {
		r, _, e := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&s.msg)), 0)
		switch e {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			s.err = os.NewSyscallError("recvmsg", e)
			return true
		}
		n, oobn := int(r), int(s.msg.Controllen)
		s.n = n
		now := time.Now()
		at := now
		k, ok := Timestamp(s.oob[:oobn])
		s.stamped = ok
		offset := WallOffset(now)
		if ok {
			at = ArrivalAt(now, k, offset-s.offset)
		}
		s.offset = offset
		if at.Before(s.last) {
			at = s.last // arrivals on one connection never go back
		}
		s.last = at
		return true
	}
}

// LastArrival returns when the last byte the last Read returned reached
// the socket, on the monotonic clock; the Read's own time where the kernel
// gave no timestamp (see Stamped). Arrivals on one connection never go
// back.
func (s *Conn) LastArrival() time.Time { return s.last }

// Stamped reports whether the kernel timestamped the last Read's bytes.
// It turns timestamps on for every socket a moment after the first asks:
// bytes that came before are not stamped.
func (s *Conn) Stamped() bool { return s.stamped }

// Raw returns the connection's raw socket, for a reader of its own.
func (s *Conn) Raw() syscall.RawConn { return s.raw }

// Offset returns WallOffset as it was at the last Read, for a reader that
// goes on from it and must see a step of the clock since.
func (s *Conn) Offset() time.Duration { return s.offset }

// WallOffset returns how far the wall clock has moved from the monotonic
// clock since epoch: it changes only when the system clock is stepped (a
// virtual machine resumed, the time synchronised), as slewing moves both.
func WallOffset(now time.Time) time.Duration {
	return time.Duration(now.UnixNano()-epoch.UnixNano()) - now.Sub(epoch)
}

// ArrivalAt returns when bytes stamped k by the kernel, on the wall clock,
// arrived, as a time on now's monotonic clock. step is how far the wall
// clock was stepped since the connection's previous read: the stamp may
// have been taken before the step, so a step forward is taken off the lag,
// and a step back left in it (either way the arrival may come out later
// than it was, by the step, never earlier). A lag below zero or above
// MaxLag is not believed, and the read's own time is used.
func ArrivalAt(now, k time.Time, step time.Duration) time.Time {
	lag := now.Sub(k) // k has no monotonic reading: this is the wall clock's
	if step > 0 {
		lag -= step
	}
	if lag < 0 || lag >= MaxLag {
		return now
	}
	return now.Add(-lag)
}

// Timestamp finds the SCM_TIMESTAMPNS message in a recvmsg's control
// data.
func Timestamp(b []byte) (time.Time, bool) {
	for len(b) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(b) {
			return time.Time{}, false
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= unix.CmsgLen(int(unsafe.Sizeof(unix.Timespec{}))) {
			ts := (*unix.Timespec)(unsafe.Pointer(&b[unix.CmsgLen(0)]))
			return time.Unix(int64(ts.Sec), int64(ts.Nsec)), true
		}
		b = b[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(b)):]
	}
	return time.Time{}, false
}
