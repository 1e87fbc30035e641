// Plain NIP-01 clients for checking what the relay holds, apart from the app:
// one connection per call, signed in (NIP-42) first when given a secret key.
import WebSocket from 'ws'
import {finalizeEvent} from 'nostr-tools/pure'

const TIMEOUT = 10_000

const hexToBytes = hex => Uint8Array.from(hex.match(/../g), b => parseInt(b, 16))

// session opens a connection to url; with sk (hex or bytes) it answers the
// relay's AUTH challenge and waits for its OK before resolving.
const session = (url, sk) => new Promise((resolve, reject) => {
  const ws = new WebSocket(url)
  const handlers = []
  const timer = setTimeout(() => { ws.terminate(); reject(new Error(`${url}: no answer within ${TIMEOUT} ms`)) }, TIMEOUT)
  const s = {
    send: msg => ws.send(JSON.stringify(msg)),
    on: f => handlers.push(f),
    close: () => { clearTimeout(timer); ws.close() },
  }
  ws.on('error', e => { clearTimeout(timer); reject(e) })
  ws.on('message', data => {
    const msg = JSON.parse(data.toString())
    if (msg[0] === 'AUTH' && sk) {
      const key = typeof sk === 'string' ? hexToBytes(sk) : sk
      const auth = finalizeEvent({kind: 22242, created_at: Math.floor(Date.now() / 1000),
        tags: [['relay', url], ['challenge', msg[1]]], content: ''}, key)
      s.send(['AUTH', auth])
      s.on(m => {
        if (m[0] !== 'OK' || m[1] !== auth.id) return
        if (m[2]) resolve(s)
        else { s.close(); reject(new Error(`${url}: AUTH refused: ${m[3]}`)) }
      })
      return
    }
    for (const f of handlers.slice()) f(msg)
  })
  if (!sk) ws.on('open', () => resolve(s))
})

// query sends one REQ and returns the events stored before EOSE (an empty list
// with .closed set to the relay's message when it answers CLOSED).
export const query = async (url, filter, sk) => {
  const s = await session(url, sk)
  try {
    return await new Promise(resolve => {
      const events = []
      s.on(m => {
        if (m[1] !== 'q') return
        if (m[0] === 'EVENT') events.push(m[2])
        if (m[0] === 'EOSE') resolve(events)
        if (m[0] === 'CLOSED') resolve(Object.assign([], {closed: m[2]}))
      })
      s.send(['REQ', 'q', filter])
    })
  } finally { s.close() }
}

// publish sends a signed event as the holder of sk and returns the relay's OK
// as {ok, message}.
export const publish = async (url, event, sk) => {
  const s = await session(url, sk)
  try {
    return await new Promise(resolve => {
      s.on(m => { if (m[0] === 'OK' && m[1] === event.id) resolve({ok: m[2], message: m[3]}) })
      s.send(['EVENT', event])
    })
  } finally { s.close() }
}
