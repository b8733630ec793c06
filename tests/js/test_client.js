// The official JavaScript client, zulip-js 2.1.0 (unmodified), against a running hearth:
// server settings, profiles, users, channels and subscriptions.
//
// Usage: node test_client.js SITE_URL
//
// SITE_URL is a fresh development server (`hearth serve --dev`); this script starts
// nothing. Exits 0 when every check passes, 1 with the failed checks otherwise.

const zulipInit = require('zulip-js');
const { check, show, siteFromArgs, client, run } = require('./common');

async function main() {
  const site = siteFromArgs();
  const iago = await client(site, 'iago@zulip.com');
  const hamlet = await client(site, 'hamlet@zulip.com');

  // server.settings: GET /server_settings.
  const settings = await hamlet.server.settings();
  check(settings.result === 'success', `server settings: ${show(settings)}`);
  check(settings.zulip_feature_level === 420, `feature level: ${show(settings)}`);
  check(typeof settings.zulip_version === 'string' && settings.zulip_version, 'zulip_version');
  check(settings.realm_url === site, `realm_url: ${settings.realm_url}`);
  check(settings.authentication_methods?.dev === true, `dev login: ${show(settings)}`);
  check(!('ignored_parameters_unsupported' in settings), `settings ignored: ${show(settings)}`);

  // users.me.getProfile: GET /users/me.
  const me = await iago.users.me.getProfile();
  check(me.result === 'success', `getProfile: ${show(me)}`);
  check(me.delivery_email === 'iago@zulip.com', `iago's delivery_email: ${show(me)}`);
  check(me.email === `user${me.user_id}@zulipdev.com`, `iago's API email: ${show(me)}`);
  check(me.full_name === 'Iago' && me.is_admin === true && me.role === 200, `iago: ${show(me)}`);
  check(me.profile_data && typeof me.profile_data === 'object', `profile_data: ${show(me)}`);
  const hamletMe = await hamlet.users.me.getProfile();
  check(hamletMe.full_name === 'King Hamlet' && hamletMe.role === 400, `hamlet: ${show(hamletMe)}`);
  const hamletId = hamletMe.user_id;

  // users.retrieve: GET /users, booleans in the query string as `true` / `false`.
  const members = await iago.users.retrieve();
  check(members.result === 'success', `users.retrieve: ${show(members)}`);
  const people = members.members || [];
  check(people.length === 16, `${people.length} members`);
  const byEmail = Object.fromEntries(people.map((m) => [m.delivery_email, m]));
  check(byEmail['hamlet@zulip.com']?.user_id === hamletId, 'hamlet listed');
  const bot = byEmail['default-bot@zulip.com'] || {};
  check(bot.is_bot === true && bot.bot_type === 1, `bot: ${show(bot)}`);
  check(bot.avatar_url === null, `bot avatar with client_gravatar: ${show(bot)}`);
  const noGravatar = await iago.users.retrieve({ client_gravatar: false });
  check(
    (noGravatar.members || []).length === 16 &&
      noGravatar.members.every((m) => typeof m.avatar_url === 'string'),
    'client_gravatar=false gives every avatar URL',
  );
  const withFields = await hamlet.users.retrieve({ include_custom_profile_fields: true });
  check(
    (withFields.members || []).every((m) => ('profile_data' in m) !== m.is_bot),
    `profile_data on humans only: ${show(withFields).slice(0, 300)}`,
  );
  const asMember = await hamlet.users.retrieve();
  const others = (asMember.members || []).filter((m) => !m.is_bot && m.user_id !== hamletId);
  check(
    others.length > 0 && others.every((m) => m.delivery_email === null),
    'members do not see real emails',
  );
  // Zulip reads client_gravatar as JSON: `yes` is not JSON, `1` is JSON but no boolean.
  const badBool = await iago.users.retrieve({ client_gravatar: 'yes' });
  check(
    badBool.result === 'error' && badBool.msg === 'client_gravatar is not valid JSON',
    `client_gravatar=yes: ${show(badBool)}`,
  );
  const notBool = await iago.users.retrieve({ client_gravatar: 1 });
  check(
    notBool.result === 'error' && notBool.msg === 'client_gravatar is not a boolean',
    `client_gravatar=1: ${show(notBool)}`,
  );

  // streams.retrieve: GET /streams.
  const streams = await hamlet.streams.retrieve();
  check(streams.result === 'success', `streams.retrieve: ${show(streams)}`);
  const byName = Object.fromEntries((streams.streams || []).map((s) => [s.name, s]));
  check(byName.Verona?.description === 'A city in Italy', `Verona: ${show(byName.Verona)}`);
  check(!('is_default' in (byName.Verona || {})), `is_default only with include_default: ${show(byName.Verona)}`);
  const withDefault = await hamlet.streams.retrieve({ include_default: true });
  const defaultVerona = (withDefault.streams || []).find((s) => s.name === 'Verona');
  check(defaultVerona?.is_default === true, `Verona is_default: ${show(defaultVerona)}`);
  check(!('core team' in byName), `hamlet sees no private channel: ${Object.keys(byName)}`);
  const allStreams = await iago.streams.retrieve({ include_all: true });
  check(allStreams.result === 'success', `include_all: ${show(allStreams)}`);
  const veronaId = byName.Verona?.stream_id;

  // streams.getStreamId: GET /get_stream_id.
  const idOf = await hamlet.streams.getStreamId('Verona');
  check(idOf.result === 'success' && idOf.stream_id === veronaId, `getStreamId: ${show(idOf)}`);
  const noId = await hamlet.streams.getStreamId('no such channel');
  check(
    noId.result === 'error' && noId.code === 'BAD_REQUEST' && noId.msg === "Invalid channel name 'no such channel'",
    `getStreamId unknown: ${show(noId)}`,
  );

  // streams.subscriptions.retrieve: GET /users/me/subscriptions.
  const subs = await hamlet.streams.subscriptions.retrieve();
  check(subs.result === 'success', `subscriptions.retrieve: ${show(subs)}`);
  const subNames = (subs.subscriptions || []).map((s) => s.name);
  check(subNames.includes('Verona'), `hamlet's subscriptions: ${subNames}`);
  const verona = (subs.subscriptions || []).find((s) => s.name === 'Verona') || {};
  check(verona.stream_id === veronaId && typeof verona.color === 'string', `Verona sub: ${show(verona)}`);
  const withSubscribers = await hamlet.streams.subscriptions.retrieve({ include_subscribers: true });
  const veronaSubscribers =
    (withSubscribers.subscriptions || []).find((s) => s.name === 'Verona')?.subscribers || [];
  check(veronaSubscribers.includes(hamletId), `include_subscribers: ${show(veronaSubscribers)}`);

  // users.me.subscriptions.add: POST /users/me/subscriptions (the client JSON-encodes
  // the array), a new channel and an existing one.
  const added = await hamlet.users.me.subscriptions.add({
    subscriptions: [{ name: 'js-client', description: 'made by zulip-js' }, { name: 'Denmark' }],
  });
  check(added.result === 'success', `subscriptions.add: ${show(added)}`);
  check(
    show((added.subscribed?.[String(hamletId)] || []).slice().sort()) === show(['Denmark', 'js-client']),
    `subscribed: ${show(added)}`,
  );
  const again = await hamlet.users.me.subscriptions.add({ subscriptions: [{ name: 'Verona' }] });
  check(
    show(again.already_subscribed?.[String(hamletId)]) === show(['Verona']),
    `already_subscribed: ${show(again)}`,
  );
  const after = await hamlet.streams.subscriptions.retrieve();
  const mine = (after.subscriptions || []).find((s) => s.name === 'js-client');
  check(mine?.description === 'made by zulip-js', `new channel listed: ${show(mine)}`);
  const created = await hamlet.streams.getStreamId('js-client');
  check(created.stream_id === mine?.stream_id, `new channel id: ${show(created)}`);

  // users.me.subscriptions.remove: DELETE with the parameters in the query string; the
  // client leaves non-array values alone there, so the caller JSON-encodes the list.
  const removed = await hamlet.users.me.subscriptions.remove({
    subscriptions: JSON.stringify(['js-client']),
  });
  check(
    removed.result === 'success' && show(removed.removed) === show(['js-client']),
    `subscriptions.remove: ${show(removed)}`,
  );
  check(show(removed.not_removed) === show([]), `not_removed: ${show(removed)}`);
  const twice = await hamlet.users.me.subscriptions.remove({
    subscriptions: JSON.stringify(['js-client']),
  });
  check(show(twice.not_removed) === show(['js-client']), `removed twice: ${show(twice)}`);
  const missing = await hamlet.users.me.subscriptions.remove({
    subscriptions: JSON.stringify(['no such channel']),
  });
  check(
    missing.result === 'error' && missing.code === 'STREAM_DOES_NOT_EXIST' && missing.stream === 'no such channel',
    `remove missing channel: ${show(missing)}`,
  );
  // An array in a query string becomes "a,b": Zulip answers that it is not JSON.
  const notJson = await hamlet.users.me.subscriptions.remove({ subscriptions: ['Denmark'] });
  check(
    notJson.result === 'error' && notJson.msg === 'subscriptions is not valid JSON',
    `remove with a bare name: ${show(notJson)}`,
  );
  const finalSubs = await hamlet.streams.subscriptions.retrieve();
  const finalNames = (finalSubs.subscriptions || []).map((s) => s.name);
  check(!finalNames.includes('js-client') && finalNames.includes('Denmark'), `after remove: ${finalNames}`);

  // Bad credentials: the client starts without a round trip, and the server's answer
  // comes back as a result.
  const bad = await zulipInit({ username: 'iago@zulip.com', apiKey: 'x'.repeat(32), realm: site });
  const denied = await bad.users.me.getProfile();
  check(
    denied.result === 'error' && denied.code === 'UNAUTHORIZED' && denied.msg === 'Invalid API key',
    `bad key: ${show(denied)}`,
  );

  // Password login: zulipInit without an API key calls POST /fetch_api_key.
  const created2 = await iago.users.create({
    email: 'js-client-user@zulip.com',
    password: 'js-client-pw',
    full_name: 'Js Client',
  });
  check(created2.result === 'success' && Number.isInteger(created2.user_id), `users.create: ${show(created2)}`);
  const newbie = await zulipInit({
    username: 'js-client-user@zulip.com',
    password: 'js-client-pw',
    realm: site,
  });
  check(typeof newbie.config.apiKey === 'string' && newbie.config.apiKey.length === 32, 'fetched a key');
  const profile = await newbie.users.me.getProfile();
  check(profile.user_id === created2.user_id, `new user's profile: ${show(profile)}`);
}

run('client', main);
