// Helpers for the end-to-end flows: a hearth server's API (for setting up
// users and data) and browser sessions that log in like a person does.

import { deflateSync } from 'node:zlib';

export class Server {
  constructor(url) {
    this.url = url.replace(/\/$/, '');
    this.keys = new Map();
  }

  async key(email) {
    if (!this.keys.has(email)) {
      const res = await fetch(`${this.url}/api/v1/dev_fetch_api_key`, {
        method: 'POST',
        body: new URLSearchParams({ username: email }),
      });
      const body = await res.json();
      if (body.result !== 'success') throw new Error(`dev_fetch_api_key ${email}: ${JSON.stringify(body)}`);
      this.keys.set(email, body.api_key);
    }
    return this.keys.get(email);
  }

  /** Calls /api/v1/<path> as `email`; objects in params are sent as JSON. */
  async api(email, method, path, params = {}) {
    const auth = `Basic ${Buffer.from(`${email}:${await this.key(email)}`).toString('base64')}`;
    const form = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) form.set(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
    const get = method === 'GET';
    const res = await fetch(`${this.url}/api/v1/${path}${get ? `?${form}` : ''}`, {
      method,
      headers: { Authorization: auth },
      body: get ? undefined : form,
    });
    const body = await res.json();
    if (body.result !== 'success') throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
    return body;
  }
}

/** Polls `fn` until it returns a truthy value or `ms` pass. */
export async function until(fn, what, ms = 10000) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : last})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A browser context logged in through /devlogin/ as `email`. */
export async function devLogin(browser, server, email, opts = {}, setup = undefined) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 820 }, ...opts });
  const page = await context.newPage();
  watch(page);
  setup?.(page);
  await page.goto(`${server.url}/devlogin/`);
  await page.locator(`[name="direct_email"][value="${email}" i]`).first().click();
  // The home view the user's setting names: the Inbox, recent conversations or the feed.
  await page.waitForSelector('.inbox-view, .recent-view, .message-view', { timeout: 15000 });
  return { context, page };
}

const errors = new WeakMap();
/** Records uncaught page errors and CSP violations; `assertClean` fails on any. */
export function watch(page) {
  const list = [];
  errors.set(page, list);
  page.on('pageerror', (e) => list.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/.test(m.text())) list.push(`csp: ${m.text()}`);
  });
  page.on('dialog', (d) => void d.accept());
}

export function assertClean(page) {
  const list = errors.get(page) ?? [];
  if (list.length > 0) throw new Error(list.join('\n'));
}

export async function go(page, server, hash) {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForTimeout(50);
}

/** Sends a message through the compose box of the current view. */
export async function send(page, text) {
  if (await page.locator('textarea.compose-textarea').count() === 0) {
    await page.locator('.compose-start').click();
  }
  const box = page.locator('textarea.compose-textarea');
  await box.fill(text);
  await box.press('Control+Enter');
  await until(async () => (await box.inputValue()) === '', 'the compose box to empty after sending');
}

export function messageRow(page, text) {
  return page.locator('.message_row', { hasText: text });
}

/** A small valid PNG (solid colour), made here rather than read from a file. */
export function png(width = 24, height = 16, rgb = [220, 80, 40]) {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const c = Buffer.alloc(4);
    c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) raw.set(rgb, y * (width * 3 + 1) + 1 + x * 3);
  }
  return Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
