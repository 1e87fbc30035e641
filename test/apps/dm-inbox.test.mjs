// The app sessions the relay is checked against (issue 32), with the real
// libraries: nostr-tools' Relay with onauth, nostr-tools' SimplePool with
// automaticallyAuth, and NDK with its signIn policy. Each connects, signs in
// when the relay's AUTH challenge arrives (as the library does by itself; the
// relay sends the challenge on connect), and then reads the user's NIP-17 DM
// inbox ({"kinds":[1059],"#p":[me]}) on the first try: one subscription,
// answered with every gift wrap and EOSE, never CLOSED. A relay that sends the
// challenge only with a refusal (--auth-challenge-on-connect=false) fails each
// of them: the app is never signed in.
//
// `make test-apps` runs this file: test/apps starts bin/relay with
// default flags on a fresh database and sets CN_APPS_RELAY_URL.
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
if (!url) {
  throw new Error('CN_APPS_RELAY_URL is not set: run `make test-apps`, which starts a relay for these tests')
}

// Node 20 has no WebSocket of its own: nostr-tools takes one per module, NDK
// uses the global one.
useRelayWebSocket(WebSocket)
usePoolWebSocket(WebSocket)
globalThis.WebSocket ??= WebSocket

// How long an app waits for the challenge after connecting; the relay sends it
// at once. The waits for answers are generous: a loaded CI machine is slow, and
// a library that gives up early (nostr-tools' EOSE timeout) would report a
// partial inbox as a full one.
const SIGN_IN_WAIT = 10_000
const ANSWER_WAIT = 20_000
const TEST_TIMEOUT = 60_000

const messages = ['hello', 'are you there?']

// within resolves as promise does, or rejects with what after ms.
function within(promise, ms, what) {
  let timer
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(what)), ms)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

// signal returns a promise and the function that resolves it.
function signal() {
  let fire
  const fired = new Promise((resolve) => {
    fire = resolve
  })
  return [fired, fire]
}

const inbox = (pk) => ({ kinds: [1059], '#p': [pk] })

// newUser makes a member of the relay (a note in a topic: a direct message
// must name a member) and sends it the messages, each gift-wrapped by
// nostr-tools (NIP-17) from a new sender; it returns the user's keys and the
// gift wraps.
async function newUser() {
  const sk = generateSecretKey()
  const pk = getPublicKey(sk)
  const relay = await Relay.connect(url)
  try {
    const note = { kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [['t', 'intro']], content: 'hi, I am new here' }
    await relay.publish(finalizeEvent(note, sk))
    const wraps = []
    for (const text of messages) {
      const wrap = nip17.wrapEvent(generateSecretKey(), { publicKey: pk }, text)
      await relay.publish(wrap)
      wraps.push(wrap)
    }
    return { sk, pk, wraps }
  } finally {
    relay.close()
  }
}

// assertInbox checks that the app's first inbox subscription got every gift
// wrap and was not refused, and that the user can read the messages.
function assertInbox(user, events, refusal) {
  assert.equal(refusal, undefined, `the first inbox REQ was refused: ${refusal}`)
  assert.deepEqual(events.map((ev) => ev.id).sort(), user.wraps.map((w) => w.id).sort(), 'every gift wrap, on the first REQ')
  const texts = events.map((wrap) => nip17.unwrapEvent(wrap, user.sk).content)
  assert.deepEqual(texts.sort(), [...messages].sort())
}

test('nostr-tools Relay with onauth signs in on connect and reads the DM inbox on the first try', { timeout: TEST_TIMEOUT }, async () => {
  const user = await newUser()
  const relay = new Relay(url)
  const [challenged, onChallenge] = signal()
  relay.onauth = async (template) => {
    onChallenge()
    return finalizeEvent(template, user.sk)
  }
  await relay.connect()
  try {
    await within(challenged, SIGN_IN_WAIT, 'no AUTH challenge on connect: the app never signed in')
    await relay.authPromise // the relay's OK to the AUTH (a refusal rejects)
    const { events, refusal } = await new Promise((resolve) => {
      const events = []
      const sub = relay.subscribe([inbox(user.pk)], {
        eoseTimeout: ANSWER_WAIT,
        onevent: (ev) => events.push(ev),
        oneose: () => {
          resolve({ events })
          sub.close()
        },
        onclose: (reason) => resolve({ events, refusal: reason }),
      })
    })
    assertInbox(user, events, refusal)
  } finally {
    relay.close()
  }
})

// Issue 48: an app that attaches its signer after connecting has already
// read (and dropped) the challenge sent on connect. Its first inbox REQ is
// held for the relay's grace and the relay sends the challenge again; the
// signer answers, and the held REQ is answered in full.
test('nostr-tools Relay.connect, then onauth: signs in on the challenge sent again and reads the DM inbox on the first try', { timeout: TEST_TIMEOUT }, async () => {
  const user = await newUser()
  const relay = await Relay.connect(url)
  const [challenged, onChallenge] = signal()
  relay.onauth = async (template) => {
    onChallenge()
    return finalizeEvent(template, user.sk)
  }
  try {
    const answered = new Promise((resolve) => {
      const events = []
      const sub = relay.subscribe([inbox(user.pk)], {
        eoseTimeout: ANSWER_WAIT,
        onevent: (ev) => events.push(ev),
        oneose: () => {
          resolve({ events })
          sub.close()
        },
        onclose: (reason) => resolve({ events, refusal: reason }),
      })
    })
    await within(challenged, SIGN_IN_WAIT, 'no AUTH challenge after the first REQ: a signer attached after connecting never signs in')
    const { events, refusal } = await answered
    assertInbox(user, events, refusal)
  } finally {
    relay.close()
  }
})

test('nostr-tools SimplePool with automaticallyAuth signs in on connect and reads the DM inbox on the first try', { timeout: TEST_TIMEOUT }, async () => {
  const user = await newUser()
  const [challenged, onChallenge] = signal()
  const pool = new SimplePool({
    automaticallyAuth: () => async (template) => {
      onChallenge()
      return finalizeEvent(template, user.sk)
    },
  })
  try {
    const relay = await pool.ensureRelay(url)
    await within(challenged, SIGN_IN_WAIT, 'no AUTH challenge on connect: the app never signed in')
    await relay.authPromise
    // subscribeEose closes the subscription at EOSE with this reason; a
    // refusal closes it with the relay's.
    const { events, reasons } = await new Promise((resolve) => {
      const events = []
      pool.subscribeEose([url], inbox(user.pk), {
        maxWait: ANSWER_WAIT,
        onevent: (ev) => events.push(ev),
        onclose: (reasons) => resolve({ events, reasons }),
      })
    })
    const refusals = reasons.map((r) => r.reason).filter((reason) => reason !== 'closed automatically on eose')
    assertInbox(user, events, refusals.length > 0 ? refusals.join('; ') : undefined)
  } finally {
    pool.close([url])
  }
})

test("NDK with NDKRelayAuthPolicies.signIn signs in on connect and reads the DM inbox on the first try", { timeout: TEST_TIMEOUT }, async () => {
  const user = await newUser()
  // Only the relay under test: NDK's outbox model would also connect to
  // public relays of its own.
  const ndk = new NDK({ explicitRelayUrls: [url], enableOutboxModel: false, signer: new NDKPrivateKeySigner(bytesToHex(user.sk)) })
  ndk.relayAuthDefaultPolicy = NDKRelayAuthPolicies.signIn({ ndk })
  const relays = [...ndk.pool.relays.values()]
  assert.equal(relays.length, 1)
  const [authed, onAuthed] = signal()
  relays[0].once('authed', onAuthed) // emitted on the relay's OK to the AUTH
  try {
    await ndk.connect(SIGN_IN_WAIT)
    await within(authed, SIGN_IN_WAIT, 'NDK never emitted authed: no AUTH challenge on connect')
    const { events, refusal } = await new Promise((resolve) => {
      const events = []
      const refusals = []
      const sub = ndk.subscribe(inbox(user.pk), {
        closeOnEose: true,
        groupable: false,
        onEvent: (ev) => events.push(ev.rawEvent()),
        onEose: () => resolve({ events, refusal: refusals.length > 0 ? refusals.join('; ') : undefined }),
      })
      sub.on('closed', (_relay, reason) => refusals.push(reason))
    })
    assertInbox(user, events, refusal)
  } finally {
    for (const relay of ndk.pool.relays.values()) relay.disconnect()
  }
})
