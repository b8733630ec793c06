// End-to-end flows of hearth's web client in Debian's chromium.
// Usage: node e2e/run.mjs <server url> [screenshot folder]
// The server must run the development realm with its history (`hearth serve --dev`).
// HEARTH_E2E_BIN (a hearth binary) and HEARTH_E2E_DATA (an empty folder) let the
// flow `server-restart-mid-session` run a server of its own, to kill and restart it;
// without them that flow is skipped, and says so.

import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { Server, assertClean, devLogin, go, messageRow, png, send, until, watch } from './lib.mjs';

const url = process.argv[2];
if (!url) {
  console.error('usage: node e2e/run.mjs <server url> [screenshot folder]');
  process.exit(2);
}
const out = resolve(process.argv[3] ?? 'e2e/out');
mkdirSync(out, { recursive: true });
const server = new Server(url);
const only = process.env.E2E_ONLY;
const HAMLET = 'hamlet@zulip.com';
const OTHELLO = 'othello@zulip.com';
const IAGO = 'iago@zulip.com';
const VERONA = 3;
const EVIL = '<img src=x onerror="window.__pwned=1">';
const EVIL2 = '<script>window.__pwned=2</script>';
const unique = Date.now().toString(36);

const browser = await chromium.launch({
  executablePath: process.env.HEARTH_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox'],
});

const flows = [];
const flow = (name, fn) => flows.push({ name, fn });
const shot = (page, name) => page.screenshot({ path: join(out, `${name}.png`) });

async function noScriptRan(page) {
  const v = await page.evaluate(() => window.__pwned);
  if (v !== undefined) throw new Error(`injected script ran (${v})`);
}

flow('devlogin-and-logout', async () => {
  const { context, page } = await devLogin(browser, server, HAMLET);
  await page.locator('.left-sidebar').getByText('Verona', { exact: true }).waitFor();
  const title = await page.title();
  if (!/ - hearth$/.test(title)) throw new Error(`title ${title}`);
  await shot(page, 'devlogin');
  await page.getByRole('button', { name: /personal menu/ }).click();
  await page.getByRole('menuitem', { name: 'Log out' }).click();
  await page.waitForURL(/\/login\//);
  await page.goto(`${server.url}/`);
  await page.waitForURL(/\/login\//);
  await shot(page, 'logged-out');
  await context.close();
});

flow('password-login-lands-on-welcome', async () => {
  const email = `e2e-${unique}@zulip.com`;
  const password = `hearth-e2e-${unique}-Pw!`;
  await server.api(IAGO, 'POST', 'users', { email, password, full_name: 'Rosalind E2E' });
  const context = await browser.newContext({ viewport: { width: 1280, height: 820 } });
  const page = await context.newPage();
  watch(page);
  await page.goto(`${server.url}/`);
  await page.waitForURL(/\/login\//);
  await page.locator('[name="username"]').fill(email);
  await page.locator('[name="password"]').fill(password);
  await page.locator('[name="password"]').press('Enter');
  // A new user lands on the home view, the Inbox by default, whose first conversation
  // is the Welcome Bot's unread direct message; it opens on the message.
  const inbox = page.locator('.inbox-view');
  await inbox.waitFor();
  if (!/\/(#)?$/.test(page.url())) throw new Error(`the landing view is at ${page.url()}`);
  const welcome = inbox.locator('.inbox-row', { hasText: 'Welcome Bot' });
  await welcome.waitFor();
  if ((await welcome.locator('.unread_count').textContent()).trim() === '') throw new Error('the Welcome Bot shows no unread count');
  await shot(page, 'password-login-welcome');
  await welcome.click();
  await messageRow(page, 'Welcome Bot').first().waitFor();
  await shot(page, 'password-login-welcome-message');
  assertClean(page);
  await context.close();
});

flow('home-view-follows-the-setting', async () => {
  // Prospero's home view: the Inbox by default; then, chosen in the preferences,
  // recent conversations and the combined feed, for Esc, the realm's link and a new load.
  const PROSPERO = 'prospero@zulip.com';
  await server.api(PROSPERO, 'PATCH', 'settings', { web_home_view: 'inbox' });
  const { context, page } = await devLogin(browser, server, PROSPERO);
  await page.locator('.inbox-view').waitFor();
  const home = async (view, heading) => {
    await page.locator(view).waitFor();
    await page.getByRole('heading', { name: heading, exact: true }).waitFor();
  };
  for (const [value, view, heading] of [['recent_topics', '.recent-view', 'Recent conversations'], ['all_messages', '.message-view', 'Combined feed'], ['inbox', '.inbox-view', 'Inbox']]) {
    await go(page, server, '#settings/preferences');
    await page.getByLabel('Home view').selectOption(value);
    await until(async () => (await server.api(PROSPERO, 'POST', 'register', { fetch_event_types: ['user_settings'] })).user_settings.web_home_view === value, `web_home_view ${value} saved`);
    await page.keyboard.press('Escape');
    await page.getByRole('dialog', { name: 'Settings' }).waitFor({ state: 'detached' });
    // Esc from a channel goes home.
    await go(page, server, `#narrow/channel/${VERONA}-Verona`);
    await page.getByRole('heading', { name: '#Verona' }).waitFor();
    await page.evaluate(() => { if (document.activeElement instanceof HTMLElement) document.activeElement.blur(); });
    await page.keyboard.press('Escape');
    await home(view, heading);
    // So does the realm's name in the top bar.
    await go(page, server, value === 'recent_topics' ? '#inbox' : '#recent');
    await page.locator(value === 'recent_topics' ? '.inbox-view' : '.recent-view').waitFor();
    await page.locator('.top-bar .realm-name').click();
    await home(view, heading);
    // And a page loaded without a fragment.
    await page.goto(`${server.url}/`);
    await home(view, heading);
    if (value === 'recent_topics') await shot(page, 'home-view-recent');
  }
  assertClean(page);
  await context.close();
});

flow('realtime-channel-and-dm-with-typing', async () => {
  const a = await devLogin(browser, server, HAMLET);
  const b = await devLogin(browser, server, OTHELLO);
  const topic = `e2e live ${unique}`;
  const hash = `#narrow/channel/${VERONA}-Verona/topic/${encodeURIComponent(topic).replace(/%/g, '.')}`;
  await go(a.page, server, hash);
  await go(b.page, server, hash);
  await a.page.locator('.compose-start').click();
  await a.page.locator('textarea.compose-textarea').pressSequentially('Are you th', { delay: 30 });
  await b.page.getByText('King Hamlet is typing…').waitFor({ timeout: 15000 });
  await shot(b.page, 'typing-visible');
  await a.page.locator('textarea.compose-textarea').pressSequentially('ere, Othello?', { delay: 10 });
  await a.page.locator('textarea.compose-textarea').press('Control+Enter');
  await messageRow(b.page, 'Are you there, Othello?').waitFor();
  await send(b.page, 'Right here, my lord.');
  await messageRow(a.page, 'Right here, my lord.').waitFor();
  await shot(a.page, 'realtime-channel');
  // Direct messages, both ways.
  const me = await server.api(HAMLET, 'GET', 'users/me');
  const oth = await server.api(OTHELLO, 'GET', 'users/me');
  await go(a.page, server, `#narrow/dm/${oth.user_id}-Othello`);
  await go(b.page, server, `#narrow/dm/${me.user_id}-King-Hamlet`);
  await send(a.page, `A private word ${unique}`);
  await messageRow(b.page, `A private word ${unique}`).waitFor();
  await send(b.page, `Speak ${unique}`);
  await messageRow(a.page, `Speak ${unique}`).waitFor();
  await shot(b.page, 'realtime-dm');
  assertClean(a.page);
  assertClean(b.page);
  await a.context.close();
  await b.context.close();
});

flow('unread-counts-fall-when-read', async () => {
  const { context, page } = await devLogin(browser, server, HAMLET);
  const topic = `e2e unread ${unique}`;
  await go(page, server, '#recent');
  const channelCount = async () => Number(await page.locator('.channel-list > li > a', { hasText: 'Verona' }).locator('.unread_count')
    .textContent({ timeout: 500 }).catch(() => '0'));
  const topicCount = async () => Number(await page.locator('.recent-table tr', { hasText: topic }).locator('.unread_count')
    .textContent({ timeout: 500 }).catch(() => '0'));
  for (let i = 1; i <= 3; i++) {
    await server.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: VERONA, topic, content: `unread number ${i}` });
  }
  await until(async () => (await topicCount()) === 3, 'the new topic to show 3 unread');
  const before = await channelCount();
  if (before < 3) throw new Error(`Verona shows ${before} unread`);
  await shot(page, 'unread-before');
  await go(page, server, `#narrow/channel/${VERONA}-Verona/topic/${encodeURIComponent(topic).replace(/%/g, '.')}`);
  await messageRow(page, 'unread number 3').waitFor();
  await until(async () => (await channelCount()) === before - 3, `Verona's unread count to fall to ${before - 3}`);
  await go(page, server, '#recent');
  await until(async () => (await topicCount()) === 0, 'the topic to show no unread');
  await shot(page, 'unread-after');
  assertClean(page);
  await context.close();
});

flow('edit-delete-react-star-move', async () => {
  const { context, page } = await devLogin(browser, server, HAMLET);
  const topic = `e2e actions ${unique}`;
  await go(page, server, `#narrow/channel/${VERONA}-Verona/topic/${encodeURIComponent(topic).replace(/%/g, '.')}`);
  await send(page, `first draft ${unique}`);
  await send(page, `doomed ${unique}`);
  const id = await messageRow(page, `first draft ${unique}`).getAttribute('data-message-id');
  const row = page.locator(`.message_row[data-message-id="${id}"]`);
  await row.hover();
  await row.getByRole('button', { name: 'Edit message' }).click();
  const editor = row.locator('textarea');
  await until(async () => (await editor.inputValue()) === `first draft ${unique}`, 'the raw text in the editor');
  await editor.fill(`final text ${unique}`);
  await row.getByRole('button', { name: 'Save' }).click();
  const edited = messageRow(page, `final text ${unique}`);
  await edited.getByText('(edited)').waitFor();
  // The "edited" marker opens the message's versions, oldest first, changes marked.
  await edited.getByRole('button', { name: '(edited)' }).click();
  const history = page.getByRole('dialog', { name: 'Message edit history' });
  await history.locator('.edit-version').nth(1).waitFor();
  const versions = await history.locator('.edit-version').allTextContents();
  if (versions.length !== 2 || !versions[0].includes('Posted by King Hamlet') || !versions[0].includes(`first draft ${unique}`)
    || !versions[1].includes('Edited by King Hamlet')) throw new Error(`edit history: ${JSON.stringify(versions)}`);
  await history.locator('.highlight_text_inserted', { hasText: 'final' }).first().waitFor();
  await shot(page, 'edit-history');
  await page.keyboard.press('Escape');
  await history.waitFor({ state: 'detached' });
  await edited.hover();
  await edited.getByRole('button', { name: 'Add emoji reaction' }).click();
  await page.getByRole('dialog', { name: 'Add emoji reaction' }).getByRole('searchbox').fill('octopus');
  await page.getByRole('button', { name: 'octopus' }).first().click();
  await edited.locator('.message_reaction.reacted').waitFor();
  await edited.hover();
  await edited.getByRole('button', { name: 'Star this message' }).click();
  await edited.getByRole('button', { name: 'Unstar this message' }).waitFor();
  const starred = await server.api(HAMLET, 'GET', 'messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: [{ operator: 'is', operand: 'starred' }] });
  if (!starred.messages.some((m) => m.content.includes(`final text ${unique}`))) throw new Error('star not saved');
  const doomed = messageRow(page, `doomed ${unique}`);
  await doomed.hover();
  await doomed.getByRole('button', { name: 'Delete message' }).click();
  await until(async () => (await messageRow(page, `doomed ${unique}`).count()) === 0, 'the deleted message to leave');
  await shot(page, 'edit-react-star');
  await edited.hover();
  await edited.getByRole('button', { name: 'Move messages' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('Topic', { exact: true }).fill(`${topic} moved`);
  await dialog.getByRole('button', { name: 'Move' }).click();
  await go(page, server, `#narrow/channel/${VERONA}-Verona/topic/${encodeURIComponent(`${topic} moved`).replace(/%/g, '.')}`);
  await messageRow(page, `final text ${unique}`).waitFor();
  await page.locator('.left-sidebar .topic-list').getByText(`${topic} moved`).waitFor();
  await shot(page, 'moved-topic');
  assertClean(page);
  await context.close();
});

flow('upload-image', async () => {
  const { context, page } = await devLogin(browser, server, HAMLET);
  const topic = `e2e upload ${unique}`;
  await go(page, server, `#narrow/channel/${VERONA}-Verona/topic/${encodeURIComponent(topic).replace(/%/g, '.')}`);
  await page.locator('.compose-start').click();
  await page.locator('.compose input[type=file]').setInputFiles({ name: 'sunset.png', mimeType: 'image/png', buffer: png() });
  const box = page.locator('textarea.compose-textarea');
  await until(async () => /\[sunset\.png\]\(\/user_uploads\/.+\)/.test(await box.inputValue()), 'the upload link in the compose box');
  await box.press('Control+Enter');
  const img = page.locator('.message_row .message_inline_image img, .message_row img.inline-image').last();
  await img.waitFor();
  await until(() => img.evaluate((el) => el.complete && el.naturalWidth > 0), 'the image to load');
  await page.waitForTimeout(500);
  if (await page.locator('.topic-list li.active .unread_count').count() !== 0) throw new Error('an own message counts as unread');
  await shot(page, 'upload-image');
  // A click on the preview shows the image large, over the page, without leaving it.
  await img.click();
  const box2 = page.getByRole('dialog', { name: 'sunset.png' });
  const large = box2.locator('figure.lightbox img');
  await large.waitFor();
  await until(() => large.evaluate((el) => el.complete && el.naturalWidth === 24 && el.getBoundingClientRect().width > 100), 'the image shown large');
  await box2.getByRole('link', { name: 'Open the original' }).waitFor();
  await shot(page, 'image-lightbox');
  await page.keyboard.press('Escape');
  await box2.waitFor({ state: 'detached' });
  assertClean(page);
  await context.close();
});

flow('inbox', async () => {
  // Cordelia opens the Inbox with nothing unread; then a topic of two messages, a topic
  // with a mention of her and a direct message reach her, live.
  const CORDELIA = 'cordelia@zulip.com';
  const cordelia = await server.api(CORDELIA, 'GET', 'users/me');
  const { context, page } = await devLogin(browser, server, CORDELIA);
  // She lands on the Inbox (her home view); it is opened again from another view.
  await page.locator('.inbox-view').waitFor();
  await go(page, server, '#feed');
  await page.locator('.message-view').waitFor();
  await page.locator('.left-sidebar .views').getByRole('link', { name: /^Inbox/ }).click();
  const inbox = page.locator('.inbox-view');
  await inbox.waitFor();
  if (!page.url().endsWith('#inbox')) throw new Error(`the Inbox is at ${page.url()}`);
  await server.api(CORDELIA, 'POST', 'mark_all_as_read');
  await inbox.getByText('There are no unread messages in your inbox.').waitFor();
  const topicA = `e2e inbox plans ${unique}`;
  const topicB = `e2e inbox review ${unique}`;
  await server.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: VERONA, topic: topicA, content: 'first plan' });
  await server.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: VERONA, topic: topicA, content: 'second plan' });
  await server.api(IAGO, 'POST', 'messages', { type: 'stream', to: VERONA, topic: topicB, content: `@**${cordelia.full_name}** please review` });
  await server.api(OTHELLO, 'POST', 'messages', { type: 'direct', to: [cordelia.user_id], content: `a word in private ${unique}` });
  const rowOf = (text) => inbox.locator('.inbox-row', { hasText: text });
  const count = async (loc) => (await loc.locator('.unread_count').textContent()).trim();
  await rowOf(topicB).waitFor();
  const dm = rowOf('Othello');
  if (await count(dm) !== '1') throw new Error(`the DM shows ${await count(dm)} unread`);
  if (await count(rowOf(topicA)) !== '2') throw new Error(`${topicA} shows ${await count(rowOf(topicA))} unread`);
  if (await count(rowOf(topicB)) !== '1' || await rowOf(topicB).locator('.inbox-mention').count() !== 1) throw new Error('the mention is not marked');
  const verona = inbox.getByRole('button', { name: /^Verona/ });
  if (await count(verona) !== '3') throw new Error(`Verona shows ${await count(verona)} unread`);
  // Newest topic first; direct messages above the channels.
  const names = await inbox.locator('.inbox-row .inbox-name, .inbox-toggle .inbox-name').allTextContents();
  if (names.indexOf('Direct messages') !== 0 || names.indexOf(topicB) > names.indexOf(topicA)) throw new Error(`Inbox order: ${JSON.stringify(names)}`);
  await shot(page, 'inbox');
  // The keyboard: the first row has the focus; the arrows walk the rows; Enter on a
  // group folds and unfolds it, and on a conversation opens it.
  const focused = () => page.evaluate(() => document.activeElement?.textContent ?? '');
  // (The rows came in while the view was open: the focus is on one of them.)
  await until(async () => (await focused()) !== '' && await page.evaluate(() => document.activeElement?.closest('.inbox-view') !== null), 'the focus on a row');
  await page.keyboard.press('Home');
  if (!(await focused()).startsWith('Direct messages')) throw new Error(`Home focused ${await focused()}`);
  await page.keyboard.press('ArrowDown');
  if (!(await focused()).includes('Othello')) throw new Error(`ArrowDown focused ${await focused()}`);
  while (!(await focused()).startsWith('Verona')) await page.keyboard.press('j');
  await page.keyboard.press('Enter');
  await until(async () => (await verona.getAttribute('aria-expanded')) === 'false' && (await rowOf(topicA).count()) === 0, 'Verona folded');
  await shot(page, 'inbox-folded');
  // The fold outlives the page.
  await page.reload();
  await inbox.waitFor();
  await inbox.locator('.inbox-row', { hasText: 'Othello' }).waitFor();
  if (await verona.getAttribute('aria-expanded') !== 'false' || await rowOf(topicA).count() !== 0) throw new Error('Verona unfolded by a reload');
  await until(async () => (await focused()) !== '', 'the focus on a row after the reload');
  while (!(await focused()).startsWith('Verona')) await page.keyboard.press('j');
  await page.keyboard.press('Enter');
  await rowOf(topicA).waitFor();
  while (!(await focused()).includes(topicA)) await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await messageRow(page, 'second plan').waitFor();
  if (!page.url().includes(encodeURIComponent(topicA).replace(/%/g, '.'))) throw new Error(`Enter opened ${page.url()}`);
  // Read there, the topic leaves the Inbox; the others stay.
  await page.keyboard.press('Shift+I');
  await inbox.waitFor();
  // Opened again, the Inbox gives the focus to its first row.
  await until(async () => (await focused()).startsWith('Direct messages'), 'the focus on the first row');
  await until(async () => (await rowOf(topicA).count()) === 0, `${topicA} to leave the Inbox`);
  await rowOf(topicB).waitFor();
  await shot(page, 'inbox-after-reading');
  // The filter box: a topic's name, in another case, keeps its channel and that topic;
  // a participant's name keeps the conversation; Esc clears it.
  const filter = inbox.getByRole('searchbox', { name: /^Filter conversations/ });
  await filter.click();
  await filter.fill(`INBOX REVIEW ${unique}`.toUpperCase());
  await until(async () => (await rowOf('Othello').count()) === 0 && (await rowOf(topicB).count()) === 1, 'the filter to keep the topic alone');
  if (await verona.count() !== 1) throw new Error('the filter hid the channel of a topic it keeps');
  await shot(page, 'inbox-filtered');
  await filter.fill('othel');
  await until(async () => (await rowOf('Othello').count()) === 1 && (await rowOf(topicB).count()) === 0, 'the filter to keep the conversation alone');
  await page.keyboard.press('Escape');
  await until(async () => (await filter.inputValue()) === '' && (await rowOf(topicB).count()) === 1 && (await rowOf('Othello').count()) === 1, 'Esc to clear the filter');
  // The Inbox's link clicked while it is open: the focus goes to its first row.
  await filter.click();
  await page.locator('.left-sidebar .views').getByRole('link', { name: /^Inbox/ }).click();
  await until(async () => (await focused()).startsWith('Direct messages'), 'the focus on the first row after the link');
  assertClean(page);
  await context.close();
});

flow('read-receipts', async () => {
  // King Hamlet reads Othello's message; Othello sees him among its readers, and not
  // himself.
  const topic = `e2e receipts ${unique}`;
  const sent = await server.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: VERONA, topic, content: `who read this ${unique}` });
  await server.api(HAMLET, 'POST', 'messages/flags', { messages: [sent.id], op: 'add', flag: 'read' });
  const { context, page } = await devLogin(browser, server, OTHELLO);
  await go(page, server, `#narrow/channel/${VERONA}-Verona/topic/${encodeURIComponent(topic).replace(/%/g, '.')}`);
  const row = messageRow(page, `who read this ${unique}`);
  await row.hover();
  await row.getByRole('button', { name: 'View read receipts' }).click();
  const dialog = page.getByRole('dialog', { name: 'Read receipts' });
  await dialog.locator('.read-receipts li', { hasText: 'King Hamlet' }).waitFor();
  if (await dialog.locator('.read-receipts li', { hasText: 'Othello' }).count() !== 0) throw new Error('the sender is listed among the readers');
  await shot(page, 'read-receipts');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  assertClean(page);
  await context.close();
});

flow('search-with-operators', async () => {
  const { context, page } = await devLogin(browser, server, HAMLET);
  const topic = `e2e search ${unique}`;
  await server.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: VERONA, topic, content: `the handkerchief is lost ${unique}` });
  await server.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: VERONA, topic, content: `nothing to see ${unique}` });
  await page.keyboard.press('/');
  await until(() => page.evaluate(() => document.activeElement?.id === 'search-input'), '/ to focus the search box');
  await page.keyboard.type(`channel:Verona topic:"${topic}" handkerchief`);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Search results' }).waitFor().catch(async (e) => {
    await shot(page, 'search-failed');
    throw e;
  });
  await messageRow(page, `the handkerchief is lost ${unique}`).waitFor();
  if (await messageRow(page, `nothing to see ${unique}`).count() !== 0) throw new Error('search returned a non-matching message');
  if (!/#narrow\/channel\/3-Verona\/topic\/.+\/search\/handkerchief/.test(page.url())) throw new Error(`URL ${page.url()}`);
  await shot(page, 'search');
  await page.locator('#search-input').fill(`sender:${OTHELLO} is:dm`);
  await page.locator('#search-input').press('Enter');
  await until(async () => page.url().includes('/sender/') && page.url().includes('/is/dm'), 'the sender narrow');
  assertClean(page);
  await context.close();
});

flow('script-injection-renders-as-text', async () => {
  const admin = IAGO;
  const channel = `e2e ${EVIL} ${unique}`.slice(0, 60);
  await server.api(admin, 'POST', 'users/me/subscriptions', {
    subscriptions: [{ name: channel, description: `desc ${EVIL2}` }],
    principals: [(await server.api(HAMLET, 'GET', 'users/me')).user_id],
  });
  const streams = await server.api(admin, 'GET', 'streams');
  const sid = streams.streams.find((s) => s.name === channel).stream_id;
  // Full names may not hold * ` \\ > " @, so this one is an unclosed tag.
  const evilName = 'Othello <img src=x onerror=window.__pwned=3 ';
  await server.api(OTHELLO, 'PATCH', 'settings', { full_name: evilName });
  await server.api(OTHELLO, 'POST', 'users/me/status', { status_text: `busy ${EVIL2}`.slice(0, 60) });
  const topic = `topic ${EVIL2}`.slice(0, 60);
  await server.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: sid, topic, content: `content ${EVIL} and ${EVIL2}` });
  const { context, page } = await devLogin(browser, server, HAMLET);
  await go(page, server, `#narrow/channel/${sid}`);
  await messageRow(page, 'content <img src=x').waitFor();
  await page.locator('.message_list .message_header').getByText(topic).waitFor();
  await page.locator('.narrow-header').getByText(`desc ${EVIL2}`).waitFor();
  await page.locator('.channel-list').getByText(channel).waitFor();
  await page.locator('.user-list').getByText(`busy ${EVIL2}`).waitFor();
  await page.locator('.user-list').getByText(evilName.trim()).waitFor();
  await messageRow(page, 'content <img src=x').locator('.sender_name', { hasText: evilName.trim() }).waitFor();
  // A file name and search text.
  await page.locator('.compose-start').click();
  await page.locator('.compose input[type=file]').setInputFiles({ name: `${EVIL}.txt`.replace(/\//g, ''), mimeType: 'text/plain', buffer: Buffer.from('hello') });
  await until(async () => /user_uploads/.test(await page.locator('textarea.compose-textarea').inputValue()), 'the upload link');
  await page.locator('textarea.compose-textarea').press('Control+Enter');
  await messageRow(page, 'onerror').last().waitFor();
  await page.locator('#search-input').fill(`${EVIL2} ${EVIL}`);
  await page.locator('#search-input').press('Enter');
  await page.getByRole('heading', { name: 'Search results' }).waitFor();
  await page.waitForTimeout(500);
  await go(page, server, `#narrow/channel/${sid}`);
  await messageRow(page, 'content <img src=x').waitFor();
  const injected = await page.evaluate(() => document.querySelectorAll('script:not([src]), img[src="x"], [onerror]').length);
  if (injected !== 0) throw new Error(`${injected} injected elements in the DOM`);
  await noScriptRan(page);
  await shot(page, 'injection-as-text');
  assertClean(page);
  await context.close();
  await server.api(OTHELLO, 'PATCH', 'settings', { full_name: 'Othello, the Moor of Venice' });
});

flow('user-card-from-a-sender', async () => {
  const { context, page } = await devLogin(browser, server, HAMLET);
  const topic = `e2e card ${unique}`;
  await server.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: VERONA, topic, content: `card ${unique}` });
  await go(page, server, `#narrow/channel/${VERONA}-Verona/topic/${encodeURIComponent(topic).replace(/%/g, '.')}`);
  const othello = (await server.api(HAMLET, 'GET', 'users')).members.find((u) => u.user_id === 12);
  await messageRow(page, `card ${unique}`).locator('.sender_name').click();
  const card = page.getByRole('dialog', { name: othello.full_name });
  await card.waitFor();
  const text = await card.textContent();
  for (const want of ['Role', 'Member', 'Presence', 'Local time', 'Send direct message', 'View messages']) {
    if (!text.includes(want)) throw new Error(`the user card lacks "${want}": ${text}`);
  }
  // Othello's address is hidden from Hamlet: the stand-in address is not shown.
  if (text.includes(othello.email)) throw new Error(`the user card shows the stand-in address ${othello.email}`);
  await shot(page, 'user-card');
  await card.getByRole('button', { name: 'View messages' }).click();
  await page.getByRole('heading', { name: `Messages sent by ${othello.full_name}` }).waitFor();
  await messageRow(page, `card ${unique}`).locator('.sender_name').click();
  await page.getByRole('dialog', { name: othello.full_name }).getByRole('button', { name: 'Send direct message' }).click();
  await page.getByRole('heading', { name: othello.full_name, exact: true }).waitFor();
  assertClean(page);
  await context.close();
});

flow('phone-and-dark-theme', async () => {
  const { context, page } = await devLogin(browser, server, HAMLET, { viewport: { width: 390, height: 800 }, colorScheme: 'dark' });
  if (await page.locator('.left-sidebar').isVisible()) throw new Error('the left sidebar should be collapsed on a phone');
  await page.getByRole('button', { name: 'Show channels' }).click();
  await page.locator('.left-sidebar').getByText('Verona', { exact: true }).waitFor();
  await shot(page, 'phone-sidebar-dark');
  await page.locator('.left-sidebar').getByText('Verona', { exact: true }).click();
  await page.getByRole('heading', { name: '#Verona' }).waitFor();
  await page.locator('.message_row').first().waitFor();
  if (await page.locator('.left-sidebar').isVisible()) throw new Error('choosing a channel should close the panel');
  // A tapped message shows its actions on a line of their own, over no text; no other
  // message shows them (the pointer left over another row is no hover on a phone).
  const tapped = page.locator('.message_row.include-sender').last();
  await tapped.locator('.message_content').click();
  await tapped.locator('.message-actions').waitFor();
  const overlaps = await page.evaluate(() => {
    const found = [];
    const bars = [...document.querySelectorAll('.message-actions')].filter((b) => b.getBoundingClientRect().height > 0);
    if (bars.length !== 1) found.push(`${bars.length} toolbars shown`);
    for (const bar of bars) {
      const b = bar.getBoundingClientRect();
      for (const t of document.querySelectorAll('.sender_name, .message_time, .message_content, .message_reactions')) {
        const r = t.getBoundingClientRect();
        if (r.height > 0 && b.left < r.right && r.left < b.right && b.top < r.bottom && r.top < b.bottom) found.push(`the toolbar covers ${t.className}: ${t.textContent}`);
      }
    }
    return found;
  });
  if (overlaps.length > 0) throw new Error(overlaps.join('\n'));
  await shot(page, 'phone-channel-dark');
  await page.keyboard.press('?');
  await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).waitFor();
  await shot(page, 'shortcuts');
  assertClean(page);
  await context.close();
});

flow('lost-event-queue-and-network', async () => {
  let queueId;
  const { context, page } = await devLogin(browser, server, HAMLET, {}, (p) => p.on('request', (r) => {
    const q = new URL(r.url()).searchParams.get('queue_id');
    if (r.url().includes('/json/events') && q) queueId = q;
  }));
  const topic = `e2e queue ${unique}`;
  await go(page, server, `#narrow/channel/${VERONA}-Verona/topic/${encodeURIComponent(topic).replace(/%/g, '.')}`);
  await until(() => queueId, 'an event poll');
  // The server forgets the queue: the client registers again without reloading.
  await page.evaluate(() => { window.__samePage = true; });
  await server.api(HAMLET, 'DELETE', 'events', { queue_id: queueId });
  await server.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: VERONA, topic, content: `after the queue was lost ${unique}` });
  await messageRow(page, `after the queue was lost ${unique}`).waitFor({ timeout: 20000 });
  // The network goes away and comes back: polling resumes.
  await context.setOffline(true);
  await page.getByText('Reconnecting…').waitFor({ timeout: 20000 });
  await server.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: VERONA, topic, content: `while offline ${unique}` });
  await context.setOffline(false);
  await messageRow(page, `while offline ${unique}`).waitFor({ timeout: 30000 });
  if (!(await page.evaluate(() => window.__samePage))) throw new Error('the page reloaded');
  await shot(page, 'reconnected');
  assertClean(page);
  await context.close();
});

/** A free TCP port on 127.0.0.1 (the kernel's choice, released at once). */
function freePort() {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolvePort(port));
    });
  });
}

/** `hearth serve --dev` as a child process, answering once its login page does. */
async function startHearth(bin, data, port) {
  const child = spawn(bin, ['serve', '--dev', '--dev-without-history', '--data', data, '--bind', `127.0.0.1:${port}`,
    '--metrics-bind', 'off', '--admin-bind', 'off'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (d) => { log = (log + d).slice(-4000); });
  const exited = new Promise((r) => child.once('exit', r));
  child.exited = exited;
  try {
    await until(async () => {
      if (child.exitCode !== null) throw new Error(`hearth exited ${child.exitCode}: ${log}`);
      return (await fetch(`http://127.0.0.1:${port}/login/`)).ok;
    }, 'the restarted hearth to answer', 60000);
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  return child;
}

flow('server-restart-mid-session', async () => {
  const bin = process.env.HEARTH_E2E_BIN;
  const data = process.env.HEARTH_E2E_DATA;
  if (!bin || !data) return 'skipped: HEARTH_E2E_BIN and HEARTH_E2E_DATA are not set';
  const port = await freePort();
  const own = new Server(`http://127.0.0.1:${port}`);
  let child = await startHearth(bin, data, port);
  try {
    let polls = 0;
    const { context, page } = await devLogin(browser, own, HAMLET, {}, (p) => p.on('request', (r) => {
      if (r.url().includes('/json/events')) polls++;
    }));
    const topic = `e2e restart ${unique}`;
    await go(page, own, `#narrow/channel/${VERONA}-Verona/topic/${encodeURIComponent(topic).replace(/%/g, '.')}`);
    await own.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: VERONA, topic, content: `before the restart ${unique}` });
    await messageRow(page, `before the restart ${unique}`).waitFor();
    await until(() => polls > 0, 'an event poll');
    await page.evaluate(() => { window.__samePage = true; });
    // The process dies without a word, and comes back on the same folder and port.
    child.kill('SIGKILL');
    await child.exited;
    await page.getByText('Reconnecting…').waitFor({ timeout: 20000 });
    child = await startHearth(bin, data, port);
    await own.api(OTHELLO, 'POST', 'messages', { type: 'stream', to: VERONA, topic, content: `after the restart ${unique}` });
    await messageRow(page, `after the restart ${unique}`).waitFor({ timeout: 30000 });
    await page.getByText('Reconnecting…').waitFor({ state: 'detached', timeout: 10000 });
    if (!(await page.evaluate(() => window.__samePage))) throw new Error('the page reloaded');
    if (/\/login\//.test(page.url())) throw new Error('the session did not survive the restart');
    // The session still writes: a message sent from the page after the restart.
    await send(page, `sent from the page after the restart ${unique}`);
    await messageRow(page, `sent from the page after the restart ${unique}`).waitFor();
    await shot(page, 'server-restarted');
    assertClean(page);
    await context.close();
  } finally {
    child.kill('SIGKILL');
    await child.exited;
  }
});

flow('long-topic-keeps-the-dom-bounded', async () => {
  const topic = `e2e long ${unique}`;
  const total = 700;
  for (let i = 0; i < total; i += 20) {
    await Promise.all(Array.from({ length: 20 }, (_, j) => server.api(OTHELLO, 'POST', 'messages', {
      type: 'stream', to: VERONA, topic, content: `line ${String(i + j + 1).padStart(4, '0')}`,
    })));
  }
  const { context, page } = await devLogin(browser, server, HAMLET);
  await go(page, server, `#narrow/channel/${VERONA}-Verona/topic/${encodeURIComponent(topic).replace(/%/g, '.')}`);
  await page.locator('.message_row').first().waitFor();
  let most = 0;
  const jumps = [];
  const line = (n) => `line ${String(n).padStart(4, '0')}`;
  // Scroll to each end in turn, counting the rendered messages on the way.
  for (const [end, top] of [[line(total), false], [line(1), true], [line(total), false]]) {
    for (let step = 0; step < 80; step++) {
      most = Math.max(most, await page.locator('.message_row').count());
      if (await messageRow(page, end).count() > 0) break;
      // The row at the top of the list's view, and where it is.
      const seen = await page.locator('.message_list').evaluate((el, up) => {
        el.scrollTop = up ? 0 : el.scrollHeight;
        const box = el.getBoundingClientRect();
        const row = [...el.querySelectorAll('.message_row')].find((r) => r.getBoundingClientRect().bottom > box.top + 1);
        return row === undefined ? undefined : { id: row.dataset.messageId, at: row.getBoundingClientRect().top - box.top };
      }, top);
      await page.waitForTimeout(200);
      // Rows rendered or fetched above it do not move it on the screen.
      if (top && seen !== undefined) {
        const now = await page.locator('.message_list').evaluate((el, id) => {
          const row = el.querySelector(`.message_row[data-message-id="${id}"]`);
          return row === null ? undefined : row.getBoundingClientRect().top - el.getBoundingClientRect().top;
        }, seen.id);
        if (now !== undefined && Math.abs(now - seen.at) > 4) jumps.push(`${seen.at.toFixed(0)} → ${now.toFixed(0)} px`);
      }
    }
    await messageRow(page, end).waitFor().catch(async (e) => {
      throw new Error(`${e.message}\nthe list then: ${await page.locator('.message_list').evaluate((el) => {
        const rows = [...el.querySelectorAll('.message_row .message_content')].map((r) => r.textContent);
        return `${rows.length} rows, ${rows[0]} .. ${rows.at(-1)}, scrollTop ${el.scrollTop} of ${el.scrollHeight - el.clientHeight}`;
      })}`);
    });
    if (top) await shot(page, 'long-topic-top');
  }
  // The list holds up to 300 messages and renders only those near the viewport
  // (140 at most); reaching both ends of 700 took paging both ways.
  if (most > 140) throw new Error(`${most} message rows in the DOM`);
  if (most < 40) throw new Error(`only ${most} rows were ever rendered`);
  if (jumps.length > 0) throw new Error(`rows added above moved the row on screen: ${jumps.join(', ')}`);
  assertClean(page);
  await context.close();
});

flow('accessibility-axe', async () => {
  const axe = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const problems = [];
  for (const colorScheme of ['light', 'dark']) {
    const { context, page } = await devLogin(browser, server, HAMLET, { colorScheme });
    const check = async (what) => {
      await page.waitForTimeout(300);
      await page.addScriptTag({ content: axe }).catch(() => page.evaluate(axe));
      const result = await page.evaluate(async () => {
        const r = await window.axe.run(document, { resultTypes: ['violations'] });
        return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
          .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
      });
      for (const r of result) problems.push(`${colorScheme} ${what}: ${r}`);
    };
    await go(page, server, `#narrow/channel/${VERONA}-Verona`);
    await page.locator('.message_row').first().waitFor();
    await check('channel view');
    await page.locator('.message_row .sender_name').last().click();
    await page.locator('.user-card').waitFor();
    await check('user card');
    await page.keyboard.press('Escape');
    await page.locator('.user-card').waitFor({ state: 'detached' });
    await page.locator('.compose-start').click();
    await check('compose');
    await go(page, server, '#recent');
    await check('recent conversations');
    await go(page, server, '#settings');
    await check('settings');
    await go(page, server, '#channels/all');
    await check('channels');
    await context.close();
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
});

let passed = 0;
let failed = 0;
for (const f of flows) {
  if (only && !f.name.includes(only)) continue;
  const t0 = Date.now();
  try {
    const skipped = await f.fn();
    if (typeof skipped === 'string') {
      console.log(`skip ${f.name}: ${skipped}`);
      continue;
    }
    passed++;
    console.log(`ok   ${f.name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${f.name}: ${e instanceof Error ? e.stack : e}`);
  }
}
await browser.close();
console.log(`screenshots in ${out}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
