package hostileserver

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Mode is how the server misbehaves: a name, optionally followed by "=" and
// a parameter ([Mode.With]).
type Mode string

// The modes. Each says what a request in that mode gets.
const (
	// OK is a healthy server: an event stream of max_tokens tokens (8 by
	// default), with usage as stream_options ask, a finish reason and
	// [DONE].
	OK Mode = "ok"

	// Redirect answers 307 (or the status given, such as
	// Redirect.With(302)) with a Location on [Server.OtherURL], same path.
	Redirect Mode = "redirect"
	// RedirectLoop answers 307 (or the status given) to the very URL that
	// was asked, forever.
	RedirectLoop Mode = "redirect-loop"
	// RedirectChain answers 307 to a new URL of the same server each time
	// (?hop=1, ?hop=2, ...), forever: too many redirects, no loop.
	RedirectChain Mode = "redirect-chain"

	// HugeHeader answers 200 with one header line of the given bytes
	// (300 MB by default), written from a small buffer.
	HugeHeader Mode = "huge-header"
	// ManyHeaders answers 200 with the given number of short header lines
	// (10 million by default).
	ManyHeaders Mode = "many-headers"
	// EarlyHints sends "103 Early Hints" responses without end, or the
	// given number of them followed by a healthy stream.
	EarlyHints Mode = "early-hints"

	// Silent never answers. As the mode of a whole server ([New]) it
	// accepts connections and never reads from them; as a request's mode it
	// reads the request and never answers.
	Silent Mode = "silent"
	// NotHTTP answers with an SSH server's banner and closes the
	// connection. As the mode of a whole server, no HTTP is spoken at all.
	NotHTTP Mode = "not-http"

	// EmptyDeltas sends one token, then a chunk with an empty delta every
	// 10 ms (or every given number of milliseconds) without end.
	EmptyDeltas Mode = "empty-deltas"
	// DoneOnly answers a stream of nothing but "data: [DONE]".
	DoneOnly Mode = "done-only"
	// Gzip answers a healthy stream with Content-Encoding: gzip, whatever
	// the request accepted; Gzip.With(500) answers that status with a
	// gzip-encoded error object instead.
	Gzip Mode = "gzip"
	// EventError sends one token, then an "event: error" event whose data
	// is an OpenAI Responses-style error object ({"type": "error", "code":
	// ..., "message": ...}), or, for EventError.With("text"), the plain text
	// [EventErrorMessage]; then it closes the stream without [DONE]. With
	// EventError.With("hold") it sends the error object and then keeps the
	// stream open, silent, until the client leaves.
	EventError Mode = "event-error"
	// HTML answers 200 with an HTML login page.
	HTML Mode = "html"
	// PlainJSON answers 200 with a whole chat completion as
	// application/json, as a server that ignored "stream": true would.
	PlainJSON Mode = "json"

	// Escapes answers 400 (or the status given) with an OpenAI error
	// object whose message is [EscapeText].
	Escapes Mode = "escapes"
	// EscapesInStream sends one token, then an error object inside the 200
	// stream whose message is [EscapeText], then [DONE].
	EscapesInStream Mode = "escapes-stream"

	// UsageMax reports completion_tokens 2^63−1 on the last chunk.
	UsageMax Mode = "usage-max"
	// UsageOverflow reports completion_tokens 99999999999999999999, beyond
	// any 64-bit integer, on the last chunk.
	UsageOverflow Mode = "usage-overflow"
	// UsageDecrease reports completion_tokens 1, 2, 3, then 2.
	UsageDecrease Mode = "usage-decrease"
	// UsageJump reports completion_tokens that grow by 10^9 on the third
	// chunk.
	UsageJump Mode = "usage-jump"
	// UsageNegative reports completion_tokens −1 on the second chunk.
	UsageNegative Mode = "usage-negative"
	// UsageZero reports an all-zero usage on every chunk, as Ollama's
	// completions API does; UsageZero.With("final") adds a last,
	// usage-only chunk with the true counts.
	UsageZero Mode = "usage-zero"
)

// EscapeText is the message of [Escapes] and [EscapesInStream]: it clears
// the screen (ESC[2J), sets the terminal's title (OSC 0) and writes to the
// clipboard (OSC 52), around readable words.
const EscapeText = "bad request\x1b[2J\x1b]0;pwned\x07\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07 try again"

// EventErrorMessage is the message of [EventError]'s error event.
const EventErrorMessage = "the model crashed while generating"

// With returns the mode with a parameter: Redirect.With(302).
func (m Mode) With(param any) Mode {
	name, _ := m.split()
	return Mode(fmt.Sprintf("%s=%v", name, param))
}

func (m Mode) split() (name, param string) {
	name, param, _ = strings.Cut(string(m), "=")
	return name, param
}

// intParam returns the mode's parameter as an integer, or def.
func (m Mode) intParam(def int64) int64 {
	_, p := m.split()
	if n, err := strconv.ParseInt(p, 10, 64); err == nil {
		return n
	}
	return def
}

// Origin names which of a server's two origins a request reached.
type Origin string

// The two origins of a [Server].
const (
	Main  Origin = "main"  // Server.URL
	Other Origin = "other" // Server.OtherURL
)

// Request is one request as the server received it.
type Request struct {
	Origin Origin
	Mode   Mode
	Method string
	// Path is the request's path without the mode prefix.
	Path string
	// Authorization is the Authorization header it carried, if any.
	Authorization string
	Header        http.Header
	// Body is the start of its body (up to 1 MiB).
	Body []byte
}

// Server is a hostile server and the second origin its redirects point to.
type Server struct {
	// URL is the server's origin, "http://127.0.0.1:port", without a
	// trailing slash. A client's base URL is URL + "/v1".
	URL string
	// OtherURL is the second origin, on another port: redirects point
	// there. It serves healthy streams and records what it receives.
	OtherURL string

	mode  Mode
	main  *httptest.Server
	other *httptest.Server
	raw   net.Listener // the listener of a Silent or NotHTTP server

	done chan struct{}
	wg   sync.WaitGroup // handlers and raw connections

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // hijacked and raw connections
	reqs   []Request
}

// New starts a server whose requests get mode unless their path picks
// another (see [Server.BaseURL]). A server started as [Silent] or [NotHTTP]
// speaks no HTTP at all, records no requests and ignores path prefixes.
func New(mode Mode) *Server {
	s := &Server{mode: mode, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	s.other = httptest.NewServer(s.handler(Other))
	s.OtherURL = s.other.URL
	if name, _ := mode.split(); name == string(Silent) || name == string(NotHTTP) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(fmt.Sprintf("hostileserver: listen: %v", err))
		}
		s.raw = ln
		s.URL = "http://" + ln.Addr().String()
		s.wg.Go(func() { s.serveRaw(name) })
		return s
	}
	s.main = httptest.NewServer(s.handler(Main))
	s.URL = s.main.URL
	return s
}

// BaseURL returns the API root of requests in mode m, whatever the
// server's own mode: URL + "/hostile/" + m + "/v1".
func (s *Server) BaseURL(m Mode) string {
	return s.URL + "/hostile/" + url.PathEscape(string(m)) + "/v1"
}

// Requests returns the requests received so far on both origins, in the
// order they arrived.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Authorizations returns the Authorization headers that requests to origin
// carried, one per request ("" for none).
func (s *Server) Authorizations(origin Origin) []string {
	var out []string
	for _, r := range s.Requests() {
		if r.Origin == origin {
			out = append(out, r.Authorization)
		}
	}
	return out
}

// Close stops the server: it ends every endless response, closes every
// connection and waits for its goroutines.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.done)
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	if s.raw != nil {
		s.raw.Close()
	}
	if s.main != nil {
		s.main.Close()
	}
	s.other.Close()
	s.wg.Wait()
}

// track registers a connection the server handles itself, so that Close
// closes it. It reports false, having closed it, when the server is
// closing.
func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// serveRaw accepts connections for a server that speaks no HTTP.
func (s *Server) serveRaw(name string) {
	for {
		c, err := s.raw.Accept()
		if err != nil {
			return
		}
		if !s.track(c) {
			continue
		}
		s.wg.Go(func() {
			defer s.untrack(c)
			if name == string(NotHTTP) {
				// Read the request, or enough of it, so the close does not
				// reset the connection before the client reads the banner.
				c.SetReadDeadline(time.Now().Add(time.Second))
				c.Read(make([]byte, 64<<10))
				io.WriteString(c, sshBanner)
				return
			}
			<-s.done // Silent: never read, never answer
		})
	}
}

const sshBanner = "SSH-2.0-OpenSSH_9.6p1 Debian-4\r\n"

// modePrefix starts the path of a request that picks its mode.
const modePrefix = "/hostile/"

func (s *Server) handler(origin Origin) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.wg.Add(1)
		defer s.wg.Done()
		mode, path := s.mode, r.URL.Path
		if rest, ok := strings.CutPrefix(path, modePrefix); ok {
			m, p, _ := strings.Cut(rest, "/")
			if unescaped, err := url.PathUnescape(m); err == nil {
				mode, path = Mode(unescaped), "/"+p
			}
		}
		if origin == Other {
			mode = OK
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		s.mu.Lock()
		s.reqs = append(s.reqs, Request{Origin: origin, Mode: mode, Method: r.Method, Path: path,
			Authorization: r.Header.Get("Authorization"), Header: r.Header.Clone(), Body: body})
		s.mu.Unlock()
		x := &exchange{s: s, w: w, r: r, mode: mode, path: path, req: parseRequest(path, body)}
		x.serve()
	})
}

// completionRequest is what the server reads of a completions request.
type completionRequest struct {
	completions bool // a completions path: it gets a stream
	chat        bool // chat rather than text completions
	maxTokens   int
	usage       bool // include_usage
	continuous  bool // continuous_usage_stats
}

func parseRequest(path string, body []byte) completionRequest {
	var cr completionRequest
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		cr.completions, cr.chat = true, true
	case strings.HasSuffix(path, "/completions"):
		cr.completions = true
	}
	var b struct {
		MaxTokens     int `json:"max_tokens"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
			Continuous   bool `json:"continuous_usage_stats"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(body, &b)
	cr.maxTokens = b.MaxTokens
	if cr.maxTokens <= 0 || cr.maxTokens > 4096 {
		cr.maxTokens = 8
	}
	cr.usage, cr.continuous = b.StreamOptions.IncludeUsage, b.StreamOptions.Continuous
	return cr
}

// exchange is one request being answered.
type exchange struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	mode Mode
	path string
	req  completionRequest
}

// streamModes shape an event stream: other paths get OK's answer.
var streamModes = map[string]bool{
	string(EmptyDeltas): true, string(DoneOnly): true, string(Gzip): true, string(EventError): true,
	string(EscapesInStream): true, string(UsageMax): true, string(UsageOverflow): true,
	string(UsageDecrease): true, string(UsageJump): true, string(UsageNegative): true, string(UsageZero): true,
}

func (x *exchange) serve() {
	name, param := x.mode.split()
	if streamModes[name] && !x.req.completions {
		name = string(OK)
	}
	switch Mode(name) {
	case Redirect:
		x.redirect(x.s.OtherURL + x.path + query(x.r))
	case RedirectLoop:
		x.redirect(x.s.URL + x.r.URL.RequestURI())
	case RedirectChain:
		hop, _ := strconv.Atoi(x.r.URL.Query().Get("hop"))
		x.redirect(fmt.Sprintf("%s%s?hop=%d", x.s.URL, x.r.URL.Path, hop+1))
	case HugeHeader:
		x.hijack(func(c net.Conn) { writeHugeHeader(c, x.mode.intParam(300<<20)) })
	case ManyHeaders:
		x.hijack(func(c net.Conn) { writeManyHeaders(c, x.mode.intParam(10_000_000)) })
	case EarlyHints:
		x.hijack(func(c net.Conn) { x.writeEarlyHints(c, x.mode.intParam(-1)) })
	case Silent:
		x.hijack(func(c net.Conn) {
			c.Read(make([]byte, 1)) // until the client or Close closes the connection
		})
	case NotHTTP:
		x.hijack(func(c net.Conn) { io.WriteString(c, sshBanner) })
	case HTML:
		x.w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(x.w, loginPage)
	case PlainJSON:
		x.w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(x.w, `{"id":"chatcmpl-hostile","object":"chat.completion","created":1,"model":"hostile",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"a whole answer at once"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`)
	case Escapes:
		status := int(x.mode.intParam(http.StatusBadRequest))
		x.w.Header().Set("Content-Type", "application/json")
		x.w.WriteHeader(status)
		msg, _ := json.Marshal(EscapeText)
		fmt.Fprintf(x.w, `{"error":{"message":%s,"type":"invalid_request_error","code":null}}`, msg)
	case EmptyDeltas:
		x.emptyDeltas(time.Duration(x.mode.intParam(10)) * time.Millisecond)
	case DoneOnly:
		st := x.startStream()
		st.write("data: [DONE]\n\n")
	case Gzip:
		x.gzip()
	case EventError:
		st := x.startStream()
		st.write(x.tokenChunk(1, ""))
		if param == "text" {
			st.write("event: error\ndata: " + EventErrorMessage + "\n\n")
		} else {
			msg, _ := json.Marshal(EventErrorMessage)
			st.write(`event: error` + "\n" + `data: {"type":"error","code":"server_error","message":` + string(msg) + `,"param":null}` + "\n\n")
		}
		if param == "hold" {
			select {
			case <-x.s.done:
			case <-x.r.Context().Done():
			}
		}
	case EscapesInStream:
		st := x.startStream()
		st.write(x.tokenChunk(1, ""))
		msg, _ := json.Marshal(EscapeText)
		st.write(`data: {"error":{"message":` + string(msg) + `,"type":"server_error","code":500}}` + "\n\n")
		st.write("data: [DONE]\n\n")
	case UsageMax, UsageOverflow, UsageDecrease, UsageJump, UsageNegative, UsageZero:
		x.badUsage(Mode(name), param)
	default:
		x.ok()
	}
}

func query(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return "?" + r.URL.RawQuery
}

func (x *exchange) redirect(location string) {
	status := int(x.mode.intParam(http.StatusTemporaryRedirect))
	if status < 300 || status > 399 {
		status = http.StatusTemporaryRedirect
	}
	x.w.Header().Set("Location", location)
	x.w.WriteHeader(status)
	io.WriteString(x.w, "moved\n")
}

// hijack takes over the connection and runs f on it; the connection closes
// when f returns or the server closes.
func (x *exchange) hijack(f func(c net.Conn)) {
	c, brw, err := http.NewResponseController(x.w).Hijack()
	if err != nil {
		http.Error(x.w, "hostileserver: cannot hijack: "+err.Error(), http.StatusInternalServerError)
		return
	}
	_ = brw // the request was read in full; nothing is buffered
	if !x.s.track(c) {
		return
	}
	defer x.s.untrack(c)
	f(c)
}

// writeRepeated writes unit repeatedly until total bytes are written, the
// connection fails or the server closes; it reports whether it wrote them
// all. It writes from one 64 KiB block.
func writeRepeated(c net.Conn, unit string, total int64) bool {
	block := bytes.Repeat([]byte(unit), max(1, (64<<10)/len(unit)))
	for total < 0 || total > 0 {
		b := block
		if total >= 0 && int64(len(b)) > total {
			b = b[:total]
		}
		if _, err := c.Write(b); err != nil {
			return false
		}
		if total > 0 {
			total -= int64(len(b))
		}
	}
	return true
}

func writeHugeHeader(c net.Conn, size int64) {
	if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Huge: "); err != nil {
		return
	}
	if writeRepeated(c, "a", size) {
		io.WriteString(c, "\r\nConnection: close\r\n\r\n"+rawStream(true, 1))
	}
}

func writeManyHeaders(c net.Conn, count int64) {
	if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"); err != nil {
		return
	}
	const line = "X-Many: v\r\n"
	if writeRepeated(c, line, count*int64(len(line))) {
		io.WriteString(c, "Connection: close\r\n\r\n"+rawStream(true, 1))
	}
}

func (x *exchange) writeEarlyHints(c net.Conn, count int64) {
	const hint = "HTTP/1.1 103 Early Hints\r\nLink: </hint.css>; rel=preload\r\n\r\n"
	total := int64(-1)
	if count >= 0 {
		total = count * int64(len(hint))
	}
	if writeRepeated(c, hint, total) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"+
			rawStream(x.req.chat, x.req.maxTokens))
	}
}

// rawStream is a healthy stream body of n tokens, for a response written
// on a raw connection.
func rawStream(chat bool, n int) string {
	x := &exchange{req: completionRequest{chat: chat, maxTokens: n}}
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(x.tokenChunk(i, ""))
	}
	b.WriteString(x.finishChunk(""))
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// stream writes an event stream, flushing every write.
type stream struct {
	x  *exchange
	rc *http.ResponseController
	w  io.Writer
}

func (x *exchange) startStream() *stream {
	x.w.Header().Set("Content-Type", "text/event-stream")
	x.w.Header().Set("Cache-Control", "no-cache")
	x.w.WriteHeader(http.StatusOK)
	st := &stream{x: x, rc: http.NewResponseController(x.w), w: x.w}
	st.rc.Flush()
	return st
}

// write writes and flushes s; it reports false when the client went away
// or the server is closing.
func (st *stream) write(s string) bool {
	select {
	case <-st.x.s.done:
		return false
	case <-st.x.r.Context().Done():
		return false
	default:
	}
	if _, err := io.WriteString(st.w, s); err != nil {
		return false
	}
	if f, ok := st.w.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return false
		}
	}
	return st.rc.Flush() == nil
}

// usageJSON is a usage object with completion_tokens written as given.
func usageJSON(completion string) string {
	return `"usage":{"prompt_tokens":5,"completion_tokens":` + completion + `,"total_tokens":` + completion + `}`
}

// tokenChunk is the event of token i, with usage if not "".
func (x *exchange) tokenChunk(i int, usage string) string {
	text, _ := json.Marshal(fmt.Sprintf("tok%d ", i))
	var b strings.Builder
	b.WriteString("data: ")
	if x.req.chat {
		b.WriteString(`{"id":"chatcmpl-hostile","object":"chat.completion.chunk","created":1,"model":"hostile","choices":[{"index":0,"delta":{"content":`)
		b.Write(text)
		b.WriteString(`},"finish_reason":null}]`)
	} else {
		b.WriteString(`{"id":"cmpl-hostile","object":"text_completion","created":1,"model":"hostile","choices":[{"index":0,"text":`)
		b.Write(text)
		b.WriteString(`,"finish_reason":null}]`)
	}
	if usage != "" {
		b.WriteString("," + usage)
	}
	b.WriteString("}\n\n")
	return b.String()
}

// finishChunk is the event that ends the choice, with usage if not "".
func (x *exchange) finishChunk(usage string) string {
	var b strings.Builder
	b.WriteString("data: ")
	if x.req.chat {
		b.WriteString(`{"id":"chatcmpl-hostile","object":"chat.completion.chunk","created":1,"model":"hostile","choices":[{"index":0,"delta":{"content":""},"finish_reason":"length"}]`)
	} else {
		b.WriteString(`{"id":"cmpl-hostile","object":"text_completion","created":1,"model":"hostile","choices":[{"index":0,"text":"","finish_reason":"length"}]`)
	}
	if usage != "" {
		b.WriteString("," + usage)
	}
	b.WriteString("}\n\n")
	return b.String()
}

// ok answers a healthy response for the path.
func (x *exchange) ok() {
	switch {
	case x.req.completions:
		x.okStream(x.startStream())
	case x.path == "/v1/models" || x.path == "/models":
		x.w.Header().Set("Content-Type", "application/json")
		io.WriteString(x.w, `{"object":"list","data":[{"id":"hostile","object":"model","owned_by":"llmload","max_model_len":4096}]}`)
	case x.path == "/metrics":
		x.w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		io.WriteString(x.w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"hostile\"} 0\n"+
			"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"hostile\"} 0\n")
	default:
		x.w.Header().Set("Content-Type", "application/json")
		x.w.WriteHeader(http.StatusNotFound)
		io.WriteString(x.w, `{"error":{"message":"not found","type":"not_found_error","code":404}}`)
	}
}

// okStream writes a healthy stream on st.
func (x *exchange) okStream(st *stream) {
	n := x.req.maxTokens
	for i := 1; i <= n; i++ {
		usage := ""
		if x.req.continuous {
			usage = usageJSON(strconv.Itoa(i))
		}
		if !st.write(x.tokenChunk(i, usage)) {
			return
		}
	}
	usage := ""
	if x.req.continuous {
		usage = usageJSON(strconv.Itoa(n))
	}
	st.write(x.finishChunk(usage))
	if x.req.usage && !x.req.continuous {
		st.write(`data: {"id":"chatcmpl-hostile","object":"chat.completion.chunk","created":1,"model":"hostile","choices":[],` + usageJSON(strconv.Itoa(n)) + "}\n\n")
	}
	st.write("data: [DONE]\n\n")
}

func (x *exchange) emptyDeltas(every time.Duration) {
	st := x.startStream()
	if !st.write(x.tokenChunk(1, "")) {
		return
	}
	empty := `data: {"id":"chatcmpl-hostile","object":"chat.completion.chunk","created":1,"model":"hostile","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}` + "\n\n"
	if !x.req.chat {
		empty = `data: {"id":"cmpl-hostile","object":"text_completion","created":1,"model":"hostile","choices":[{"index":0,"text":"","finish_reason":null}]}` + "\n\n"
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-x.s.done:
			return
		case <-x.r.Context().Done():
			return
		case <-t.C:
			if !st.write(empty) {
				return
			}
		}
	}
}

func (x *exchange) gzip() {
	x.w.Header().Set("Content-Encoding", "gzip")
	if status := int(x.mode.intParam(0)); status >= 400 {
		x.w.Header().Set("Content-Type", "application/json")
		x.w.WriteHeader(status)
		zw := newGzipWriter(x.w)
		io.WriteString(zw, `{"error":{"message":"compressed failure","type":"server_error","code":null}}`)
		zw.Close()
		return
	}
	st := x.startStream()
	zw := newGzipWriter(st.w)
	st.w = zw
	x.okStream(st)
	zw.Close()
	st.rc.Flush()
}

// badUsage writes a stream whose usage no true count can have.
func (x *exchange) badUsage(m Mode, param string) {
	n := max(x.req.maxTokens, 5)
	st := x.startStream()
	usage := func(i int) string {
		switch m {
		case UsageMax:
			if i == n {
				return "9223372036854775807"
			}
		case UsageOverflow:
			if i == n {
				return "99999999999999999999"
			}
		case UsageDecrease:
			if i >= 4 {
				return strconv.Itoa(i - 2)
			}
		case UsageJump:
			if i >= 3 {
				return strconv.Itoa(i + 1_000_000_000)
			}
		case UsageNegative:
			if i == 2 {
				return "-1"
			}
		case UsageZero:
			return "0"
		}
		return strconv.Itoa(i)
	}
	for i := 1; i < n; i++ {
		u := usageJSON(usage(i))
		if m == UsageZero {
			u = `"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`
		}
		if !st.write(x.tokenChunk(i, u)) {
			return
		}
	}
	last := usageJSON(usage(n))
	if m == UsageZero {
		last = `"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`
	}
	// The last chunk carries the last token and the finish reason.
	text, _ := json.Marshal(fmt.Sprintf("tok%d ", n))
	if x.req.chat {
		st.write(`data: {"id":"chatcmpl-hostile","object":"chat.completion.chunk","created":1,"model":"hostile","choices":[{"index":0,"delta":{"content":` +
			string(text) + `},"finish_reason":"length"}],` + last + "}\n\n")
	} else {
		st.write(`data: {"id":"cmpl-hostile","object":"text_completion","created":1,"model":"hostile","choices":[{"index":0,"text":` +
			string(text) + `,"finish_reason":"length"}],` + last + "}\n\n")
	}
	if m == UsageZero && param == "final" {
		st.write(`data: {"id":"cmpl-hostile","object":"text_completion","created":1,"model":"hostile","choices":[],` + usageJSON(strconv.Itoa(n)) + "}\n\n")
	}
	st.write("data: [DONE]\n\n")
}

const loginPage = `<!doctype html>
<html><head><title>Sign in</title></head>
<body><form method="post" action="/login"><input name="user"><input name="password" type="password"><button>Sign in</button></form></body></html>
`

// newGzipWriter compresses a stream; its Flush ends a block, so each event
// reaches the client as it is written.
func newGzipWriter(w io.Writer) *gzip.Writer { return gzip.NewWriter(w) }
