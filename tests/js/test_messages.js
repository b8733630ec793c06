// The official JavaScript client, zulip-js 2.1.0 (unmodified), against a running hearth:
// messages. Sends to a channel and directly, reads with narrows, reads single messages
// and their history, edits, flags, deletes, and sends typing notifications.
//
// Usage: node test_messages.js SITE_URL
//
// Exits 0 when every check passes, 1 with the failed checks otherwise.

const { check, show, siteFromArgs, client, run } = require('./common');

async function main() {
  const site = siteFromArgs();
  const iago = await client(site, 'iago@zulip.com');
  const hamlet = await client(site, 'hamlet@zulip.com');
  const othello = await client(site, 'othello@zulip.com');
  // The dev realm shows emails to administrators only: users are addressed by their
  // API emails (userN@zulipdev.com), as in Zulip.
  const profile = async (c) => c.users.me.getProfile();
  const { user_id: othelloId, email: othelloEmail } = await profile(othello);
  const { email: iagoEmail } = await profile(iago);
  const { email: hamletEmail } = await profile(hamlet);
  const cordelia = await profile(await client(site, 'cordelia@zulip.com'));
  const { user_id: cordeliaId, email: cordeliaEmail } = cordelia;
  const veronaId = (await iago.streams.getStreamId('Verona')).stream_id;

  // messages.send to a channel by name, with `subject` as zulip-js documents it.
  const sent = await iago.messages.send({
    to: 'Verona',
    type: 'stream',
    subject: 'js client',
    content: 'hello **world** from zulip-js',
  });
  check(sent.result === 'success' && Number.isInteger(sent.id), `send to a channel: ${show(sent)}`);
  check(!('ignored_parameters_unsupported' in sent), `subject is read: ${show(sent)}`);
  const messageId = sent.id;
  // By channel id (a number: the form gets its decimal text) with `topic`.
  const byId = await hamlet.messages.send({
    to: veronaId,
    type: 'channel',
    topic: 'js client',
    content: 'second',
  });
  check(byId.result === 'success' && byId.id > messageId, `send to a channel id: ${show(byId)}`);

  // Direct messages: `to` as an array (the client JSON-encodes it) of ids or of emails,
  // and as a plain email; a delivery email is no address.
  const dm = await hamlet.messages.send({ type: 'direct', to: [othelloId], content: 'psst' });
  check(dm.result === 'success', `direct send by id: ${show(dm)}`);
  const dmByEmail = await hamlet.messages.send({
    type: 'private',
    to: [othelloEmail, cordeliaEmail],
    content: 'to the group',
  });
  check(dmByEmail.result === 'success', `direct send by emails: ${show(dmByEmail)}`);
  const dmPlain = await hamlet.messages.send({
    type: 'private',
    to: othelloEmail,
    content: 'plain email',
  });
  check(dmPlain.result === 'success', `direct send to a plain email: ${show(dmPlain)}`);
  const hidden = await hamlet.messages.send({ type: 'private', to: ['othello@zulip.com'], content: 'x' });
  check(
    hidden.result === 'error' && hidden.msg === "Invalid email 'othello@zulip.com'",
    `direct send to a delivery email: ${show(hidden)}`,
  );

  // Errors come back as results.
  const badChannel = await hamlet.messages.send({
    type: 'stream',
    to: 'nonexistent',
    topic: 't',
    content: 'x',
  });
  check(
    badChannel.result === 'error' &&
      badChannel.code === 'STREAM_DOES_NOT_EXIST' &&
      badChannel.msg === "Channel 'nonexistent' does not exist" &&
      badChannel.stream === 'nonexistent',
    `unknown channel: ${show(badChannel)}`,
  );
  const noContent = await hamlet.messages.send({ type: 'stream', to: 'Verona', topic: 't' });
  check(
    noContent.result === 'error' && noContent.code === 'REQUEST_VARIABLE_MISSING' && noContent.var_name === 'content',
    `missing content: ${show(noContent)}`,
  );
  const badUser = await hamlet.messages.send({ type: 'direct', to: [999999], content: 'x' });
  check(
    badUser.result === 'error' && badUser.msg === 'Invalid user ID 999999',
    `unknown recipient: ${show(badUser)}`,
  );

  // messages.retrieve with a narrow (the client JSON-encodes it; the rest is query text).
  const narrowed = await hamlet.messages.retrieve({
    anchor: 'newest',
    num_before: 10,
    num_after: 0,
    narrow: [
      { operator: 'channel', operand: 'Verona' },
      { operator: 'topic', operand: 'js client' },
    ],
  });
  check(narrowed.result === 'success', `retrieve: ${show(narrowed)}`);
  const ids = (narrowed.messages || []).map((m) => m.id);
  check(show(ids) === show([messageId, byId.id]), `narrowed ids: ${show(ids)}`);
  check(narrowed.found_newest === true && narrowed.found_anchor === false, `found_*: ${show(narrowed)}`);
  const first = (narrowed.messages || [])[0] || {};
  check(first.content === '<p>hello <strong>world</strong> from zulip-js</p>', `rendered: ${show(first)}`);
  check(first.display_recipient === 'Verona' && first.subject === 'js client', `recipient: ${show(first)}`);
  check(first.stream_id === veronaId && first.type === 'stream', `channel message: ${show(first)}`);
  // No `client` parameter: Zulip names the client after the User-Agent's product.
  check(first.client === 'node-fetch', `client from the User-Agent: ${show(first)}`);
  // The legacy `stream` operator, raw Markdown, and the numeric anchor of zulip-js's
  // examples (past the newest message).
  const legacy = await hamlet.messages.retrieve({
    anchor: 1000000000,
    num_before: 1,
    num_after: 0,
    apply_markdown: false,
    narrow: [
      { operator: 'stream', operand: 'Verona' },
      { operator: 'sender', operand: iagoEmail },
    ],
  });
  const legacyIds = (legacy.messages || []).map((m) => m.id);
  check(show(legacyIds) === show([messageId]), `stream+sender narrow: ${show(legacy)}`);
  check(legacy.messages?.[0]?.content === 'hello **world** from zulip-js', `raw content: ${show(legacy)}`);
  const dms = await othello.messages.retrieve({
    anchor: 'newest',
    num_before: 10,
    num_after: 0,
    narrow: [{ operator: 'dm', operand: [hamletEmail] }],
  });
  const dmIds = (dms.messages || []).map((m) => m.id);
  check(show(dmIds) === show([dm.id, dmPlain.id]), `dm narrow: ${show(dms)}`);
  check(
    (dms.messages || []).every((m) => show(m.flags) === show([])),
    `othello's DMs are unread: ${show(dms)}`,
  );
  const badNarrow = await hamlet.messages.retrieve({
    anchor: 'newest',
    num_before: 1,
    num_after: 0,
    narrow: [{ operator: 'channel', operand: 'no such channel' }],
  });
  check(
    badNarrow.result === 'error' && badNarrow.code === 'BAD_NARROW' &&
      badNarrow.msg === 'Invalid narrow operator: unknown channel no such channel',
    `unknown channel narrow: ${show(badNarrow)}`,
  );

  // messages.getById: GET /messages/{id} (the client also puts message_id in the query).
  const single = await othello.messages.getById({ message_id: dm.id });
  check(single.result === 'success' && single.raw_content === 'psst', `getById: ${show(single)}`);
  check(single.message?.id === dm.id && single.message?.content === '<p>psst</p>', `message: ${show(single)}`);
  check(
    show(single.ignored_parameters_unsupported) === show(['message_id']),
    `getById reports the query's message_id: ${show(single)}`,
  );

  // messages.update: PATCH /messages/{id}, every parameter in the query string.
  const edited = await iago.messages.update({
    message_id: messageId,
    content: 'edited by zulip-js',
    topic: 'js client edited',
  });
  check(edited.result === 'success' && show(edited.detached_uploads) === show([]), `update: ${show(edited)}`);
  check(
    show(edited.ignored_parameters_unsupported) === show(['message_id']),
    `update reports the query's message_id: ${show(edited)}`,
  );
  const afterEdit = await iago.messages.getById({ message_id: messageId });
  check(afterEdit.raw_content === 'edited by zulip-js', `edited content: ${show(afterEdit)}`);
  check(afterEdit.message?.subject === 'js client edited', `edited topic: ${show(afterEdit)}`);
  const history = await iago.messages.getHistoryById({ message_id: messageId });
  const entries = history.message_history || [];
  check(history.result === 'success' && entries.length === 2, `getHistoryById: ${show(history)}`);
  check(entries[1]?.prev_topic === 'js client', `prev_topic: ${show(entries[1])}`);
  check(entries[1]?.prev_content === 'hello **world** from zulip-js', `prev_content: ${show(entries[1])}`);
  const denied = await hamlet.messages.update({ message_id: messageId, content: 'not mine' });
  check(
    denied.result === 'error' && denied.msg === "You don't have permission to edit this message",
    `edit as hamlet: ${show(denied)}`,
  );

  // messages.flags.add / remove: POST /messages/flags, the id list JSON-encoded.
  const read = await othello.messages.flags.add({ messages: [dm.id, dmPlain.id], flag: 'read' });
  check(
    read.result === 'success' && show(read.messages) === show([dm.id, dmPlain.id]),
    `flags.add read: ${show(read)}`,
  );
  const starred = await othello.messages.flags.add({ messages: [dm.id], flag: 'starred' });
  check(starred.result === 'success' && show(starred.messages) === show([dm.id]), `starred: ${show(starred)}`);
  const flagged = await othello.messages.getById({ message_id: dm.id });
  check(
    show((flagged.message?.flags || []).slice().sort()) === show(['read', 'starred']),
    `flags after add: ${show(flagged)}`,
  );
  const unstarred = await othello.messages.flags.remove({ messages: [dm.id], flag: 'starred' });
  check(unstarred.result === 'success' && show(unstarred.messages) === show([dm.id]), `flags.remove: ${show(unstarred)}`);
  const unflagged = await othello.messages.getById({ message_id: dm.id });
  check(show(unflagged.message?.flags) === show(['read']), `flags after remove: ${show(unflagged)}`);
  const badFlag = await othello.messages.flags.add({ messages: [dm.id], flag: 'bogus' });
  check(badFlag.result === 'error' && badFlag.msg === "Invalid flag: 'bogus'", `bad flag: ${show(badFlag)}`);

  // messages.deleteById: DELETE /messages/{id}.
  const refused = await hamlet.messages.deleteById({ message_id: messageId });
  check(
    refused.result === 'error' && refused.msg === "You don't have permission to delete this message",
    `delete as hamlet: ${show(refused)}`,
  );
  const deleted = await iago.messages.deleteById({ message_id: messageId });
  check(deleted.result === 'success', `deleteById: ${show(deleted)}`);
  check(
    show(deleted.ignored_parameters_unsupported) === show(['message_id']),
    `deleteById reports the query's message_id: ${show(deleted)}`,
  );
  const gone = await iago.messages.getById({ message_id: messageId });
  check(gone.result === 'error' && gone.msg === 'Invalid message(s)', `deleted message: ${show(gone)}`);
  const goneAgain = await iago.messages.deleteById({ message_id: messageId });
  check(goneAgain.result === 'error' && goneAgain.msg === 'Invalid message(s)', `delete twice: ${show(goneAgain)}`);

  // typing.send: one recipient (the client JSON-encodes the array) and several (the
  // client encodes them itself).
  const typing = await hamlet.typing.send({ to: [othelloId], op: 'start' });
  check(typing.result === 'success', `typing to one: ${show(typing)}`);
  check(!('ignored_parameters_unsupported' in typing), `typing ignored: ${show(typing)}`);
  const typingGroup = await hamlet.typing.send({ to: [othelloId, cordeliaId], op: 'stop' });
  check(typingGroup.result === 'success', `typing to several: ${show(typingGroup)}`);
  const typingBad = await hamlet.typing.send({ to: [othelloId], op: 'go' });
  check(typingBad.result === 'error' && typingBad.msg === 'Invalid op', `typing op=go: ${show(typingBad)}`);
  const typingNobody = await hamlet.typing.send({ to: [999999], op: 'start' });
  check(
    typingNobody.result === 'error' && typingNobody.msg === 'Invalid user ID 999999',
    `typing to an unknown user: ${show(typingNobody)}`,
  );
}

run('messages', main);
