/**
 * Token recovery must not enumerate accounts, leak a token twice, outlive its 10 minutes, or be
 * spent by a link checker's HEAD; and it must not flood an inbox. A recovery is the remedy for a
 * stolen token, so a rotation made with that token and still in flight must not undo it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { get, pathOf, postForm, readMails } from '../helpers/money'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const linkOf = (text: string) => pathOf(/(http:\/\/pab\.test\/rotate\?code=[A-Za-z0-9_-]{43})/.exec(text)![1]!)

async function mailedLink(email: string): Promise<string> {
  const before = readMails(t).length
  expect((await t.req('POST', '/v1/token/rotate', { body: { email } })).status).toBe(202)
  await t.s.mailer.idle()
  const mails = readMails(t)
  expect(mails.length).toBe(before + 1)
  return linkOf(mails.at(-1)!.text)
}

describe('token recovery security', () => {
  test('the same answer for an existing and an unknown e-mail; no mail for the unknown one', async () => {
    const email = `known-${t.prefix}@example.com`
    await t.signup(email)
    const known = await t.req('POST', '/v1/token/rotate', { body: { email } })
    const unknown = await t.req('POST', '/v1/token/rotate', { body: { email: `nobody-${t.prefix}@example.com` } })
    expect(unknown.status).toBe(known.status)
    expect(unknown.text).toBe(known.text)
    await t.s.mailer.idle()
    expect(readMails(t).filter((m) => m.to.startsWith('nobody-'))).toHaveLength(0)
  })

  test('a link expires after 10 minutes (LINK_INVALID) and the old token keeps working', async () => {
    const email = `expire-${t.prefix}@example.com`
    const a = await t.signup(email)
    const link = await mailedLink(email)
    t.clock.advance(10 * 60 * 1000)
    const page = await get(t, link)
    expect(page.status).toBe(400)
    expect(page.text).toContain('LINK_INVALID')
    expect(page.text).toContain('POST /v1/token/rotate')
    const json = await get(t, link, { accept: 'application/json' })
    expect(json.body).toMatchObject({ error: 'LINK_INVALID', renew_via: 'POST /v1/token/rotate {"email"}' })
    expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(200)
  })

  test('malformed and unknown codes → LINK_INVALID; a HEAD does not spend the link', async () => {
    for (const code of ['', 'short', 'x'.repeat(43), '../../etc']) expect((await get(t, `/rotate?code=${code}`)).status).toBe(400)
    const email = `head-${t.prefix}@example.com`
    const a = await t.signup(email)
    t.clock.advance(61_000) // past the per-account mail throttle of earlier tests
    const link = await mailedLink(email)
    const head = await t.app.handle(new Request(`http://pab.test${link}`, { method: 'HEAD' }))
    expect(head.status).toBe(200)
    expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(200)
    expect((await get(t, link)).status).toBe(200)
  })

  test('a GET (a mail scanner following the link) never rotates: only the confirm form\'s POST does', async () => {
    const email = `scanner-${t.prefix}@example.com`
    const a = await t.signup(email)
    const link = await mailedLink(email)
    const code = new URL(`http://pab.test${link}`).searchParams.get('code')!
    for (let i = 0; i < 3; i++) {
      const page = await get(t, link)
      expect(page.status).toBe(200)
      expect(page.text).not.toMatch(/sk_[A-Za-z0-9_-]{43}/)
      expect(page.text).toContain(`name="code" value="${code}"`)
    }
    expect((await get(t, link, { accept: 'application/json' })).status).toBe(200)
    expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(200)
    const rotated = await postForm(t, '/rotate', { code })
    expect(rotated.status).toBe(200)
    expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(401)
  })

  test('POST /rotate with a missing, malformed or unknown code → LINK_INVALID, page or JSON', async () => {
    for (const code of ['', 'short', 'x'.repeat(43), '../../etc']) {
      const page = await postForm(t, '/rotate', { code })
      expect([code, page.status]).toEqual([code, 400])
      expect(page.text).toContain('LINK_INVALID')
      const json = await postForm(t, '/rotate', { code }, { accept: 'application/json' })
      expect(json.body).toMatchObject({ error: 'LINK_INVALID', renew_via: 'POST /v1/token/rotate {"email"}' })
    }
    expect((await postForm(t, '/rotate', {})).status).toBe(400)
  })

  test('one recovery mail per account per minute', async () => {
    const email = `flood-${t.prefix}@example.com`
    await t.signup(email)
    for (let i = 0; i < 5; i++) expect((await t.req('POST', '/v1/token/rotate', { body: { email } })).status).toBe(202)
    await t.s.mailer.idle()
    expect(readMails(t).filter((m) => m.to === email)).toHaveLength(1)
    t.clock.advance(61_000)
    await mailedLink(email)
  })

  test('a malformed e-mail → BAD_REQUEST; neither bearer nor e-mail → UNAUTHORIZED', async () => {
    const bad = await t.req('POST', '/v1/token/rotate', { body: { email: 'not-an-email' } })
    expect(bad.status).toBe(400)
    expect(bad.body.field).toBe('email')
    expect((await t.req('POST', '/v1/token/rotate')).status).toBe(401)
    expect((await t.req('POST', '/v1/token/rotate', { body: {} })).status).toBe(401)
  })

  test('a completed recovery voids the older links: two links used at once leave one new token and one LINK_INVALID, never a token already dead', async () => {
    const email = `twolinks-${t.prefix}@example.com`
    const a = await t.signup(email)
    t.clock.advance(61_000)
    const code = (link: string) => /code=([A-Za-z0-9_-]{43})/.exec(link)![1]!
    const first = code(await mailedLink(email))
    t.clock.advance(61_000) // the owner asked again a minute later: two live links
    const second = code(await mailedLink(email))
    // Both confirm pages submitted at once (two tabs, or both mails opened).
    const pages = await Promise.all([postForm(t, '/rotate', { code: first }), postForm(t, '/rotate', { code: second })])
    const tokens = pages.map((p) => /id="token">(sk_[A-Za-z0-9_-]{43})</.exec(p.text)?.[1]).filter((x): x is string => !!x)
    expect(tokens).toHaveLength(1)
    expect(pages.map((p) => p.status).sort()).toEqual([200, 400])
    expect(pages.find((p) => p.status === 400)!.text).toContain('LINK_INVALID')
    expect((await t.req('GET', '/v1/balance', { token: tokens[0] })).status).toBe(200)
    expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(401)
  })

  test('a link mailed before a completed recovery no longer works after it; one mailed after does', async () => {
    const email = `stale-${t.prefix}@example.com`
    await t.signup(email)
    t.clock.advance(61_000)
    const code = (link: string) => /code=([A-Za-z0-9_-]{43})/.exec(link)![1]!
    const older = code(await mailedLink(email))
    t.clock.advance(61_000)
    const used = await postForm(t, '/rotate', { code: code(await mailedLink(email)) })
    expect(used.status).toBe(200)
    const recovered = /id="token">(sk_[A-Za-z0-9_-]{43})</.exec(used.text)![1]!
    // The older mail, still in the inbox and inside its 10 minutes, cannot take the account again.
    expect((await get(t, `/rotate?code=${older}`, { accept: 'application/json' })).body.error).toBe('LINK_INVALID')
    const late = await postForm(t, '/rotate', { code: older }, { accept: 'application/json' })
    expect(late.body).toMatchObject({ error: 'LINK_INVALID', renew_via: 'POST /v1/token/rotate {"email"}' })
    expect((await t.req('GET', '/v1/balance', { token: recovered })).status).toBe(200)
    t.clock.advance(61_000)
    const fresh = await postForm(t, '/rotate', { code: code(await mailedLink(email)) })
    expect(fresh.status).toBe(200)
    expect((await t.req('GET', '/v1/balance', { token: recovered })).status).toBe(401)
  })

  test('a rotation admitted with the old token before a recovery does not outlive it: it is refused, the recovered token stays the owner', async () => {
    const email = `race-${t.prefix}@example.com`
    const stolen = await t.signup(email)

    // Hold the stolen token's rotation right after its admission (authorize.lua), at its first write
    // (the new token's lookup key): the window before the owner swap, widened for the test.
    const { atWrite, release, restore } = holdFirstTokenWrite()
    try {
      const rotation = t.req('POST', '/v1/token/rotate', { token: stolen.token })
      await atWrite

      // Meanwhile the owner recovers by e-mail.
      const code = /code=([A-Za-z0-9_-]{43})/.exec(await mailedLink(email))![1]!
      const page = await postForm(t, '/rotate', { code })
      expect(page.status).toBe(200)
      const recovered = /id="token">(sk_[A-Za-z0-9_-]{43})</.exec(page.text)![1]!
      expect((await t.req('GET', '/v1/balance', { token: recovered })).status).toBe(200)

      release()
      const r = await rotation
      // The rotation was admitted with a token the recovery has since replaced: nothing minted from it.
      expect(r.status).toBe(401)
      expect(r.body?.token).toBeUndefined()
      expect((await t.req('GET', '/v1/balance', { token: recovered })).status).toBe(200)
      expect((await t.req('GET', '/v1/balance', { token: stolen.token })).status).toBe(401)
    } finally {
      restore()
    }
  })

  test('a recovery that loses its swap to a rotation made meanwhile reads the owner again and replaces that token too', async () => {
    const email = `race2-${t.prefix}@example.com`
    const stolen = await t.signup(email)
    const code = /code=([A-Za-z0-9_-]{43})/.exec(await mailedLink(email))![1]!

    // Hold the recovery after it read the owner, at its new token's lookup key.
    const { atWrite, release, restore } = holdFirstTokenWrite()
    try {
      const recovery = postForm(t, '/rotate', { code })
      await atWrite
      // Meanwhile the stolen token rotates, and completes first.
      const rotated = await t.req('POST', '/v1/token/rotate', { token: stolen.token })
      expect(rotated.status).toBe(200)
      release()
      const page = await recovery
      expect(page.status).toBe(200)
      const recovered = /id="token">(sk_[A-Za-z0-9_-]{43})</.exec(page.text)![1]!
      expect((await t.req('GET', '/v1/balance', { token: recovered })).status).toBe(200)
      expect((await t.req('GET', '/v1/balance', { token: rotated.body.token })).status).toBe(401)
      expect((await t.req('GET', '/v1/balance', { token: stolen.token })).status).toBe(401)
    } finally {
      restore()
    }
  })
})

/**
 * Holds the first write of a new token's lookup key (`…:tok:…`) until released: the window between
 * a rotation's or a recovery's admission and its owner swap, widened for a test.
 */
function holdFirstTokenWrite() {
  const redis = t.s.ctx.redis as any
  const origSet = redis.set.bind(redis)
  let release!: () => void
  const gate = new Promise<void>((r) => (release = r))
  let reached!: () => void
  const atWrite = new Promise<void>((r) => (reached = r))
  let armed = true
  redis.set = async (...args: any[]) => {
    if (armed && typeof args[0] === 'string' && args[0].includes(':tok:')) {
      armed = false
      reached()
      await gate
    }
    return origSet(...args)
  }
  return {
    atWrite,
    release,
    restore: () => {
      release()
      redis.set = origSet
    },
  }
}
