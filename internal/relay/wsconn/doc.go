// Package wsconn is the relay's WebSocket transport (RFC 6455): the
// handshake, the reading of a client's frames, and the frame format its
// writer uses. It knows nothing of Nostr.
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
// A socket that is not a *net.TCPConn (or a platform without epoll) is read
// by a goroutine of its own, with the same promises.
//
// Conn.Idle says how long the peer has been silent (since the handler's
// last call for a frame; zero while it handles one): the owner's read
// timeout (the relay's pinger closes a connection silent for ReadTimeout)
// looks at it, so that no connection holds a timer.
//
// # Writing: one writer, frames whole and in order
//
// The transport never writes on its own: the close frame a reading ended
// with is answered by the owner's writer. The owner keeps these promises
// (the relay's conn does; see internal/relay's writeinline.go and
// sendqueue.go):
//
//   - one writer at a time per connection (WriteControl, WriteMessage and
//     the owner's own writes of frames made with AppendFrameHeader);
//   - frames go out in queue order, and a frame is never interleaved with
//     another: what a non-blocking write left unwritten is written before
//     anything else;
//   - a frame's bytes stay charged to the connection's and the relay's
//     budgets until written;
//   - a slow reader is dropped when its budget fills or a write does not
//     complete within the write timeout (Close ends a write in progress);
//   - pings are answered with the latest ping's payload; the closing side
//     sends a close frame with its code (1000-1003, 1007-1011, 3000-4999)
//     and closes the socket soon after the peer's answer or a short wait.
//
// # The handshake
//
// Upgrader.Upgrade answers a handshake with the 101 and nothing kept but the
// Conn; what it refuses it answers as gorilla/websocket did. The relay's
// acceptor reads the request head before it (at most 8 KiB, within the head
// timeout; 431 beyond) and applies the per-address limits; see
// internal/relay/accept.go.
//
// # permessage-deflate
//
// Off by default. See DeflateOptions.
package wsconn
