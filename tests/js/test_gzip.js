// The official JavaScript client, zulip-js 2.1.0 (unmodified), against gzip answers.
//
// Usage: node test_gzip.js SITE_URL
//
// zulip-js fetches with node-fetch (through isomorphic-fetch), which sends
// `Accept-Encoding: gzip,deflate`; hearth answers large JSON gzip-compressed. This
// checks, by watching the responses the client's fetch returns, that those answers
// arrived compressed and that the client read them as usual.

const helper = require('zulip-js/lib/helper');
const { check, show, siteFromArgs, client, run } = require('./common');

const seen = {};
const fetchAsIs = helper.fetch;
helper.fetch = async (url, options) => {
  const response = await fetchAsIs(url, options);
  seen[new URL(url).pathname] = {
    encoding: response.headers.get('content-encoding'),
    vary: response.headers.get('vary') || '',
  };
  return response;
};

async function main() {
  const site = siteFromArgs();
  const iago = await client(site, 'iago@zulip.com');

  const members = await iago.users.retrieve();
  check(members.result === 'success', `users.retrieve: ${show(members)}`);
  const emails = (members.members || []).map((m) => m.delivery_email);
  check(emails.includes('hamlet@zulip.com') && emails.length === 16, `members: ${show(emails)}`);
  const users = seen['/api/v1/users'] || {};
  check(users.encoding === 'gzip', `GET /users arrived as ${show(users)}`);
  check(users.vary.toLowerCase().includes('accept-encoding'), `GET /users Vary: ${show(users)}`);

  await iago.callEndpoint('/users/me/presence', 'POST', { status: 'active' });
  const presence = await iago.callEndpoint('/realm/presence', 'GET', {});
  check(presence.result === 'success', `realm presence: ${show(presence)}`);
  check(Object.keys(presence.presences || {}).length === 1, `iago present: ${show(presence)}`);

  const queue = await iago.queues.register({ event_types: ['message', 'realm_user'] });
  check(queue.result === 'success' && queue.queue_id, `register: ${show(Object.keys(queue))}`);
  check((seen['/api/v1/register'] || {}).encoding === 'gzip', `register: ${show(seen)}`);

  // A small answer is sent as it is.
  const me = await iago.users.me.getProfile();
  check(me.full_name === 'Iago', `getProfile: ${show(me)}`);
  check((seen['/api/v1/users/me'] || {}).encoding === null, `small answer: ${show(seen)}`);
}

run('gzip answers', main);
