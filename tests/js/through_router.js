// zulip-js 2.1.0 (unmodified) through the router (nginx) of several hearth nodes
// (tests/api/cluster.rs runs it): sends a message, reads it back, registers a queue and
// long-polls it for a message sent meanwhile. The realm's Host is
// `<realm>.cluster.test`, which this script resolves to the router's loopback address.
//
// Usage: node through_router.js SITE_URL EMAIL API_KEY

const http = require('http');
const dns = require('dns');
const zulipInit = require('zulip-js');

// `*.cluster.test` is the router on loopback: the names are not in any DNS.
http.globalAgent.options.lookup = (host, options, callback) => {
  if (host.endsWith('.cluster.test')) {
    if (options && options.all) {
      return callback(null, [{ address: '127.0.0.1', family: 4 }]);
    }
    return callback(null, '127.0.0.1', 4);
  }
  return dns.lookup(host, options, callback);
};

const failures = [];
function check(condition, what) {
  if (!condition) {
    failures.push(what);
    console.log(`FAIL: ${what}`);
  }
}

async function main() {
  const [site, username, apiKey] = process.argv.slice(2);
  const z = await zulipInit({ username, apiKey, realm: site });
  const me = await z.users.me.getProfile();
  check(me.result === 'success' && me.email === username, `me: ${JSON.stringify(me)}`);
  const sent = await z.messages.send({ type: 'stream', to: 'general', topic: 'router js', content: 'js through nginx' });
  check(sent.result === 'success', `send: ${JSON.stringify(sent)}`);
  const got = await z.messages.retrieve({ anchor: 'newest', num_before: 5, num_after: 0,
    narrow: [{ operator: 'topic', operand: 'router js' }] });
  check(got.result === 'success' && got.messages.some((m) => m.id === sent.id), `get: ${JSON.stringify(got)}`);
  const queue = await z.queues.register({ event_types: ['message'] });
  check(queue.result === 'success', `register: ${JSON.stringify(queue)}`);
  const poll = z.events.retrieve({ queue_id: queue.queue_id, last_event_id: -1, dont_block: false });
  await new Promise((r) => setTimeout(r, 300));
  const second = await z.messages.send({ type: 'stream', to: 'general', topic: 'router js', content: 'while polling' });
  const events = await poll;
  check(events.result === 'success' && events.events.some((e) => e.type === 'message' && e.message.id === second.id),
    `long-poll: ${JSON.stringify(events)}`);
  console.log(failures.length === 0 ? 'ok' : `${failures.length} failed`);
  process.exit(failures.length === 0 ? 0 : 1);
}

main().catch((e) => { console.log(`FAIL: ${e.stack || e}`); process.exit(1); });
