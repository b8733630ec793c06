// zulip-js 2.1.0 (unmodified) on the first start of a realm made by `hearth realm
// create`, as its owner, configured from the zuliprc that command wrote.
//
// Usage: node first_start.js ZULIPRC

const zulipInit = require('zulip-js');
const { check, show, run } = require('./common');

run('first_start', async () => {
  const z = await zulipInit({ zuliprc: process.argv[2] });
  const me = await z.users.me.getProfile();
  check(me.result === 'success' && me.is_owner === true, `the owner: ${show(me)}`);

  const state = await z.queues.register({
    event_types: ['message'],
    fetch_event_types: JSON.stringify(['realm_user', 'message', 'update_message_flags']),
  });
  check(state.result === 'success', `register: ${show(state)}`);
  const bots = (state.cross_realm_bots || []).map((b) => b.email);
  check(bots.includes('welcome-bot@zulip.com'), `cross_realm_bots: ${show(bots)}`);
  check(state.unread_msgs && state.unread_msgs.count === 13, `unread: ${show(state.unread_msgs)}`);

  const got = await z.messages.retrieve({ anchor: 'newest', num_before: 100, num_after: 0 });
  check(got.result === 'success', `messages: ${show(got)}`);
  const messages = got.messages || [];
  check(messages.length === 13, `13 messages: ${messages.length}`);
  check(messages.every((m) => m.sender_full_name === 'Welcome Bot'), 'all from the Welcome Bot');
  const channels = new Set(messages.filter((m) => m.type === 'stream').map((m) => m.display_recipient));
  check(['Zulip', 'sandbox', 'general'].every((c) => channels.has(c)), `channels: ${show([...channels])}`);
  const dm = messages.filter((m) => m.type === 'private');
  check(dm.length === 1 && dm[0].flags.length === 0, `the unread welcome: ${show(dm)}`);

  const sent = await z.messages.send({ type: 'stream', to: 'general', topic: 'greetings', content: 'Hi all!' });
  check(sent.result === 'success', `send: ${show(sent)}`);
});
