// Package wsconn is the relay's WebSocket transport (RFC 6455): the
// handshake, the reading of a client's frames (Conn), and the writing of the
// frames queued for it (Writer), with the memory budget their bytes are
// charged to (Budget). It knows nothing of Nostr (a Msg is any text message,
// or a JSON array whose last element is shared: see Msg).
//
// # Reading: no goroutine per idle connection
//
// Every connection's socket is registered with one epoll instance
// (level-triggered, one-shot; see poller). When the socket is readable a
// goroutine is started for a turn: it reads what the socket holds with
// non-blocking reads into a pooled buffer, parses the frames (Parser),
// hands every complete one to the connection's Handler, re-arms the socket
// and ends. So a connection that says nothing costs its socket and its Conn
// (about a hundred bytes: no goroutine, no buffer, no timer of its own), and
// one that sends a message costs a goroutine for as long as the message
// takes to handle. The promises of the reading:
//
//   - one turn at a time per connection: the Handler's calls are never
//     concurrent for one connection, and come in the order of the frames;
//   - a message is handed over whole (fragments joined) and the slice is
//     the transport's, valid during the call: the handler copies what it
//     keeps;
//   - the start of a frame the socket has not delivered whole is kept, in
//     an allocation of its own, until the rest comes; a fragmented message
//     likewise;
//   - control frames may come between fragments and are handed over at once
//     (OnPing, OnPong);
//   - what RFC 6455 tells a server to refuse ends the reading with a
//     *CloseError of the code to answer: an unmasked frame, reserved bits
//     set without an extension, an unknown opcode, a continuation without a
//     message, a data frame inside a fragmented message, a fragmented or
//     over-long control frame, a malformed close frame (1002); a text
//     message or close reason that is not UTF-8 (1007); a frame or message
//     longer than Options.MaxMessage, known from the frame's header, before
//     its payload is read (1009);
//   - the peer's close frame ends the reading with a *CloseError (Remote)
//     holding its code; frames after it are not read;
//   - OnEnd runs exactly once, after every other call, also after Close.
//
// A socket that is not a *net.TCPConn or *net.UnixConn (or a platform
// without epoll) is read by a goroutine of its own, with the same promises.
//
// # The socket: a bare descriptor
//
// New takes a TCP or Unix socket out of Go's net package: it keeps a
// duplicate of its descriptor (non-blocking, as before) and closes the
// net.Conn, so that a held connection costs no netFD, no addresses and no
// runtime pollDesc, and only this package's epoll instances watch the
// socket (Go's poller no longer takes its readiness edges). The promises:
//
//   - the descriptor is closed exactly once: Close (any goroutine, any
//     number of times) forbids new syscalls on it, unregisters it from the
//     epoll instances and wakes a writer waiting for room, and the last
//     read or write in progress closes it when it ends; no syscall is ever
//     made on the number once it may be another connection's, and an epoll
//     event is taken for a connection only if its number and sequence agree;
//   - a write the socket does not take whole waits for room in the
//     package's write poller (one-shot EPOLLOUT), until the socket has
//     room, fails (a peer that left: at once, with the socket's error), the
//     write deadline passes (a timeout: a timer of its own, only while it
//     waits) or Close is called;
//   - NetConn is, for tests and diagnostics, a new *net.TCPConn on a
//     duplicate of the descriptor (the caller closes it).
//
// Conn.Idle says how long the peer has been silent (since the handler's
// last call for a frame; zero while it handles one): the owner's read
// timeout (the relay's pinger closes a connection silent for ReadTimeout)
// looks at it, so that no connection holds a timer.
//
// # Writing: one writer, frames whole and in order
//
// A Writer (held by value in its owner's connection, Init) is the writing
// half: a queue of messages and the connection's one writer, which runs only
// while something is due. Producers (any goroutine) Push or PushBulk a
// message and Kick the writer: a goroutine is started when none runs, and
// ends when nothing more is due; KickInline makes a caller that must not
// block (the relay's live fan-out) the writer for as long as the socket takes
// the frames without waiting; KickHere does the same for a query that has
// queued its whole answer, in writes of up to 64 KiB, so that an answer
// leaves in one write with no goroutine started for it. An idle Writer holds no goroutine, no buffer
// (the queue's ring, the batch and frame buffers are pooled) and no timer.
// What the transport does not decide it asks of its Owner, passed in on
// every call that may write (a Writer keeps no pointer to it). The promises:
//
//   - one writer at a time per connection: the kicks are counted (wake), the
//     writer answers every kick that came before it found nothing more to do,
//     so no kick is lost and no second writer starts while one runs; the
//     owner writes to the socket only as the writer (Owner.Goodbye and the
//     Writer methods it calls);
//   - frames go out in queue order, each message one unfragmented text frame
//     (compressed with permessage-deflate when negotiated), as many per write
//     as are queued (up to 64 KiB: one vectored write, a small batch copied
//     into one buffer); a frame is never interleaved with another: what a
//     non-blocking write left unwritten is written before anything else
//     (ping, pong, close frame included), or dropped with the socket;
//   - a message's bytes are charged to the connection's Budget, and so to the
//     relay's (its parent), from Push until the frame is written (or the
//     connection drops it): a batch on its way to the socket counts as it did
//     in the queue. Push never blocks and refuses what would take the queue
//     past its number of messages or the budget past its limit (ConnFull) or
//     the parent past its own (RelayFull); a message into an empty queue is
//     taken whatever its size, within the parent. PushBulk leaves a quarter of
//     either limit to Push and hands out a channel closed when room comes;
//   - slow readers are dropped: by budget (a refused Push: the owner drops
//     the peer; the relay's conn disconnects it as too slow, or first the
//     connection holding the most when the relay's budget refused), and by
//     write timeout: a write that cannot complete within
//     Owner.WriteTimeout fails (it may fail after three quarters of it: the
//     deadline is moved about once per quarter of it, not per write; for a
//     bare descriptor it is looked at only while a write waits for room),
//     the owner is told (WriteFailed), and the writer drops what the
//     connection holds, gives its bytes back and closes the socket. Closing
//     the socket (Conn.Close, from any goroutine) ends a write in progress;
//   - ping and pong: PingSoon has the writer send a ping (also while the
//     queue never empties), AnswerPing has it answer the latest ping with
//     its payload (RFC 6455 5.5.3), each within the write timeout;
//   - close codes: the closing side's goodbye (Owner.Goodbye, on the writer)
//     sends a close frame with its code (WriteClose: 1000-1003, 1007-1014,
//     3000-4999; the relay's are 1001 shutting down, 1008 too slow or
//     blocked, 1012 restarting), the peer's close frame is echoed with its
//     code and a refused frame answered with the refusal's (1002, 1007,
//     1009: see Reading above; CloseReply), and the socket is closed after
//     the goodbye, soon after the peer's answer or a short wait; the writer
//     then ends for good (Done).
//
// Conn.WriteControl and Conn.WriteMessage are for a connection without a
// Writer (the relay's refusal of a connection it cannot take after the
// upgrade, the tests): the caller is its one writer.
//
// # The handshake
//
// Upgrader.Upgrade answers a handshake with the 101 and nothing kept but the
// Conn; what it refuses it answers as gorilla/websocket did. In front of it
// the relay's acceptor (internal/relay/accept.go, handler.go) promises:
//
//   - the request head is read at most 8 KiB (request line and headers,
//     into a pooled buffer), within the head timeout (10 s); a longer head is
//     answered 431 and the connection closed, a slow one closed;
//   - per address: a blocked address is refused (403), and an address at its
//     connection limit (MaxConnsPerIP, counted per ratelimit.AddrKey: an IPv6
//     /64 as one) refused with 429, before the upgrade; a relay shutting down
//     answers 503.
//
// # permessage-deflate
//
// Off by default. See DeflateOptions.
package wsconn
