// Blossom media with a stock client library (issue 53): blossom-client-sdk,
// as Nostr apps use it, uploads a blob to the node's relay address (HEAD
// /upload first, then PUT with a kind 24242 it signs on the 401), lists it,
// downloads it, mirrors a blob from another server (BUD-04, PUT /mirror),
// and deletes them; a key that is not a member of the community is
// refused, and becomes one with its first post (open mode).
//
// test/apps (TestBlossomApp, `make test-apps`) starts bin/relay with
// --blossom-dir (and --blossom-mirror-private: the other server is a local
// one) and sets CN_APPS_BLOSSOM_RELAY (ws://). The name does not
// match node --test's default patterns: it runs only against that relay.
import { test } from 'node:test'
import { createHash } from 'node:crypto'
import { createServer } from 'node:http'
import assert from 'node:assert/strict'
import WebSocket from 'ws'
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay'
import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { Actions, createDeleteAuth, createMirrorAuth, createUploadAuth } from 'blossom-client-sdk'

const { deleteBlob, downloadBlob, hasBlob, listBlobs, mirrorBlob, uploadBlob } = Actions

const relayURL = process.env.CN_APPS_BLOSSOM_RELAY
if (!relayURL) {
  throw new Error('CN_APPS_BLOSSOM_RELAY is not set: run `make test-apps`')
}
useWebSocketImplementation(WebSocket)
const now = () => Math.floor(Date.now() / 1000)

test('blossom-client-sdk uploads, lists, downloads and deletes on the node', { timeout: 60_000 }, async () => {
  const info = await (await fetch(relayURL.replace(/^ws/, 'http'), { headers: { Accept: 'application/nostr+json' } })).json()
  assert.ok(info.blossom, 'NIP-11 names the Blossom server')
  const server = info.blossom.url
  assert.equal(server, relayURL.replace(/^ws/, 'http'), 'on the relay\'s own address')

  const sk = generateSecretKey()
  const pk = getPublicKey(sk)
  const signer = async (draft) => finalizeEvent(draft, sk)
  const bytes = new Uint8Array(200_000)
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7) & 0xff
  const blob = new Blob([bytes], { type: 'image/png' })
  const onAuth = async (_server, sha256) => createUploadAuth(signer, sha256)

  await assert.rejects(uploadBlob(server, blob, { onAuth }), /members/, 'a key that never posted is no member')

  const relay = await Relay.connect(relayURL)
  await relay.publish(finalizeEvent({ kind: 1, created_at: now(), tags: [['t', 'general']], content: 'hello' }, sk))
  relay.close()

  const desc = await uploadBlob(server, blob, { onAuth })
  assert.equal(desc.size, bytes.length)
  assert.equal(desc.type, 'image/png')
  assert.match(desc.url, new RegExp(`^${server}/${desc.sha256}\\.png$`))
  assert.ok(Array.isArray(desc.nip94), 'BUD-08 tags')

  const again = await uploadBlob(server, blob, { onAuth })
  assert.equal(again.sha256, desc.sha256, 'a second upload of the same bytes')

  const list = await listBlobs(server, pk)
  assert.deepEqual(list.map((d) => d.sha256), [desc.sha256])

  const res = await downloadBlob(server, desc.sha256)
  assert.equal(res.headers.get('content-type'), 'image/png')
  assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytes)
  const part = await fetch(desc.url, { headers: { Range: 'bytes=100-199' } })
  assert.equal(part.status, 206)
  assert.deepEqual(new Uint8Array(await part.arrayBuffer()), bytes.slice(100, 200))
  assert.equal(await hasBlob(server, desc.sha256), true)

  // BUD-04: the SDK asks the node to fetch a blob another server holds.
  const other = new TextEncoder().encode('a voice note on another server ' + pk)
  const otherHash = createHash('sha256').update(other).digest('hex')
  const origin = createServer((req, res) => {
    if (req.url !== `/${otherHash}.ogg`) { res.writeHead(404).end(); return }
    res.writeHead(200, { 'Content-Type': 'audio/ogg', 'Content-Length': other.length }).end(other)
  })
  await new Promise((resolve) => origin.listen(0, '127.0.0.1', resolve))
  try {
    const remote = { url: `http://127.0.0.1:${origin.address().port}/${otherHash}.ogg`, sha256: otherHash, size: other.length, type: 'audio/ogg', uploaded: now() }
    const mirrored = await mirrorBlob(server, remote, { onAuth: async (_server, hash) => createMirrorAuth(signer, hash) })
    assert.equal(mirrored.sha256, otherHash)
    assert.equal(mirrored.type, 'audio/ogg')
    const got = await downloadBlob(server, otherHash)
    assert.deepEqual(new Uint8Array(await got.arrayBuffer()), other)
    const wrong = { ...remote, sha256: createHash('sha256').update('not it').digest('hex') }
    await assert.rejects(mirrorBlob(server, wrong, { onAuth: async (_server, hash) => createMirrorAuth(signer, hash) }), /x tag/,
      'a blob whose hash is not the one asked for')
  } finally {
    origin.close()
  }
  assert.equal((await listBlobs(server, pk)).length, 2)

  for (const hash of [desc.sha256, otherHash]) {
    assert.equal(await deleteBlob(server, hash, { onAuth: async (_server, h) => createDeleteAuth(signer, h) }), true)
  }
  assert.equal(await hasBlob(server, desc.sha256), false)
  assert.deepEqual(await listBlobs(server, pk), [])
})
