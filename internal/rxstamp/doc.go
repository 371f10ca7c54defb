// Package rxstamp reads TCP connections with the kernel's receive
// timestamps: when the bytes a read returns reached the socket, before
// any wait for a CPU in the reading process. llmload's client times a
// stream's chunks with it ([Conn]); a test server times each request's
// first bytes with it ([NewListener], [Handler], [FirstByte]). Linux
// gives the timestamps (SO_TIMESTAMPNS); elsewhere there are none, and
// [New] says so.
package rxstamp
