// The official JavaScript client, zulip-js 2.1.0 (unmodified), against a running hearth:
// event queues. Registers queues, long-polls them for message and typing events, runs
// the client's own `callOnEachEvent` loop, and deletes a queue.
//
// Usage: node test_events.js SITE_URL
//
// Exits 0 when every check passes, 1 with the failed checks otherwise.

const { check, show, siteFromArgs, client, sleep, run } = require('./common');

// Resolves with `promise`'s value, or with `fallback` after `ms` milliseconds.
function within(ms, promise, fallback) {
  return Promise.race([promise, sleep(ms).then(() => fallback)]);
}

async function main() {
  const site = siteFromArgs();
  const iago = await client(site, 'iago@zulip.com');
  const hamlet = await client(site, 'hamlet@zulip.com');
  const othello = await client(site, 'othello@zulip.com');
  const hamletId = (await hamlet.users.me.getProfile()).user_id;
  const othelloId = (await othello.users.me.getProfile()).user_id;
  const veronaId = (await hamlet.streams.getStreamId('Verona')).stream_id;

  // queues.register: POST /register, event_types JSON-encoded by the client.
  const queue = await hamlet.queues.register({ event_types: ['message'] });
  check(queue.result === 'success' && typeof queue.queue_id === 'string', `register: ${show(queue)}`);
  check(queue.last_event_id === -1, `last_event_id: ${show(queue.last_event_id)}`);
  check(Number.isInteger(queue.max_message_id), `max_message_id: ${show(queue.max_message_id)}`);
  check(!('ignored_parameters_unsupported' in queue), `register ignored: ${show(queue.ignored_parameters_unsupported)}`);

  // queues.register({}): no parameters, sent as a multipart form with no field.
  const everything = await hamlet.queues.register({});
  check(everything.result === 'success' && typeof everything.queue_id === 'string', `register({}): ${show(everything)}`);
  check(Array.isArray(everything.subscriptions), `register({}) state: ${show(Object.keys(everything))}`);

  // events.retrieve: a long poll (GET /events, dont_block=false) answered by a message
  // sent while it waits. Markdown is not applied: /register's default.
  const poll = hamlet.events.retrieve({ queue_id: queue.queue_id, last_event_id: -1, dont_block: false });
  await sleep(300);
  const sent = await iago.messages.send({
    type: 'stream',
    to: 'Verona',
    topic: 'js events',
    content: 'for the **listener**',
  });
  check(sent.result === 'success', `send: ${show(sent)}`);
  const polled = await within(20000, poll, { result: 'timeout' });
  check(polled.result === 'success', `events.retrieve: ${show(polled)}`);
  const events = polled.events || [];
  const messageEvent = events.find((e) => e.type === 'message');
  check(events.length === 1 && messageEvent?.id === 0, `one message event: ${show(events)}`);
  const message = messageEvent?.message || {};
  check(message.id === sent.id && message.content === 'for the **listener**', `event message: ${show(message)}`);
  check(message.display_recipient === 'Verona' && message.stream_id === veronaId, `event recipient: ${show(message)}`);
  check(message.subject === 'js events' && message.sender_full_name === 'Iago', `event fields: ${show(message)}`);
  check(show(messageEvent?.flags) === show([]), `event flags: ${show(messageEvent)}`);

  // Acknowledging event 0 and asking without blocking: nothing new.
  const empty = await hamlet.events.retrieve({ queue_id: queue.queue_id, last_event_id: 0, dont_block: true });
  check(empty.result === 'success' && show(empty.events) === show([]), `dont_block: ${show(empty)}`);

  // A rendered queue (apply_markdown, sent as the text `true`) and a direct message.
  const rendered = await othello.queues.register({ event_types: ['message'], apply_markdown: 'true' });
  check(rendered.result === 'success', `register apply_markdown: ${show(rendered)}`);
  const dm = await hamlet.messages.send({ type: 'direct', to: [othelloId], content: 'a *direct* one' });
  const dmEvents = await othello.events.retrieve({
    queue_id: rendered.queue_id,
    last_event_id: -1,
    dont_block: true,
  });
  const dmMessage = (dmEvents.events || []).find((e) => e.type === 'message')?.message || {};
  check(dmMessage.id === dm.id && dmMessage.content === '<p>a <em>direct</em> one</p>', `rendered event: ${show(dmEvents)}`);
  check(dmMessage.type === 'private' && Array.isArray(dmMessage.display_recipient), `direct event: ${show(dmMessage)}`);

  // typing.send reaches the recipient's queue as a typing event.
  const typingQueue = await othello.queues.register({ event_types: ['typing'] });
  check(typingQueue.result === 'success', `register typing: ${show(typingQueue)}`);
  const typingPoll = othello.events.retrieve({ queue_id: typingQueue.queue_id, last_event_id: -1 });
  await sleep(300);
  const typed = await hamlet.typing.send({ to: [othelloId], op: 'start' });
  check(typed.result === 'success', `typing.send: ${show(typed)}`);
  const typingEvents = (await within(20000, typingPoll, { events: [] })).events || [];
  const typing = typingEvents.find((e) => e.type === 'typing') || {};
  check(typing.op === 'start' && typing.message_type === 'direct', `typing event: ${show(typingEvents)}`);
  check(typing.sender?.user_id === hamletId, `typing sender: ${show(typing)}`);
  check(
    show((typing.recipients || []).map((r) => r.user_id).sort((a, b) => a - b)) ===
      show([hamletId, othelloId].sort((a, b) => a - b)),
    `typing recipients: ${show(typing)}`,
  );
  // Channel typing: zulip-js reads `to` even here, so an empty list goes along.
  const streamTypingQueue = await othello.queues.register({
    event_types: ['typing'],
    client_capabilities: JSON.stringify({ stream_typing_notifications: true }),
  });
  const streamTyped = await hamlet.typing.send({
    type: 'stream',
    stream_id: veronaId,
    topic: 'js events',
    to: [],
    op: 'stop',
  });
  check(streamTyped.result === 'success', `channel typing.send: ${show(streamTyped)}`);
  const streamTyping = await othello.events.retrieve({
    queue_id: streamTypingQueue.queue_id,
    last_event_id: -1,
    dont_block: true,
  });
  const channelEvent = (streamTyping.events || []).find((e) => e.type === 'typing') || {};
  check(
    channelEvent.op === 'stop' && channelEvent.stream_id === veronaId && channelEvent.topic === 'js events',
    `channel typing event: ${show(streamTyping)}`,
  );

  // callOnEachEvent: the client's own register-and-poll loop (it never returns).
  const received = [];
  let arrived;
  const arrival = new Promise((resolve) => {
    arrived = resolve;
  });
  othello.callOnEachEvent((event) => {
    received.push(event);
    if (event.type === 'message' && event.message.content === 'for the loop') {
      arrived(event);
    }
  }, ['message']);
  // The loop registers its queue on its own: send until one message reaches it (those
  // sent before its queue existed never will).
  const loopSent = [];
  let loopEvent = null;
  for (let i = 0; i < 20 && !loopEvent; i += 1) {
    // eslint-disable-next-line no-await-in-loop
    const looped = await hamlet.messages.send({ type: 'direct', to: [othelloId], content: 'for the loop' });
    loopSent.push(looped.id);
    // eslint-disable-next-line no-await-in-loop
    loopEvent = await within(1000, arrival, null);
  }
  check(loopSent.includes(loopEvent?.message?.id), `callOnEachEvent: ${show(received)}`);
  check(
    received.length > 0 && received.every((e) => e.type === 'message' && loopSent.includes(e.message.id)),
    `callOnEachEvent gets message events only: ${show(received)}`,
  );

  // queues.deregister: DELETE /events; the queue is gone afterwards.
  const deleted = await hamlet.queues.deregister({ queue_id: queue.queue_id });
  check(deleted.result === 'success', `deregister: ${show(deleted)}`);
  const stale = await hamlet.events.retrieve({ queue_id: queue.queue_id, last_event_id: 0, dont_block: true });
  check(
    stale.result === 'error' && stale.code === 'BAD_EVENT_QUEUE_ID' && stale.queue_id === queue.queue_id,
    `deleted queue: ${show(stale)}`,
  );
  check(stale.msg === `Bad event queue ID: ${queue.queue_id}`, `deleted queue text: ${show(stale)}`);
}

run('events', main);
