// Flotilla, a real NIP-29 community web app, driven in headless Chromium
// against two dev nodes (test/community-app starts them and this script):
// CN_OPEN_RELAY (open membership) and CN_INVITE_RELAY (--membership invite),
// whose admin's secret key is CN_ADMIN_SECRET. CN_FLOTILLA_BUILD is the built
// app (test/community-app/build-flotilla.sh), served here over HTTP.
//
// Each step has its own assertion and prints "ok - <step>" or "not ok -
// <step>: <why>", then the last WebSocket frames the app exchanged with the
// relays and a screenshot of every page (a file under the temporary
// directory). A step after a failed one in the same scenario is printed as "not
// run". The exit status is 1 when any step failed or did not run.
import http from 'node:http'
import fs from 'node:fs'
import path from 'node:path'
import os from 'node:os'
import {chromium} from 'playwright-core'
import {generateSecretKey, getPublicKey, finalizeEvent} from 'nostr-tools/pure'
import {bytesToHex} from 'nostr-tools/utils'
import {nsecEncode, npubEncode} from 'nostr-tools/nip19'
import {query, publish} from './relay.mjs'

const env = name => process.env[name] || fail(`${name} is not set (test/community-app sets it)`)
const fail = msg => { console.error(`flotilla.mjs: ${msg}`); process.exit(2) }
const BUILD = env('CN_FLOTILLA_BUILD')
const OPEN = env('CN_OPEN_RELAY')
const INVITE = env('CN_INVITE_RELAY')
const ADMIN = env('CN_ADMIN_SECRET')
const CHROMIUM = process.env.CN_CHROMIUM || '/usr/bin/chromium'
const TIMEOUT = 20_000 // one UI expectation
const FRAMES_SHOWN = 300

// --- serving the app: its files, and index.html for every other path (SvelteKit's fallback)
const types = {'.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.ttf': 'font/ttf', '.woff2': 'font/woff2', '.webmanifest': 'application/manifest+json'}
const server = http.createServer((req, res) => {
  const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname)
  let file = path.join(BUILD, path.normalize(rel))
  if (!file.startsWith(BUILD) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) file = path.join(BUILD, 'index.html')
  res.writeHead(200, {'content-type': types[path.extname(file)] || 'application/octet-stream'})
  fs.createReadStream(file).pipe(res)
})
await new Promise(r => server.listen(0, '127.0.0.1', r))
const APP = `http://127.0.0.1:${server.address().port}`

// --- the frames every page exchanged with our relays, the last few thousand
const frames = []
const record = (who, dir, url, payload) => {
  frames.push(`${new Date().toISOString().slice(11, 23)} ${who} ${dir} ${url} ${String(payload).slice(0, 600)}`)
  if (frames.length > 5000) frames.splice(0, frames.length - 5000)
}
const ours = url => [OPEN, INVITE].some(r => new URL(r).host === new URL(url).host)
const local = url => { const h = new URL(url).hostname; return h === '127.0.0.1' || h === 'localhost' }

const pages = [] // every person's page, for screenshots on failure
const browser = await chromium.launch({executablePath: CHROMIUM, headless: true, args: ['--no-sandbox']})

// user opens a fresh browser profile for one person with secret key sk. The
// app's default relays (indexers, damus...) are outside: their sockets and
// requests are refused at once rather than left to time out.
const user = async (name, sk) => {
  const context = await browser.newContext({serviceWorkers: 'block', viewport: {width: 1400, height: 900}})
  await context.route(url => !local(url.href), route => route.abort())
  await context.routeWebSocket(url => !ours(url.href), ws => ws.close())
  const page = await context.newPage()
  page.setDefaultTimeout(TIMEOUT)
  page.on('websocket', ws => {
    if (!ours(ws.url())) return
    record(name, 'open', ws.url(), '')
    ws.on('framesent', f => record(name, '>>', ws.url(), f.payload))
    ws.on('framereceived', f => record(name, '<<', ws.url(), f.payload))
    ws.on('close', () => record(name, 'closed', ws.url(), ''))
  })
  page.on('pageerror', e => record(name, 'pageerror', '', e.message))
  const u = {name, sk, pk: getPublicKey(sk), page}
  pages.push(u)
  return u
}

// --- steps
let failures = 0
const scenario = async (title, body) => {
  console.log(`# ${title}`)
  let broken = ''
  await body(async (name, fn) => {
    if (broken) { console.log(`not run - ${name} (after "${broken}" failed)`); failures++; return }
    try {
      await fn()
      console.log(`ok - ${name}`)
    } catch (e) {
      failures++
      broken = name
      console.log(`not ok - ${name}: ${e.message.split('\n').slice(0, 6).join('\n    ')}`)
      for (const p of pages) {
        const file = path.join(os.tmpdir(), `flotilla-${p.name.replace(/\W/g, '-')}-${Date.now()}.png`)
        try { await p.page.screenshot({path: file}); console.log(`  ${p.name}'s screen: ${file}`) } catch {}
      }
      const shown = frames.slice(-FRAMES_SHOWN)
      console.log(`  last ${shown.length} WebSocket frames between the app and the relays:\n    ${shown.join('\n    ')}`)
    }
  })
}
const check = (ok, msg) => { if (!ok) throw new Error(msg) }
// until polls f (a relay query) until it returns a truthy value, for at most ms.
const until = async (f, ms, msg) => {
  const end = Date.now() + ms
  for (;;) {
    const v = await f()
    if (v) return v
    if (Date.now() > end) throw new Error(msg)
    await new Promise(r => setTimeout(r, 250))
  }
}

// --- what a person does in the app
const logIn = async u => {
  await u.page.goto(APP + '/home')
  await u.page.getByText('Log in', {exact: true}).first().click()
  await u.page.getByRole('button', {name: 'Log in with Key'}).click()
  await u.page.getByPlaceholder('nsec1...').fill(nsecEncode(u.sk))
  await u.page.getByRole('button', {name: 'Log in', exact: true}).click()
  await u.page.getByText('Successfully logged in!').waitFor()
}

const spacePath = url => `/spaces/${encodeURIComponent(url.replace(/^wss:\/\//, ''))}`

// joinSpace adds a space through "Add a space" > "Join a space" with an invite
// link or a relay URL, and waits for the app to open it; it throws with the
// app's own message when the app shows one.
const joinSpace = async (u, link) => {
  await u.page.goto(APP + '/home')
  await u.page.getByText('Add a space', {exact: true}).click()
  await u.page.getByText('Join a space', {exact: true}).click()
  await u.page.locator('form').filter({hasText: 'Invite Link'}).locator('input').fill(link)
  await u.page.getByRole('button', {name: 'Join Space'}).click()
  const confirm = u.page.getByRole('button', {name: 'Confirm'})
  const error = u.page.locator('.alert-error').first()
  const welcome = u.page.getByText('Welcome to the space!')
  const seen = await Promise.race([
    welcome.waitFor().then(() => 'welcome'),
    confirm.waitFor().then(() => 'confirm'),
    error.waitFor().then(() => 'error'),
  ])
  if (seen === 'error') throw new Error(`the app says: "${(await error.innerText()).trim()}"`)
  if (seen === 'confirm') { await confirm.click(); await welcome.waitFor() }
}

const openSpace = async (u, relay) => {
  await u.page.goto(APP + spacePath(relay) + '/recent')
}

// openSpaceMenu opens the menu under the space's name (Create Invite, Leave Space...).
const openSpaceMenu = async (u, relay) => {
  await u.page.getByRole('button').filter({has: u.page.locator('strong'), hasText: new URL(relay).host}).first().click()
}

const openRoom = async (u, relay, h) => {
  await u.page.goto(APP + spacePath(relay) + '/' + h)
}

const compose = u => u.page.locator('form .tiptap[contenteditable="true"]').last()

const post = async (u, text) => {
  await compose(u).click()
  await u.page.keyboard.type(text)
  await u.page.keyboard.press('Enter')
}

// pTags is the set of pubkeys a NIP-29 39002 names (p tags); listed, those a
// NIP-43 13534 names (member tags).
const pTags = ev => new Set((ev?.tags || []).filter(t => t[0] === 'p').map(t => t[1]))
const listed = ev => new Set((ev?.tags || []).filter(t => t[0] === 'member').map(t => t[1]))

// ================================================================ open relay
const admin = await user('admin', hexToBytes(ADMIN))
const member = await user('member', generateSecretKey())
const other = generateSecretKey() // another client: relay.mjs, no app

await scenario(`open membership, a newcomer: ${OPEN}`, async step => {
  await step('the member logs in with a key (Log in > Log in with Key, an nsec)', () => logIn(member))

  await step('the member adds the relay as a space (Add a space > Join a space, the relay URL)', () => joinSpace(member, OPEN))

  await step('the member sees the demo group "Community" in the space\'s room list', async () => {
    await openSpace(member, OPEN)
    await member.page.getByRole('link', {name: 'Community'}).first().waitFor()
  })

  await step('the member joins the demo group (Room information > Join member list), and the relay lists them in its 39002', async () => {
    await openRoom(member, OPEN, 'community')
    await member.page.locator('[data-tip="Room information"]').click()
    await member.page.getByRole('button', {name: 'Join member list'}).click()
    await member.page.getByRole('button', {name: 'Leave member list'}).waitFor()
    await until(async () => pTags((await query(OPEN, {kinds: [39002], '#d': ['community']}))[0]).has(member.pk), 10_000,
      'the relay\'s 39002 of "community" does not list the member')
    await member.page.keyboard.press('Escape')
  })

  const hello = `hello from Flotilla ${Date.now()}`
  await step('the member posts in the demo group; the message shows and the relay stores it', async () => {
    await openRoom(member, OPEN, 'community')
    await post(member, hello)
    await member.page.getByText(hello).waitFor()
    await until(async () => (await query(OPEN, {kinds: [9], '#h': ['community'], authors: [member.pk]})).some(e => e.content === hello), 10_000,
      'the relay has no kind 9 from the member with the text posted')
  })

  const live = `live from another client ${Date.now()}`
  await step('a message another client (a plain WebSocket client, events signed by nostr-tools) sends to the group appears live', async () => {
    const join = await publish(OPEN, finalizeEvent({kind: 9021, created_at: now(), tags: [['h', 'community']], content: ''}, other), other)
    check(join.ok || /^duplicate:/.test(join.message), `the other client's 9021 was refused: ${join.message}`)
    const res = await publish(OPEN, finalizeEvent({kind: 9, created_at: now(), tags: [['h', 'community']], content: live}, other), other)
    check(res.ok, `the other client's kind 9 was refused: ${res.message}`)
    await member.page.getByText(live).waitFor()
  })

})

// The admin's part needs nothing from the newcomer's but their key and login.
await scenario(`open membership, an admin and a private room: ${OPEN}`, async step => {
  await step('the admin logs in and adds the relay as a space', async () => {
    await logIn(admin)
    await joinSpace(admin, OPEN)
  })

  const secret = `private words ${Date.now()}`
  let h = ''
  await step('the admin creates a closed private room (Create room, members only, ignore join requests) and posts in it', async () => {
    await openSpace(admin, OPEN)
    await admin.page.getByText('Create room', {exact: true}).click()
    await admin.page.locator('form').filter({hasText: 'Create a Room'}).locator('input[type="text"]').first().fill('Backstage')
    await admin.page.getByText('Only allow members to read messages').locator('..').locator('input').check()
    await admin.page.getByText('Ignore requests to join').locator('..').locator('input').check()
    await admin.page.getByRole('button', {name: 'Create Room', exact: true}).click()
    await admin.page.waitForURL(u => !u.pathname.endsWith('/recent'))
    h = decodeURIComponent(new URL(admin.page.url()).pathname.split('/').pop())
    const meta = await until(async () => (await query(OPEN, {kinds: [39000], '#d': [h]}, ADMIN))[0], 10_000, `the relay has no 39000 for the room ${h}`)
    const tags = new Set(meta.tags.map(t => t[0]))
    check(tags.has('private') && tags.has('closed'), `the room's 39000 is not private and closed: ${JSON.stringify(meta.tags)}`)
    await post(admin, secret)
    await admin.page.getByText(secret).waitFor()
  })

  await step('the member is refused the private room: the app shows they are not a member, and the relay does not send its messages', async () => {
    check(h, 'no room was created')
    await openRoom(member, OPEN, h)
    await member.page.getByText("You aren't currently a member of this room.").waitFor()
    check(await member.page.getByRole('button', {name: 'Join Room'}).count() === 0, 'a closed room offers "Join Room"')
    const direct = await query(OPEN, {kinds: [9], '#h': [h]}, bytesToHex(member.sk))
    check(direct.length === 0, `the relay sent a non-member ${direct.length} message(s) of the private room`)
    check(await member.page.getByText(secret).count() === 0, 'the private message shows to a non-member')
  })

  await step('the admin adds the member to the private room and removes them (Room information > View All > Remove Member); the relay\'s 39002 no longer lists them', async () => {
    await openRoom(admin, OPEN, h)
    await admin.page.locator('[data-tip="Room information"]').click()
    await admin.page.getByRole('button', {name: 'View All'}).click()
    await admin.page.getByRole('button', {name: 'Add members'}).click()
    await admin.page.getByPlaceholder('Search for profiles...').fill(member.pk)
    await admin.page.getByRole('button', {name: 'Save changes'}).click()
    await admin.page.getByText('Members have successfully been added!').waitFor()
    await until(async () => pTags((await query(OPEN, {kinds: [39002], '#d': [h]}, ADMIN))[0]).has(member.pk), 10_000,
      'the relay\'s 39002 of the room does not list the member after "Add members"')
    // "Save changes" returns to the members dialog, where the member now shows.
    // The member's card: the app shows a key without a profile as npub1xx…xxxxx.
    const npub = npubEncode(member.pk)
    const card = admin.page.locator('.card2').filter({hasText: `${npub.slice(0, 8)}…${npub.slice(-5)}`})
    await card.locator('.btn-circle').click()
    await admin.page.getByRole('button', {name: 'Remove Member'}).click()
    await admin.page.getByRole('button', {name: 'Confirm'}).click()
    await admin.page.getByText('Member has successfully been removed!').waitFor()
    await until(async () => !pTags((await query(OPEN, {kinds: [39002], '#d': [h]}, ADMIN))[0]).has(member.pk), 10_000,
      'the relay\'s 39002 of the room still lists the removed member')
  })
})

// ======================================================== invite-only relay
const iadmin = await user('admin@invite', hexToBytes(ADMIN))
const newcomer = await user('newcomer', generateSecretKey())
const outsider = await user('outsider', generateSecretKey())

await scenario(`invite-only membership, an admin, a newcomer and an outsider: ${INVITE}`, async step => {
  await step('the admin logs in and adds the relay as a space', async () => {
    await logIn(iadmin)
    await joinSpace(iadmin, INVITE)
  })

  let link = ''
  await step('the admin creates an invite in the app (space menu > Create Invite) and gets a link with a claim', async () => {
    await openSpace(iadmin, INVITE)
    await openSpaceMenu(iadmin, INVITE)
    await iadmin.page.getByRole('button', {name: 'Create Invite'}).click()
    const input = iadmin.page.locator('input[type="text"]')
    link = await until(async () => {
      for (const v of await input.evaluateAll(els => els.map(e => e.value))) if (/[?&]c=[^&]+/.test(v)) return v
    }, TIMEOUT, 'the invite link has no claim (c=)')
  })

  await step('a newcomer logs in and joins with the invite link; the relay lists them in its 13534', async () => {
    // Flotilla names the relay without a scheme (r=127.0.0.1:port), which it
    // reads as wss://: the dev node speaks ws://, so the link gets its scheme.
    const u = new URL(link)
    u.searchParams.set('r', INVITE)
    await logIn(newcomer)
    await joinSpace(newcomer, u.toString())
    await until(async () => listed((await query(INVITE, {kinds: [13534]}, ADMIN))[0]).has(newcomer.pk), 10_000,
      'the relay\'s 13534 does not list the newcomer')
  })

  const words = `a newcomer's first words ${Date.now()}`
  await step('the newcomer posts in the demo group; the message shows and the relay stores it', async () => {
    await openRoom(newcomer, INVITE, 'community')
    await post(newcomer, words)
    await newcomer.page.getByText(words).waitFor()
    await until(async () => (await query(INVITE, {kinds: [9], '#h': ['community'], authors: [newcomer.pk]}, ADMIN)).some(e => e.content === words), 10_000,
      'the relay has no kind 9 from the newcomer with the text posted')
  })

  await step('an outsider (no invite) is refused the space, with a reason the app shows', async () => {
    await logIn(outsider)
    let refused = ''
    try { await joinSpace(outsider, INVITE) } catch (e) { refused = e.message }
    check(refused, 'the app added the space for an outsider without an invite')
    console.log(`    (the app showed the outsider: ${refused})`)
    check(!listed((await query(INVITE, {kinds: [13534]}, ADMIN))[0]).has(outsider.pk), 'the relay\'s 13534 lists the outsider')
  })

  await step('the newcomer leaves the space (space menu > Leave Space > Confirm) and the relay\'s 13534 no longer lists them', async () => {
    await openSpace(newcomer, INVITE)
    await openSpaceMenu(newcomer, INVITE)
    await newcomer.page.getByRole('button', {name: 'Leave Space'}).click()
    await newcomer.page.getByRole('button', {name: 'Confirm'}).click()
    await newcomer.page.waitForURL(u => u.pathname.startsWith('/home'))
    await until(async () => !listed((await query(INVITE, {kinds: [13534]}, ADMIN))[0]).has(newcomer.pk), 10_000,
      'the relay\'s 13534 still lists the newcomer after they left')
  })
})

await browser.close()
server.close()
console.log(failures ? `# ${failures} step(s) failed or did not run` : '# every step passed')
process.exit(failures ? 1 : 0)

function now() { return Math.floor(Date.now() / 1000) }
function hexToBytes(hex) { return Uint8Array.from(hex.match(/../g), b => parseInt(b, 16)) }
