// A NIP-43 app session with nostr-tools only (issue 34): the app reads the
// relay's NIP-11 document (NIP-43 says to request invites and send joins only
// to relays that list 43), a member signs in and REQs kind 28935 for an
// invite code, a newcomer signs in and sends a kind 28934 join with that
// claim (and the NIP-70 `-` tag), and then posts; the relay's kind 13534,
// signed by its NIP-11 `self`, lists the newcomer. An outsider's post is
// refused `restricted:` first.
//
// test/apps (TestNIP43App, `make test-apps`) starts bin/relay with
// --membership invite, a node key and an admin, and sets CN_APPS_NIP43_URL
// and CN_APPS_NIP43_ADMIN (the admin's secret key, hex). The name does not
// match node --test's default patterns: it runs only against that relay.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import WebSocket from 'ws'
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay'
import { finalizeEvent, generateSecretKey, getPublicKey, verifyEvent } from 'nostr-tools/pure'
import { hexToBytes } from 'nostr-tools/utils'

const url = process.env.CN_APPS_NIP43_URL
const adminHex = process.env.CN_APPS_NIP43_ADMIN
if (!url || !adminHex) {
  throw new Error('CN_APPS_NIP43_URL and CN_APPS_NIP43_ADMIN are not set: run `make test-apps`')
}
useWebSocketImplementation(WebSocket)

const WAIT = 20_000
const now = () => Math.floor(Date.now() / 1000)

// signedIn connects as sk and waits until the relay accepted its AUTH.
async function signedIn(sk) {
  const relay = new Relay(url)
  let challenged
  const gotChallenge = new Promise((resolve) => { challenged = resolve })
  relay.onauth = async (template) => {
    challenged()
    return finalizeEvent(template, sk)
  }
  await relay.connect()
  await Promise.race([gotChallenge, new Promise((_, reject) => setTimeout(() => reject(new Error('no AUTH challenge')), WAIT))])
  await relay.authPromise
  return relay
}

// query collects a subscription's events up to EOSE; a CLOSED rejects.
function query(relay, filter) {
  return new Promise((resolve, reject) => {
    const events = []
    const sub = relay.subscribe([filter], {
      eoseTimeout: WAIT,
      onevent: (ev) => events.push(ev),
      oneose: () => { resolve(events); sub.close() },
      onclose: (reason) => reject(new Error(`CLOSED: ${reason}`)),
    })
  })
}

test('a nostr-tools app joins an invite-only relay with a NIP-43 claim', { timeout: 60_000 }, async () => {
  const info = await (await fetch(url.replace(/^ws/, 'http'), { headers: { Accept: 'application/nostr+json' } })).json()
  assert.ok(info.supported_nips.includes(43), 'NIP-11 lists 43')
  assert.match(info.self, /^[0-9a-f]{64}$/)

  const admin = await signedIn(hexToBytes(adminHex))
  const invites = await query(admin, { kinds: [28935] })
  admin.close()
  assert.equal(invites.length, 1)
  assert.equal(invites[0].pubkey, info.self)
  assert.ok(verifyEvent(invites[0]))
  const claim = invites[0].tags.find((t) => t[0] === 'claim')?.[1]
  assert.ok(claim, 'the invite carries a claim')

  const sk = generateSecretKey()
  const pk = getPublicKey(sk)
  const app = await signedIn(sk)
  try {
    const post = () => app.publish(finalizeEvent({ kind: 1, created_at: now(), tags: [['t', 'intro']], content: 'hello' }, sk))
    await assert.rejects(post(), /restricted: /, 'an outsider may not post')
    const reason = await app.publish(finalizeEvent({ kind: 28934, created_at: now(), tags: [['-'], ['claim', claim]], content: '' }, sk))
    assert.match(reason, /^info: welcome/)
    await post()
    const lists = await query(app, { kinds: [13534], authors: [info.self] })
    assert.equal(lists.length, 1)
    assert.ok(verifyEvent(lists[0]))
    assert.ok(lists[0].tags.some((t) => t[0] === '-'), 'NIP-70 protected')
    assert.ok(lists[0].tags.some((t) => t[0] === 'member' && t[1] === pk), 'the newcomer is listed')
  } finally {
    app.close()
  }
})
