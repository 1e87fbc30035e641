// Package loadgen drives any NIP-01 relay over plain WebSockets to measure it.
//
// Ingest pre-generates signed events (Generate) before the clock starts, then
// publishes them over several connections, each keeping up to Pipeline EVENTs
// in flight, and measures EVENT -> OK latency and accepted events per second.
// Req samples ids, authors and p values from the relay, then measures
// REQ -> EOSE latency for seven query shapes, one shape after the other.
//
// The client is a bare gorilla/websocket connection per worker goroutine: the
// goroutine that writes a message also reads the answers, so a latency is the
// time between the write and the read that returned the answer, with no
// client-side queueing in between. Every read has a deadline (the oldest
// request in flight plus the timeout); a connection that times out or fails
// is dropped and counted, and the remaining work goes to the other
// connections, so every run ends by itself. Percentiles are exact, from the
// sorted samples.
//
// Package loadgentest holds a small in-memory relay for tests.
package loadgen
