// The first-REQ race (issue 48): an app that sends its DM inbox REQ at the
// instant it connects, without waiting for its sign-in, must read the inbox
// with that first REQ. The REQ can cross the relay's challenge on the wire;
// the relay holds it until the connection's first AUTH (--auth-grace), so the
// answer does not depend on timing: every trial of every library reads the DM
// (before issue 48: nostr-tools Relay 22/30, SimplePool 17/30).
//
//   CN_APPS_RELAY_URL=ws://127.0.0.1:7777 TRIALS=30 node --test first-req-race.test.mjs
//
// It makes one member with one gift-wrapped DM, then per trial and library a
// new connection whose first REQ is the inbox's, and counts how many of those
// first REQs (NDK: fetchEvents) returned the DM, and how many had no answer
// within 10 s.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import WebSocket from 'ws'
import { Relay, useWebSocketImplementation as useRelayWebSocket } from 'nostr-tools/relay'
import { SimplePool, useWebSocketImplementation as usePoolWebSocket } from 'nostr-tools/pool'
import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { bytesToHex } from 'nostr-tools/utils'
import * as nip17 from 'nostr-tools/nip17'
import NDK, { NDKPrivateKeySigner, NDKRelayAuthPolicies } from '@nostr-dev-kit/ndk'

const url = process.env.CN_APPS_RELAY_URL
if (!url) throw new Error('CN_APPS_RELAY_URL is not set: run `make test-apps`, which starts a relay for these tests')
const trials = Number(process.env.TRIALS || 30)
useRelayWebSocket(WebSocket)
usePoolWebSocket(WebSocket)
globalThis.WebSocket ??= WebSocket
// An auth still in flight when a trial closes its connection rejects; that is
// the trial's end, not an error of the measurement.
process.on('unhandledRejection', () => {})

test(`the first inbox REQ of ${trials} new connections per library reads the DM`, { timeout: trials * 60_000 }, async () => {
  const sk = generateSecretKey()
  const pk = getPublicKey(sk)
  const seed = await Relay.connect(url)
  await seed.publish(finalizeEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [['t', 'intro']], content: 'hi' }, sk))
  const wrap = nip17.wrapEvent(generateSecretKey(), { publicKey: pk }, 'hello')
  await seed.publish(wrap)
  seed.close()
  const inbox = { kinds: [1059], '#p': [pk] }
  const sign = async (template) => finalizeEvent(template, sk)
  const hits = { 'nostr-tools Relay.onauth': 0, 'nostr-tools SimplePool automaticallyAuth': 0, 'NDK signIn': 0 }
  const hung = { 'nostr-tools Relay.onauth': 0, 'nostr-tools SimplePool automaticallyAuth': 0, 'NDK signIn': 0 }
  // answer is promise's value, or undefined (counted as hung) if it has not
  // settled within 10 s.
  async function answer(lib, promise) {
    let timer
    const late = new Promise((resolve) => {
      timer = setTimeout(resolve, 10_000)
    })
    const v = await Promise.race([promise, late])
    clearTimeout(timer)
    if (v === undefined) hung[lib]++
    return v ?? []
  }

  for (let i = 0; i < trials; i++) {
    const relay = new Relay(url)
    relay.onauth = sign
    await relay.connect()
    const got = await answer('nostr-tools Relay.onauth', new Promise((resolve) => {
      const ids = []
      relay.subscribe([inbox], { onevent: (ev) => ids.push(ev.id), oneose: () => resolve(ids), onclose: () => resolve(ids) })
    }))
    if (got.includes(wrap.id)) hits['nostr-tools Relay.onauth']++
    else console.log(`trial ${i}: nostr-tools Relay.onauth missed the DM`)
    relay.close()

    const pool = new SimplePool({ automaticallyAuth: () => sign })
    const events = await answer('nostr-tools SimplePool automaticallyAuth', pool.querySync([url], inbox))
    if (events.some((ev) => ev.id === wrap.id)) hits['nostr-tools SimplePool automaticallyAuth']++
    else console.log(`trial ${i}: nostr-tools SimplePool missed the DM`)
    pool.close([url])

    const ndk = new NDK({ explicitRelayUrls: [url], enableOutboxModel: false, signer: new NDKPrivateKeySigner(bytesToHex(sk)) })
    ndk.relayAuthDefaultPolicy = NDKRelayAuthPolicies.signIn({ ndk })
    await ndk.connect(5000)
    const set = await answer('NDK signIn', ndk.fetchEvents(inbox))
    if ([...set].some((ev) => ev.id === wrap.id)) hits['NDK signIn']++
    else console.log(`trial ${i}: NDK missed the DM`)
    for (const r of ndk.pool.relays.values()) r.disconnect()
    // Every trial comes from this one address: paced under the relay's
    // default REQ rate per address (20/s, burst 50; a trial sends four or
    // five), whose rate-limited answers would be counted as misses here.
    await new Promise((resolve) => setTimeout(resolve, 300))
  }
  for (const [lib, n] of Object.entries(hits)) {
    console.log(`${lib}: the first REQ read the inbox in ${n} of ${trials} trials (no answer within 10 s: ${hung[lib]})`)
  }
  assert.deepEqual(hits, Object.fromEntries(Object.keys(hits).map((lib) => [lib, trials])), 'every first inbox REQ reads the DM')
})
