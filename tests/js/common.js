// Shared by the tests/js/test_*.js scripts: checks, keys from the development server,
// and zulip-js clients. Each script takes the server URL as its only argument.

const zulipInit = require('zulip-js');

const failures = [];

function check(condition, what) {
  if (!condition) {
    failures.push(what);
    console.log(`FAIL: ${what}`);
  }
  return condition;
}

function show(value) {
  return JSON.stringify(value);
}

function siteFromArgs() {
  const site = process.argv[2];
  if (!site) {
    console.error(`usage: node ${process.argv[1]} SITE_URL`);
    process.exit(2);
  }
  return site.replace(/\/+$/, '');
}

// POST /api/v1/dev_fetch_api_key without the client, as the Python scripts do.
async function fetchKey(site, email) {
  const resp = await fetch(`${site}/api/v1/dev_fetch_api_key`, {
    method: 'POST',
    body: new URLSearchParams({ username: email }),
  });
  const body = await resp.json();
  if (resp.status !== 200) {
    throw new Error(`dev_fetch_api_key ${email}: ${resp.status} ${show(body)}`);
  }
  return body.api_key;
}

async function client(site, email) {
  return zulipInit({ username: email, apiKey: await fetchKey(site, email), realm: site });
}

function sleep(ms) {
  return new Promise((resolve) => {
    setTimeout(resolve, ms);
  });
}

// Runs `main`, then reports: exit 0 when every check passed, 1 otherwise.
function run(name, main) {
  main()
    .catch((e) => {
      failures.push(`uncaught: ${e && e.stack ? e.stack : e}`);
      console.log(`FAIL: uncaught ${e && e.stack ? e.stack : e}`);
    })
    .then(() => {
      if (failures.length) {
        console.log(`zulip-js ${name}: ${failures.length} check(s) failed`);
        process.exit(1);
      }
      console.log(`zulip-js ${name}: ok`);
      process.exit(0);
    });
}

module.exports = { check, show, siteFromArgs, fetchKey, client, sleep, run };
