package loadgen

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/llmload/llmload/internal/rxstamp"
	"github.com/llmload/llmload/loadgen/internal/bodyframe"
	"github.com/llmload/llmload/loadgen/internal/sse"
)

// A poller reads many response bodies on one goroutine: their sockets are
// registered with one epoll instance (level-triggered), and for each socket
// that is readable the poller makes one recvmsg, with the kernel's receive
// timestamp, straight into the stream's SSE buffer, then frames and handles
// the events it completes there, tokens recorded and all, before it turns
// to the next. It reads a socket again in the same wake only when the
// kernel said, with that read (TCP_INQ), that bytes are left behind it (the
// read filled the stream's buffer), so no read finds it empty, and a
// stream that fell behind is read to its end at once, not after every
// other ready socket's turn. A stream thus costs one system call a chunk,
// plus its share of the waits for all the sockets that became readable
// together.
//
// The one exception is a socket whose peer has closed or reset the
// connection (epoll says so with EPOLLRDHUP, EPOLLHUP or EPOLLERR): its
// end, queued behind the bytes a read takes, keeps it readable, but no new
// bytes will come to wake the poller for it (the runtime's poller watches
// the epoll instance edge-triggered), so it is read again at once, and
// that read returns the end (0 bytes, or the reset) rather than nothing.
//
// The poller waits in the Go runtime's own poller, so a waiting poller
// holds no thread or P. The sockets are taken out of the runtime's poller
// (their descriptor duplicated, the net.Conn closed) so that it is not
// woken for each of them as well; a connection that may be reused is made
// a net.Conn again at the end of its body. They are registered with one
// epoll instance (set), which sits in a second (epfd), which the runtime's
// poller watches. Woken, the poller takes set out of epfd, so that the
// sockets that become readable next do not wake the runtime one by one,
// waits a little for them (the gather: a batching server writes a step's
// tokens of every stream within a short time), reads every ready socket,
// and puts set back. So a wake costs the runtime's wait, two epoll_ctl,
// a sleep and a look, for a whole step's sockets rather than the three or
// four that became readable while the last were read.
//
// A StreamTransport has up to one poller per CPU the Go runtime uses (its
// pollGroup). A poller's goroutine runs while it has streams and ends when
// it has none; its epoll instances are closed with the transport's idle
// connections, once it has no streams.
type poller struct {
	g       *pollGroup
	mu      sync.Mutex
	set     int      // the epoll instance the sockets are registered with
	epfd    *os.File // an epoll instance, in the runtime's poller, that holds set while the poller waits on readiness
	rc      syscall.RawConn
	streams map[uint64]*pollStream
	next    uint64
	running bool
	closing bool         // the transport let it go: close set and epfd once it has no streams
	count   atomic.Int64 // len(streams), read without mu

	// Used by the poller's goroutine alone.
	events [256]unix.EpollEvent
	ready  []readyStream
	again  bool  // a read filled its buffer: the socket may hold more
	muted  bool  // set is out of epfd: no socket of it wakes the runtime's poller
	err    error // set back in epfd failed: the poller cannot wait

	// The smallest time between two chunks with tokens of one stream read
	// apart, for the gather: gapNow since gapSince, gapBefore in the
	// second before.
	gapNow, gapBefore time.Duration
	gapSince          time.Time
	plainUntil        time.Time // a gather in the kernel woke late: none there before then
}

// readyStream is a stream epoll reported readable, and how.
type readyStream struct {
	ps     *pollStream
	ending bool // the peer had closed or reset the connection (EPOLLRDHUP, EPOLLHUP, EPOLLERR)
}

// pollEnding are the epoll events that say a socket's end is queued behind
// its bytes.
const pollEnding = unix.EPOLLRDHUP | unix.EPOLLHUP | unix.EPOLLERR

// pollGatherMax bounds the gather: how long a poller, woken for the first
// sockets of a batch, waits for the rest before it reads them. A batching
// server writes every stream's token of a step within a short time, so the
// wait turns several wakes of a few sockets each into one wake for all of
// them. It shifts no arrival (each is the kernel's receive time), but an
// Observer hears of a chunk up to this much later.
const pollGatherMax = time.Millisecond

// pollGatherOfGap is the part of the smallest time between two chunks of a
// stream that a gather may take, so that a gather does not read two
// chunks of a stream as one: a poller that sees chunks come closer than
// four times its gather shortens it at its next wake, and one that sees
// them come closer than pollGatherMin×pollGatherOfGap (400 µs) does not
// wait.
const pollGatherOfGap = 4

// pollGatherMin is the shortest gather worth its system call.
const pollGatherMin = 100 * time.Microsecond

// pollSleepers is how many pollers, of all transports, sleep holding
// their P in a gather: at most one fewer than the Ps, so that the rest of
// the program always has one.
var pollSleepers atomic.Int32

// pollStreams counts the streams on the pollers of all transports; the
// tests watch it.
var pollStreams atomic.Int64

// A pollGroup is the pollers of one StreamTransport, made on its first
// polled body and let go by its CloseIdleConnections.
type pollGroup struct {
	mu      sync.Mutex
	pollers []*poller
	streams atomic.Int64 // streams on these pollers
}

// pollGroup returns the transport's pollers, under mu.
func (t *StreamTransport) pollGroup() *pollGroup {
	if t.polls == nil {
		t.polls = &pollGroup{}
	}
	return t.polls.(*pollGroup) // the one kind this file makes
}

// poll registers ps with one of the transport's pollers. It holds the
// transport's mu, so that CloseIdleConnections cannot let the pollers go
// between the choice and the registration.
func (t *StreamTransport) poll(ps *pollStream) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pollGroup().add(ps)
}

// pollerShare is how many streams a poller takes before the next one is
// used: a poller woken for more sockets at once makes fewer waits, and at
// 100 tokens a second 256 streams take a tenth of a CPU.
const pollerShare = 256

// add registers ps with the group's poller that has the fewest streams
// of the first 1 + streams/pollerShare, making the pollers (one per P) on
// first use.
func (g *pollGroup) add(ps *pollStream) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pollers == nil {
		for range max(runtime.GOMAXPROCS(0), 1) {
			p, err := newPoller(g)
			if err != nil {
				g.closeLocked()
				return err
			}
			g.pollers = append(g.pollers, p)
		}
	}
	use := g.pollers[:min(len(g.pollers), 1+int(g.streams.Load())/pollerShare)]
	best, fewest := use[0], int64(1<<62)
	for _, p := range use {
		if n := p.count.Load(); n < fewest {
			best, fewest = p, n
		}
	}
	ps.p = best
	return best.add(ps)
}

// close lets the group's pollers go: each closes its epoll instances as
// soon as it has no streams (at once, if it has none), and the next
// stream makes new ones.
func (g *pollGroup) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closeLocked()
}

func (g *pollGroup) closeLocked() {
	for _, p := range g.pollers {
		p.mu.Lock()
		p.closing = true
		if !p.running {
			p.closeFiles()
		}
		p.mu.Unlock()
	}
	g.pollers = nil
}

// closeFiles closes the poller's epoll instances, under mu, once its
// goroutine has ended.
func (p *poller) closeFiles() {
	if p.epfd != nil {
		unix.Close(p.set)
		p.epfd.Close()
		p.epfd = nil
	}
}

// stopped is the end of the poller's goroutine, under mu.
func (p *poller) stopped() {
	p.running = false
	if p.closing {
		p.closeFiles()
	}
}

func newPoller(g *pollGroup) (*poller, error) {
	set, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		unix.Close(set)
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	if err := unix.EpollCtl(fd, unix.EPOLL_CTL_ADD, set, &ev); err != nil {
		unix.Close(set)
		unix.Close(fd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(set)
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(fd), "epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		unix.Close(set)
		f.Close()
		return nil, err
	}
	return &poller{g: g, set: set, epfd: f, rc: rc, streams: map[uint64]*pollStream{}, next: 1}, nil
}

func setEventID(ev *unix.EpollEvent, id uint64) {
	ev.Fd, ev.Pad = int32(uint32(id)), int32(uint32(id>>32))
}

func eventID(ev *unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// add registers ps, and starts the poller's goroutine if it is not running.
func (p *poller) add(ps *pollStream) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps.id = p.next
	p.next++
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP}
	setEventID(&ev, ps.id)
	if err := unix.EpollCtl(p.set, unix.EPOLL_CTL_ADD, ps.fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	p.streams[ps.id] = ps
	p.count.Add(1)
	p.g.streams.Add(1)
	pollStreams.Add(1)
	if !p.running {
		p.running = true
		p.epfd.SetReadDeadline(time.Time{})
		go p.loop()
	}
	return nil
}

// remove takes ps off the poller. Called by another goroutine than the
// poller's, it wakes the poller if that was its last stream, so that its
// goroutine ends.
func (p *poller) remove(ps *pollStream, fromLoop bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.streams[ps.id] != ps {
		return
	}
	delete(p.streams, ps.id)
	p.count.Add(-1)
	p.g.streams.Add(-1)
	pollStreams.Add(-1)
	unix.EpollCtl(p.set, unix.EPOLL_CTL_DEL, ps.fd, nil) // the descriptor is still open
	if !fromLoop && len(p.streams) == 0 && p.running {
		p.epfd.SetReadDeadline(time.Unix(1, 0)) // ends the wait
	}
}

// loop waits for readable sockets and reads them, until no stream is left.
func (p *poller) loop() {
	for {
		err := p.rc.Read(p.wake)
		if p.err != nil {
			err, p.err = p.err, nil
		}
		p.mu.Lock()
		if len(p.streams) == 0 {
			p.stopped()
			p.mu.Unlock()
			return
		}
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				p.mu.Unlock()
				p.failAll(err)
				return
			}
			p.epfd.SetReadDeadline(time.Time{})
		}
		p.mu.Unlock()
	}
}

// wake reads the sockets that are readable, each once, and reports
// whether no stream is left, for loop to end the goroutine; else it has
// the runtime's poller wait until one is readable again. Woken, it waits
// the gather first (see pollGatherMax), with set out of epfd so that the
// sockets that become readable meanwhile do not wake the runtime's poller
// one by one. A socket whose read filled its buffer, and sockets beyond
// the events one look can return, are read at once.
func (p *poller) wake(uintptr) bool {
	if g := p.gather(); g > 0 && !p.muted && p.mute(true) == nil {
		p.sleep(g)
	}
	for {
		n, err := p.readyNow()
		if err != nil || n == 0 {
			break // nothing, or EINTR: wait
		}
		pollLooks.Add(1)
		pollReady.Add(int64(n))
		p.read(n)
		if !p.again && n < len(p.events) {
			break
		}
	}
	if err := p.mute(false); err != nil {
		p.err = err // nothing would wake the poller
		return true
	}
	return p.count.Load() == 0
}

// gather is how long the poller waits, once woken, before it reads: a
// quarter of the smallest time between two chunks with tokens of a stream
// it read apart in the last second or two, at most pollGatherMax; none
// before it has seen two. (The chunks after a stream's last token, its
// usage and [DONE], often come together, and do not count: what the gather
// must not merge is tokens.)
func (p *poller) gather() time.Duration {
	if d := time.Duration(pollGatherFixed.Load()); d != 0 {
		return max(d, 0)
	}
	now := time.Now()
	if now.Sub(p.gapSince) > time.Second {
		p.gapBefore, p.gapNow, p.gapSince = p.gapNow, 0, now
	}
	gap := p.gapNow
	if gap == 0 || (p.gapBefore > 0 && p.gapBefore < gap) {
		gap = p.gapBefore
	}
	if g := min(gap/pollGatherOfGap, pollGatherMax); g >= pollGatherMin {
		return g
	}
	return 0
}

// noteGap takes the time between two chunks of a stream with tokens, read
// apart.
func (p *poller) noteGap(d time.Duration) {
	if p.gapNow == 0 || d < p.gapNow {
		p.gapNow = max(d, 1)
	}
}

// sleep waits d. It sleeps in the kernel holding its P, which costs one
// system call, where a goroutine's sleep costs the runtime a wake of
// another thread as well; but as a goroutine when the other pollers asleep
// so hold all the Ps but one, which is left to the rest of the program
// (with GOMAXPROCS 1, always). On a machine so busy
// that a sleep in the kernel woke pollGatherLate after its time, the
// thread would hold its P as long again: the sleeps of the next second are
// a goroutine's.
func (p *poller) sleep(d time.Duration) {
	start := time.Now()
	inKernel := !start.Before(p.plainUntil)
	if inKernel && int(pollSleepers.Add(1)) >= runtime.GOMAXPROCS(0) {
		pollSleepers.Add(-1) // the others asleep so hold all Ps but this one
		inKernel = false
	}
	if !inKernel {
		time.Sleep(d)
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0) // EINTR: a shorter gather
	pollSleepers.Add(-1)
	if end := time.Now(); end.Sub(start) > d+pollGatherLate {
		p.plainUntil = end.Add(time.Second)
	}
}

// pollGatherLate is how late a sleep in the kernel must wake for the
// machine to count as too busy to hold a P asleep.
const pollGatherLate = 5 * time.Millisecond

// mute takes set out of epfd (on) or puts it back. Put back while one of
// its sockets is readable, set makes epfd readable at once. (Turning the
// entry's events off and on again, with EPOLL_CTL_MOD, would lose that:
// an entry still on epfd's ready list from before is not reported again,
// and a socket that became readable while it was off would wait for the
// next to wake the poller.)
func (p *poller) mute(on bool) error {
	if p.muted == on {
		return nil
	}
	var err error
	if cerr := p.rc.Control(func(fd uintptr) {
		if on {
			err = unix.EpollCtl(int(fd), unix.EPOLL_CTL_DEL, p.set, nil)
		} else {
			ev := unix.EpollEvent{Events: unix.EPOLLIN}
			err = unix.EpollCtl(int(fd), unix.EPOLL_CTL_ADD, p.set, &ev)
		}
	}); cerr != nil {
		return cerr
	}
	if err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	p.muted = on
	return nil
}

// read reads the n sockets readyNow found, once each.
func (p *poller) read(n int) {
	p.mu.Lock()
	for i := range n {
		if ps := p.streams[eventID(&p.events[i])]; ps != nil {
			p.ready = append(p.ready, readyStream{ps, p.events[i].Events&pollEnding != 0})
		}
	}
	p.mu.Unlock()
	p.again = false
	for _, r := range p.ready {
		r.ps.handle(r.ending, &p.again)
	}
	clear(p.ready)
	p.ready = p.ready[:0]
}

// readyNow fills p.events with the sockets that are readable, without
// waiting. It is a raw system call: one that does not block needs no word
// to the Go scheduler, whose notice (syscall.EpollWait's) wakes the
// runtime's monitor thread from its sleep, for a burst of short sleeps of
// its own, at every wake of the poller.
func (p *poller) readyNow() (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.set), uintptr(unsafe.Pointer(&p.events[0])), uintptr(len(p.events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// failAll ends every stream with err; it is for a poller that cannot wait
// any more, which no working kernel does.
func (p *poller) failAll(err error) {
	p.mu.Lock()
	streams := make([]*pollStream, 0, len(p.streams))
	for _, ps := range p.streams {
		streams = append(streams, ps)
	}
	p.stopped()
	p.mu.Unlock()
	for _, ps := range streams {
		p.remove(ps, true)
		ps.mu.Lock()
		if !ps.closed && !ps.finished {
			ps.failed = err
			ps.finish()
		}
		ps.mu.Unlock()
	}
}

// pollStream is one response body read on a poller. It is the reader under
// the stream's eventReader: a Read returns what the body's bytes already
// read with the headers hold, then, once a wake, what one recvmsg brings,
// and sse.ErrWouldBlock until the next wake.
type pollStream struct {
	body *streamBody
	fd   int
	p    *poller
	id   uint64

	dec     bodyframe.Decoder
	pre     []byte        // bytes read with the headers, not yet decoded
	last    time.Time     // arrival of the bytes the last Read returned
	offset  time.Duration // the wall clock's lead on the monotonic at the last recvmsg
	mayRecv bool          // the wake's one recvmsg is still to make
	ending  bool          // the wake found the peer gone: read on to the end
	full    bool          // the wake's recvmsg filled the buffer
	inq     bool          // the kernel reports the bytes left after each read (TCP_INQ)
	more    bool          // the last read left bytes in the socket
	token   time.Time     // arrival of the last chunk with a token
	err     error         // set once the body has ended or failed: what Read returns from then on
	oob     [64]byte

	// advance handles what can be framed; called on the poller's goroutine
	// under mu.
	advance func() (bool, error)

	mu        sync.Mutex
	closed    bool        // taken off by the request, whose context ended
	finished  bool        // advance said the stream is done
	stopClose func() bool // stops close from running when the context ends
	failed    error
	result    error
	done      chan struct{}
}

// pollSource takes the body's connection off the Go runtime's poller for a
// poller of its own, if the transport asks for that and the connection is
// plain TCP; else it returns nil and the body is read as before.
func (b *streamBody) pollSource() polledBody {
	if !b.t.Poll || b.released.Load() {
		return nil
	}
	st, ok := b.sc.conn.(*rxstamp.Conn)
	if !ok {
		return nil
	}
	fd := -1
	var derr error
	if err := st.Raw().Control(func(s uintptr) {
		fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil || derr != nil {
		return nil
	}
	if !b.stop() { // the context has ended, and closes the connection
		unix.Close(fd)
		return nil
	}
	b.stop = func() bool { return true }
	ps := &pollStream{body: b, fd: fd, last: b.at, offset: st.Offset(), done: make(chan struct{})}
	ps.inq = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_INQ, 1) == nil
	ps.dec = bodyframe.NewDecoder(b.framing, b.length)
	if n := b.sc.br.Buffered(); n > 0 {
		ps.pre, _ = b.sc.br.Peek(n) // valid until br reads again: not before the connection is reused
		b.sc.br.Discard(n)
	}
	st.Close() // the duplicate keeps the socket open
	return ps
}

// Read implements io.Reader for the stream's eventReader.
func (ps *pollStream) Read(p []byte) (int, error) {
	if ps.err != nil {
		return 0, ps.err
	}
	var n int
	switch {
	case len(ps.pre) > 0:
		n = copy(p, ps.pre)
		ps.pre = ps.pre[n:]
	case !ps.mayRecv:
		return 0, sse.ErrWouldBlock
	default:
		ps.mayRecv = false
		var err error
		n, err = ps.recv(p)
		switch {
		case err == sse.ErrWouldBlock:
			return 0, err
		case err != nil:
			ps.err = err
			return 0, err
		case n == 0:
			ps.err = ps.dec.AtEOF()
			return 0, ps.err
		}
		// Read on while the end is still to read (no event will say so),
		// or while the kernel says bytes are left behind this read's: a
		// read that filled the buffer reads on at once, as a stream's own
		// goroutine would, not after every other ready socket's turn.
		ps.mayRecv = ps.ending || ps.more
	}
	m, err := ps.dec.Decode(p[:n])
	if err != nil {
		ps.err = err
		if m == 0 {
			return 0, err
		}
	} else if ps.dec.Ended {
		ps.err = io.EOF
	}
	return m, nil
}

// recv is one recvmsg into p; the arrival of its bytes is the kernel's
// receive timestamp, as on rxstamp.Conn.
func (ps *pollStream) recv(p []byte) (int, error) {
	iov := unix.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	msg := unix.Msghdr{Iov: &iov, Iovlen: 1, Control: &ps.oob[0]}
	msg.SetControllen(len(ps.oob))
	for {
		r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(ps.fd), uintptr(unsafe.Pointer(&msg)), unix.MSG_DONTWAIT)
		switch e {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			pollEmptyReads.Add(1)
			return 0, sse.ErrWouldBlock
		default:
			return 0, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("recvmsg", e)}
		}
		n := int(r)
		ps.full = n == len(p)
		ps.more = false
		if ps.inq {
			left, ok := cmsgInq(ps.oob[:msg.Controllen])
			ps.more = ok && left > 0
		}
		if n > 0 {
			now := time.Now()
			at := now
			offset := rxstamp.WallOffset(now)
			if k, ok := rxstamp.Timestamp(ps.oob[:msg.Controllen]); ok {
				at = rxstamp.ArrivalAt(now, k, offset-ps.offset)
			}
			ps.offset = offset
			if at.Before(ps.last) {
				at = ps.last // arrivals on one connection never go back
			}
			ps.last = at
		}
		return n, nil
	}
}

// cmsgInq finds the TCP_CM_INQ message in a recvmsg's control data: with
// TCP_INQ set on the socket (Linux 4.18 and later), each recvmsg says how
// many bytes are left to read.
func cmsgInq(b []byte) (int, bool) {
	for len(b) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(b) {
			return 0, false
		}
		if h.Level == unix.IPPROTO_TCP && h.Type == unix.TCP_CM_INQ && l >= unix.CmsgLen(4) {
			return int(*(*int32)(unsafe.Pointer(&b[unix.CmsgLen(0)]))), true
		}
		b = b[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(b)):]
	}
	return 0, false
}

// arrival is when the bytes the last Read returned reached the socket.
func (ps *pollStream) arrival() time.Time { return ps.last }

// tokenAt tells the poller of a chunk with a token that arrived at t, for
// its gather: the time since the stream's last one, if that came in an
// earlier read.
func (ps *pollStream) tokenAt(t time.Time) {
	if ps.p != nil && !ps.token.IsZero() && t.After(ps.token) {
		ps.p.noteGap(t.Sub(ps.token))
	}
	ps.token = t
}

// handle is the poller's turn at the stream: one recvmsg, and what it
// completes; with ending (the peer has closed or reset the connection), as
// many as it takes to read to the end.
func (ps *pollStream) handle(ending bool, full *bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed || ps.finished {
		return
	}
	ps.mayRecv, ps.ending, ps.full = true, ending, false
	done, err := ps.advance()
	ps.mayRecv, ps.ending = false, false
	if ps.full && !done {
		*full = true
	}
	if done {
		ps.result = err
		ps.p.remove(ps, true)
		ps.finish()
	}
}

// finish marks the stream done, under mu.
func (ps *pollStream) finish() {
	ps.finished = true
	close(ps.done)
}

// pollLooks counts the looks at a poller's set that found sockets to
// read, and pollReady the sockets they found; the tests check the gather
// with them.
var pollLooks, pollReady atomic.Int64

// pollEmptyReads counts the reads that found their socket empty, which a
// level-triggered poller that reads each readable socket once a wake
// should never make; the tests check it.
var pollEmptyReads atomic.Int64

// errPollClosed is what a stream's read fails with when its request's
// context ends first, as a read on a closed connection would.
var errPollClosed = &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}

// run reads the stream to its end: first the bytes that came with the
// headers, here, then on a poller. It returns advance's outcome, or, when
// ctx ends first, the read error the request's reader then settles.
func (ps *pollStream) run(ctx context.Context, advance func() (bool, error)) (result, readErr error) {
	if done, result, readErr := ps.start(ctx, advance); done {
		return result, readErr
	}
	<-ps.done
	return ps.wait()
}

// start frames what has already arrived, and registers the stream with a
// poller if it is not done by then, to be taken off it when ctx ends. It
// and wait are apart from run, and the wait is a plain receive rather
// than a select, so that the request's goroutine waits on a stack small
// enough for the collector to halve it (see [requestState.send]).
//
//go:noinline
func (ps *pollStream) start(ctx context.Context, advance func() (bool, error)) (done bool, result, readErr error) {
	ps.advance = advance
	if done, err := advance(); done {
		ps.release()
		return true, err, nil
	}
	if err := ps.body.t.poll(ps); err != nil {
		ps.release()
		return true, nil, err
	}
	ps.stopClose = context.AfterFunc(ctx, ps.close)
	return false, nil, nil
}

// close takes the stream off its poller, its request's context having
// ended before the stream did, and ends its wait.
func (ps *pollStream) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.finished || ps.closed {
		return
	}
	ps.closed = true
	ps.p.remove(ps, false)
	close(ps.done)
}

// wait returns the outcome of a stream whose wait has ended, as run does.
//
//go:noinline
func (ps *pollStream) wait() (result, readErr error) {
	ps.stopClose()
	ps.mu.Lock()
	closed := ps.closed
	ps.mu.Unlock()
	ps.release()
	switch {
	case closed:
		return nil, errPollClosed
	case ps.failed != nil:
		return nil, ps.failed
	}
	return ps.result, nil
}

// release ends the body's use of the socket: back to the transport's idle
// pool, as a net.Conn again, when the body was read to its end and the
// connection may be reused; else closed.
func (ps *pollStream) release() {
	b := ps.body
	if !b.released.CompareAndSwap(false, true) {
		return
	}
	if ps.dec.Ended && !ps.dec.Extra && b.reuse && !ps.closed {
		if conn, err := fdConn(ps.fd); err == nil {
			sc := b.sc
			sc.conn, sc.arrivals = stampConn(conn)
			sc.limit.r = sc.conn
			b.t.putIdle(sc)
			return
		}
	}
	unix.Close(ps.fd)
}

// fdConn makes a net.Conn of a socket descriptor, which it takes over.
func fdConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	return net.FileConn(f)
}
