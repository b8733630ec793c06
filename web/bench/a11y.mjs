// Accessibility check of hearth's web client with axe-core in Debian's chromium.
// Usage: node bench/a11y.mjs <server url> [screenshot folder]
// The server must run the development realm with its history (`hearth serve --dev`).
// Runs axe on each main screen in each theme (the message lists also at a series of
// scroll positions), prints every violation (impact, rule,
// target, help), writes a screenshot per screen and theme plus report.json, and exits
// with 1 when any violation is serious or critical.

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { Server, devLogin, go, png, until } from '../e2e/lib.mjs';

const url = process.argv[2];
if (!url) {
  console.error('usage: node bench/a11y.mjs <server url> [screenshot folder]');
  process.exit(2);
}
const out = resolve(process.argv[3] ?? '../target/web-a11y');
mkdirSync(out, { recursive: true });
const server = new Server(url);
const HAMLET = 'hamlet@zulip.com';
const OTHELLO = 'othello@zulip.com';
const VERONA = 3;
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
// Rules of WCAG 2.0/2.1/2.2 A and AA, and axe's best practices.
const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'];

const browser = await chromium.launch({
  executablePath: process.env.HEARTH_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox'],
});

const results = [];

async function audit(page, screen, theme) {
  await page.evaluate(axeSource);
  const r = await page.evaluate((tags) => window.axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] }), TAGS);
  const name = `${screen}--${theme}`;
  await page.screenshot({ path: join(out, `${name}.png`) });
  const violations = r.violations.map((v) => ({
    id: v.id,
    impact: v.impact,
    help: v.help,
    helpUrl: v.helpUrl,
    nodes: v.nodes.map((n) => ({ target: n.target.join(' '), summary: n.failureSummary, html: n.html.slice(0, 200) })),
  }));
  results.push({ screen, theme, violations });
  console.log(`${name}: ${violations.length === 0 ? 'no violations' : `${violations.length} rule(s) violated`}`);
  for (const v of violations) {
    console.log(`  [${v.impact}] ${v.id}: ${v.help} (${v.nodes.length} node(s)) ${v.helpUrl}`);
    for (const n of v.nodes.slice(0, 8)) console.log(`      ${n.target}`);
    if (v.nodes.length > 8) console.log(`      … and ${v.nodes.length - 8} more`);
  }
}

// Where the message list is audited again, scrolled (px above its end): what covers a
// row's targets depends on where the rows stand, so one position proves little.
const SCROLL_OFFSETS = Array.from({ length: 31 }, (_, i) => i * 20);

/**
 * Audits the open message list at each of `SCROLL_OFFSETS` (and its top), the axe rules
 * run on the message view only. One result per screen and theme, each violation's
 * targets marked with the offset it was found at.
 */
async function auditScrolled(page, screen, theme) {
  const found = new Map();
  let positions = 0;
  const max = await page.evaluate(() => { const el = document.querySelector('.message_list'); return el.scrollHeight - el.clientHeight; });
  const offsets = [...new Set([...SCROLL_OFFSETS.filter((o) => o <= max), max])];
  for (const off of offsets) {
    await page.evaluate((o) => { const el = document.querySelector('.message_list'); el.scrollTop = el.scrollHeight - el.clientHeight - o; }, off);
    // The scroll event's handler, then a frame for what it renders.
    await page.waitForTimeout(80);
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const r = await page.evaluate((tags) => window.axe.run(document.querySelector('.message-view'), { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] }), TAGS);
    positions++;
    for (const v of r.violations) {
      const e = found.get(v.id) ?? { id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl, nodes: [] };
      for (const n of v.nodes) e.nodes.push({ target: `@${off}px ${n.target.join(' ')}`, summary: n.failureSummary, html: n.html.slice(0, 200) });
      found.set(v.id, e);
    }
  }
  const violations = [...found.values()];
  const name = `${screen}-scrolled--${theme}`;
  results.push({ screen: `${screen}-scrolled`, theme, violations, positions });
  console.log(`${name}: ${positions} scroll positions, ${violations.length === 0 ? 'no violations' : `${violations.length} rule(s) violated`}`);
  for (const v of violations) {
    console.log(`  [${v.impact}] ${v.id}: ${v.help} (${v.nodes.length} node(s)) ${v.helpUrl}`);
    for (const n of v.nodes.slice(0, 8)) console.log(`      ${n.target}`);
    if (v.nodes.length > 8) console.log(`      … and ${v.nodes.length - 8} more`);
  }
}

/** Waits for a narrow's message list to show at least one message, then for rendering to settle. */
async function narrowReady(page) {
  await page.waitForSelector('.message-view .message_row', { timeout: 15000 });
  await page.waitForTimeout(400);
}

async function setScheme(value) {
  // color_scheme: 1 follows the system, 2 dark, 3 light (Zulip's values).
  await server.api(HAMLET, 'PATCH', 'settings', { color_scheme: value });
}

// Data the screens need: a topic in Verona and a direct-message conversation.
const othello = await server.api(OTHELLO, 'GET', 'users/me');
const hamlet = await server.api(HAMLET, 'GET', 'users/me');
const topic = 'accessibility check';
await server.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: VERONA, topic, content: 'Is the **client** usable with a screen reader? `code`, [a link](https://example.com) and a list:\n\n* one\n* two' });
await server.api(OTHELLO, 'POST', 'messages', { type: 'direct', to: [hamlet.user_id], content: 'A direct word about accessibility.' });
const topicHash = `#narrow/channel/${VERONA}-Verona/topic/${encodeURIComponent(topic).replace(/%/g, '.')}`;
// An image (for the lightbox) and an edited message (for its edit history) in the topic.
const upload = new FormData();
upload.append('file', new Blob([png()], { type: 'image/png' }), 'sunset.png');
const uploaded = await (await fetch(`${server.url}/api/v1/user_uploads`, {
  method: 'POST',
  headers: { Authorization: `Basic ${Buffer.from(`${OTHELLO}:${await server.key(OTHELLO)}`).toString('base64')}` },
  body: upload,
})).json();
if (uploaded.result !== 'success') throw new Error(`upload: ${JSON.stringify(uploaded)}`);
await server.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: VERONA, topic, content: `A picture: [sunset.png](${uploaded.url ?? uploaded.uri})` });
const draft = await server.api(HAMLET, 'POST', 'messages', { type: 'stream', to: VERONA, topic, content: 'A first version.' });
await server.api(HAMLET, 'PATCH', `messages/${draft.id}`, { content: 'A second version, edited.' });

/**
 * A modal dialog, opened from `opener` with the keyboard, must keep the focus inside
 * while Tab and Shift+Tab go round, close on Esc and give the focus back to `opener`.
 * What fails is recorded as a serious violation of the screen.
 */
async function checkDialog(page, screen, theme, opener, dialog) {
  const failures = [];
  const inside = () => page.evaluate(() => document.activeElement?.closest('[role="dialog"]') !== null);
  if (!(await inside())) failures.push('the focus did not move into the dialog');
  for (const key of ['Tab', 'Shift+Tab']) {
    for (let i = 0; i < 8; i++) {
      await page.keyboard.press(key);
      if (!(await inside())) {
        failures.push(`${key} took the focus out of the dialog (press ${i + 1})`);
        break;
      }
    }
  }
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached', timeout: 3000 }).catch(() => failures.push('Esc did not close the dialog'));
  if (!(await opener.evaluate((el) => el === document.activeElement))) failures.push('the focus did not return to what opened the dialog');
  const name = `${screen}--${theme}`;
  const violations = failures.map((f) => ({ id: 'dialog-keyboard', impact: 'serious', help: f, helpUrl: '', nodes: [{ target: '[role="dialog"]', summary: f, html: '' }] }));
  results.push({ screen: `${screen}-keyboard`, theme, violations });
  console.log(`${name}-keyboard: ${failures.length === 0 ? 'focus kept inside, Esc closes, focus returns' : failures.join('; ')}`);
}

// Themes: the system preference with the setting "follow the system", then the
// client's own setting against the opposite system preference.
const themes = [
  { name: 'light', media: 'light', scheme: 1 },
  { name: 'dark', media: 'dark', scheme: 1 },
  { name: 'setting-dark', media: 'light', scheme: 2 },
  { name: 'setting-light', media: 'dark', scheme: 3 },
];

try {
  // Server-rendered pages, logged out, in both system themes.
  for (const media of ['light', 'dark']) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 820 }, colorScheme: media, bypassCSP: true });
    const page = await context.newPage();
    await page.goto(`${server.url}/login/`);
    await page.waitForSelector('[name="username"]');
    await audit(page, 'login', media);
    await page.locator('[name="username"]').fill(HAMLET);
    await page.locator('[name="password"]').fill('not the password');
    await page.locator('[name="password"]').press('Enter');
    await page.waitForSelector('.error');
    await audit(page, 'login-error', media);
    await page.goto(`${server.url}/devlogin/`);
    await page.waitForSelector('[name="direct_email"]');
    await audit(page, 'devlogin', media);
    await page.goto(`${server.url}/accounts/password/reset/`);
    await page.waitForSelector('[name="email"]');
    await audit(page, 'password-reset', media);
    await page.locator('[name="email"]').fill(HAMLET);
    await page.locator('[name="email"]').press('Enter');
    // The link sent (a server with email), or the page that says it has none.
    await page.waitForSelector('main h1');
    await audit(page, 'password-reset-sent', media);
    await context.close();
  }
  // The same pages on a phone-sized screen.
  {
    const context = await browser.newContext({ viewport: { width: 390, height: 800 }, bypassCSP: true });
    const page = await context.newPage();
    await page.goto(`${server.url}/login/`);
    await page.waitForSelector('[name="username"]');
    await audit(page, 'login-phone', 'light');
    await page.goto(`${server.url}/accounts/password/reset/`);
    await page.waitForSelector('[name="email"]');
    await audit(page, 'password-reset-phone', 'light');
    await context.close();
  }

  for (const theme of themes) {
    await setScheme(theme.scheme);
    const { context, page } = await devLogin(browser, server, HAMLET, { colorScheme: theme.media, bypassCSP: true });
    await page.emulateMedia({ colorScheme: theme.media });
    const want = theme.scheme === 2 ? 'dark' : theme.scheme === 3 ? 'light' : theme.media;
    await until(() => page.evaluate((t) => document.documentElement.dataset.theme === t, want), `data-theme=${want}`);

    await go(page, server, '#recent');
    await page.waitForSelector('.recent-view .recent-table tr', { timeout: 15000 });
    await page.waitForTimeout(300);
    await audit(page, 'recent', theme.name);

    await go(page, server, '#inbox');
    await page.waitForSelector('.inbox-view');
    await page.waitForTimeout(300);
    await audit(page, 'inbox', theme.name);

    await go(page, server, '#feed');
    await narrowReady(page);
    await audit(page, 'feed', theme.name);
    await auditScrolled(page, 'feed', theme.name);

    await go(page, server, `#narrow/channel/${VERONA}-Verona`);
    await narrowReady(page);
    await audit(page, 'channel', theme.name);
    await auditScrolled(page, 'channel', theme.name);

    await go(page, server, topicHash);
    await narrowReady(page);
    await audit(page, 'topic', theme.name);

    // The image shown large, opened from its preview with the keyboard.
    const preview = page.locator('.message_row .message_inline_image a').last();
    await preview.waitFor({ timeout: 15000 });
    await preview.focus();
    await page.keyboard.press('Enter');
    const lightbox = page.getByRole('dialog', { name: 'sunset.png' });
    await lightbox.locator('figure.lightbox img').waitFor();
    await page.waitForTimeout(300);
    await audit(page, 'lightbox', theme.name);
    await checkDialog(page, 'lightbox', theme.name, preview, lightbox);

    // A message's edit history, opened from its "edited" marker.
    const marker = page.locator('.message_row .message_edit_notice').last();
    await marker.focus();
    await page.keyboard.press('Enter');
    const history = page.getByRole('dialog', { name: 'Message edit history' });
    await history.locator('.edit-version').nth(1).waitFor();
    await page.waitForTimeout(300);
    await audit(page, 'edit-history', theme.name);
    await checkDialog(page, 'edit-history', theme.name, marker, history);

    await page.locator('.compose-start').first().click();
    await page.waitForSelector('textarea.compose-textarea');
    await page.locator('textarea.compose-textarea').fill('Drafting a reply with **markdown**');
    await page.waitForTimeout(200);
    await audit(page, 'compose', theme.name);
    await page.locator('textarea.compose-textarea').fill('');
    await page.keyboard.press('Escape');

    await go(page, server, `#narrow/dm/${othello.user_id}-Othello`);
    await narrowReady(page);
    await audit(page, 'dm', theme.name);

    await go(page, server, '#feed');
    await narrowReady(page);
    await page.keyboard.press('/');
    await page.keyboard.type('accessibility');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Search results' }).waitFor();
    await narrowReady(page);
    await audit(page, 'search', theme.name);

    await go(page, server, '#settings/profile');
    await page.waitForSelector('[role="tabpanel"]');
    await page.waitForTimeout(300);
    await audit(page, 'settings-profile', theme.name);

    await page.getByRole('tab', { name: 'Preferences' }).click();
    await page.waitForSelector('#panel-preferences');
    await page.waitForTimeout(300);
    await audit(page, 'settings-preferences', theme.name);

    await go(page, server, '#channels');
    await page.waitForSelector('.channel-browser');
    await page.waitForTimeout(300);
    await audit(page, 'channels', theme.name);

    await go(page, server, '#keyboard-shortcuts');
    await page.waitForTimeout(400);
    await audit(page, 'shortcuts', theme.name);

    await context.close();
  }
} finally {
  await setScheme(1).catch(() => {});
  await browser.close();
}

writeFileSync(join(out, 'report.json'), JSON.stringify(results, null, 2));
// Summary: each rule once, with the screens and themes it fails on.
const byRule = new Map();
for (const { screen, theme, violations } of results) {
  for (const v of violations) {
    const e = byRule.get(v.id) ?? { impact: v.impact, help: v.help, where: [], targets: new Set() };
    e.where.push(`${screen}/${theme}`);
    for (const n of v.nodes) e.targets.add(n.target);
    byRule.set(v.id, e);
  }
}
console.log(`\n${results.length} audits; ${byRule.size} rule(s) violated`);
for (const [id, e] of byRule) {
  console.log(`[${e.impact}] ${id}: ${e.help}\n    on ${e.where.join(', ')}\n    targets: ${[...e.targets].slice(0, 12).join(' | ')}${e.targets.size > 12 ? ` | … ${e.targets.size - 12} more` : ''}`);
}
const serious = [...byRule.values()].filter((e) => e.impact === 'serious' || e.impact === 'critical');
console.log(`screenshots and report.json in ${out}`);
process.exit(serious.length > 0 ? 1 : 0);
