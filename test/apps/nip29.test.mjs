// A NIP-29 group as an app makes and reads it with nostr-tools' nip29
// helpers (issue 33): an admin creates a group (9007, then 9002 with its
// metadata), the app loads it with loadGroup and parses the relay's 39000
// (metadata), 39001 (admins) and 39002 (members); a second key joins (9021)
// while a third key's live subscription waits for the node's 9000 and the
// updated 39002; the second key posts a kind 9 with h; the third reads it.
//
// nostr-tools 2.25.2's loadGroup looks the group's state up by the NIP-11
// `pubkey`, where NIP-29 names the key that signs the group state `self`; this
// relay advertises the node key as `pubkey` too unless the operator sets one,
// so the app passes the relay information exactly as the relay serves it.
// docs/groups.md "Apps" says so.
//
// `make test-apps` runs this file: test/apps starts bin/relay with
// default flags (and a node key, so that it hosts groups) on a fresh database
// and sets CN_APPS_RELAY_URL.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import WebSocket from 'ws'
import { SimplePool, useWebSocketImplementation } from 'nostr-tools/pool'
import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import * as nip29 from 'nostr-tools/nip29'

const url = process.env.CN_APPS_RELAY_URL
if (!url) {
  throw new Error('CN_APPS_RELAY_URL is not set: run `make test-apps`, which starts a relay for these tests')
}
useWebSocketImplementation(WebSocket)

const ANSWER_WAIT = 20_000
const TEST_TIMEOUT = 60_000

// within resolves as promise does, or rejects with what after ms.
function within(promise, ms, what) {
  let timer
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(what)), ms)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

function newUser() {
  const sk = generateSecretKey()
  return { sk, pk: getPublicKey(sk) }
}

// publish sends one event to the relay and resolves with its OK message, or
// rejects with the refusal.
async function publish(pool, user, template) {
  const ev = finalizeEvent(template, user.sk)
  const [answer] = pool.publish([url], ev)
  await within(answer, ANSWER_WAIT, `no OK for kind ${ev.kind}`)
  return ev
}

async function relayInformation() {
  const res = await fetch(url.replace(/^ws/, 'http'), { headers: { Accept: 'application/nostr+json' } })
  assert.equal(res.status, 200)
  return res.json()
}

test('nostr-tools nip29: create, load, join, post, read', { timeout: TEST_TIMEOUT }, async () => {
  const pool = new SimplePool()
  const admin = newUser()
  const joiner = newUser()
  const reader = newUser()
  // The reader is another app, signed in as the third key (NIP-42, when the
  // relay challenges), with its own connection.
  const readerPool = new SimplePool({ automaticallyAuth: () => async (template) => finalizeEvent(template, reader.sk) })
  const id = 'apps-' + Math.random().toString(36).slice(2, 10)
  try {
    const info = await relayInformation()
    assert.ok(info.supported_nips.includes(29), 'NIP-11 lists NIP-29')
    assert.match(info.self ?? '', /^[0-9a-f]{64}$/, 'NIP-11 self names the key that signs the groups')
    assert.equal(info.pubkey, info.self, 'NIP-11 pubkey defaults to self, which nostr-tools reads')
    const relayInfo = info

    // Creating a group takes a member of the community (--group-creators
    // members, the default): a note in a topic makes the admin one.
    await publish(pool, admin, { kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [['t', 'apps']], content: 'hello' })
    await publish(pool, admin, nip29.generateCreateGroupEventTemplate(id))
    await publish(pool, admin, nip29.generateEditGroupMetadataEventTemplate({
      relay: url,
      reference: { id, host: url },
      metadata: { id, pubkey: info.self, name: 'Apps', about: 'made by nostr-tools' },
    }))

    const ref = { id, host: url }
    const group = await nip29.loadGroup({ pool, groupReference: ref, relayInformation: relayInfo })
    assert.equal(group.metadata.id, id)
    assert.equal(group.metadata.pubkey, info.self)
    assert.equal(group.metadata.name, 'Apps')
    assert.equal(group.metadata.about, 'made by nostr-tools')
    assert.ok(!group.metadata.isClosed && !group.metadata.isRestricted && !group.metadata.isPrivate)
    // 39001: ["p", admin, "admin"]: nostr-tools reads the first role as the label.
    assert.deepEqual(group.admins.map((a) => [a.pubkey, a.label]), [[admin.pk, 'admin']])
    assert.deepEqual(group.members.map((m) => m.pubkey), [admin.pk])

    // The reader's live subscription sees the node admit the joiner: its 9000
    // naming them, and the 39002 that lists them.
    let put = null
    let listed = null
    let admitted
    const seen = new Promise((resolve) => { admitted = resolve })
    const onevent = (ev) => {
      if (ev.kind === 9000 && ev.pubkey === info.self) put = ev
      if (ev.kind === 39002 && nip29.parseGroupMembersEvent(ev).some((m) => m.pubkey === joiner.pk)) listed = ev
      if (put && listed) admitted()
    }
    const subs = [
      readerPool.subscribe([url], { kinds: [9000], '#h': [id], '#p': [joiner.pk] }, { onevent }),
      readerPool.subscribe([url], { kinds: [39002], authors: [info.self], '#d': [id] }, { onevent }),
    ]
    try {
      await publish(pool, joiner, nip29.generateGroupJoinRequestEventTemplate(id))
      await within(seen, ANSWER_WAIT, 'the live subscription did not get the node\'s 9000 and the updated 39002')
    } finally {
      subs.forEach((sub) => sub.close())
    }
    const again = await nip29.loadGroup({ pool, groupReference: ref, relayInformation: relayInfo })
    assert.deepEqual(again.members.map((m) => m.pubkey).sort(), [admin.pk, joiner.pk].sort())

    const msg = await publish(pool, joiner, { kind: 9, created_at: Math.floor(Date.now() / 1000), tags: [['h', id]], content: 'hi group' })
    const read = await readerPool.querySync([url], { kinds: [9], '#h': [id] }, { maxWait: ANSWER_WAIT })
    assert.deepEqual(read.map((e) => [e.id, e.pubkey, e.content]), [[msg.id, joiner.pk, 'hi group']])
  } finally {
    pool.destroy()
    readerPool.destroy()
  }
})
