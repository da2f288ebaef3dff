// The console in a real browser against a real `sluice serve`: each test is one thing a person
// does, in order (the first changes the one-time password the later ones sign in with).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { apiClient, launchBrowser, newPage, newPageIn, screenshot, signIn, startServer } from './harness.js';

// Decision calls that change state take application/json only (issue 32 L2; docs/server.md).
const json = { 'Content-Type': 'application/json' };

const ADMIN_PASSWORD = 'a-new-admin-password';
const XSS = '<img src=x onerror=alert(1)>';

describe('console', () => {
  let server;
  let browser;
  let admin; // admin API client, after the password change
  let aliceContext; // alice signs in once: logins are throttled per user name (10 at once)

  // A page of alice's signed-in browser, on the apps page; failing on console errors like newPage.
  const alicePage = async (viewport) => {
    if (!aliceContext) {
      const first = await newPage(browser);
      await signIn(first, server.url, 'alice', 'alice-password-1234');
      await first.getByRole('heading', { name: 'Apps' }).waitFor();
      aliceContext = first.context();
      await first.close();
    }
    const page = await newPageIn(aliceContext, viewport);
    await page.goto(server.url + '/');
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    return page;
  };

  before(async () => {
    server = await startServer();
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('serves the console at / with a CSP that forbids inline scripts and framing', async () => {
    const response = await fetch(server.url + '/');
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type'), /^text\/html/);
    const csp = response.headers.get('content-security-policy');
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    const html = await response.text();
    assert.doesNotMatch(html, /<script>|<style>|style=/, 'no inline script or style in index.html');
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)[1];
    const js = await fetch(server.url + script);
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type'), /javascript/);
    assert.equal((await fetch(server.url + '/assets/nothing.js')).status, 404);
  });

  test('first login with the one-time password asks for a new one', async () => {
    assert.ok(server.password, 'the first start logged a one-time password');
    const page = await newPage(browser);
    await signIn(page, server.url, 'admin', server.password);
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    await screenshot(page, 'password-change-1280');
    // The server holds the session to the same rule: nothing but the change until it is made.
    const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const pending = await fetch(server.url + '/v1/policies', { headers: { Cookie: cookie } });
    assert.equal(pending.status, 403);
    assert.match((await pending.json()).detail, /^password change required: admin signed in with a one-time password/);
    assert.equal((await fetch(server.url + '/v1/session', { headers: { Cookie: cookie } })).status, 200);
    // Too short: the server's message is shown beside the field.
    await page.getByLabel('New password', { exact: true }).fill('short');
    await page.getByLabel('Repeat the new password', { exact: true }).fill('short');
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.locator('.field.invalid', { hasText: 'New password' }).getByRole('alert').waitFor();
    await page.getByLabel('New password', { exact: true }).fill(ADMIN_PASSWORD);
    await page.getByLabel('Repeat the new password', { exact: true }).fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    assert.match(await page.locator('.who').innerText(), /Signed in as admin/);
    // The one-time password is gone; a reload keeps the new session.
    const old = await fetch(server.url + '/v1/session', {
      method: 'POST', body: JSON.stringify({ user: 'admin', password: server.password }),
      headers: { 'Content-Type': 'application/json' } });
    assert.equal(old.status, 401);
    // A login a cross-site form could send (text/plain) is refused before any check (login CSRF).
    const plain = await fetch(server.url + '/v1/session', {
      method: 'POST', body: JSON.stringify({ user: 'admin', password: ADMIN_PASSWORD }) });
    assert.equal(plain.status, 415);
    assert.equal(plain.headers.get('set-cookie'), null);
    await page.reload();
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    assert.deepEqual(page.problems, []);
    admin = await apiClient(server.url, 'admin', ADMIN_PASSWORD);
    await page.context().close();
  });

  test('admins add apps and grant and revoke roles', async () => {
    for (const name of ['alice', 'bob', 'carol']) {
      const created = await admin('POST', '/v1/users', { name, password: `${name}-password-1234` });
      assert.equal(created.status, 201);
    }
    const page = await newPage(browser);
    await signIn(page, server.url, 'admin', ADMIN_PASSWORD);
    const form = page.getByRole('form', { name: 'Add an app' });
    await form.getByLabel('Name', { exact: true }).fill('shop');
    await form.getByLabel('Description', { exact: true }).fill('the web shop');
    await form.getByRole('button', { name: 'Add app' }).click();
    const row = page.getByRole('row', { name: /shop/ });
    await row.waitFor();
    const grant = async (user, role) => {
      const g = row.getByRole('form', { name: 'Grant a role on shop' });
      await g.getByLabel('User', { exact: true }).selectOption(user);
      await g.getByLabel('Role', { exact: true }).selectOption(role);
      await g.getByRole('button', { name: 'Grant' }).click();
    };
    await grant('alice', 'owner');
    await row.getByRole('list', { name: 'owners of shop' }).getByText('alice').waitFor();
    await grant('bob', 'viewer');
    await row.getByRole('list', { name: 'viewers of shop' }).getByText('bob').waitFor();
    await grant('carol', 'viewer');
    await row.getByRole('list', { name: 'viewers of shop' }).getByText('carol').waitFor();
    await row.getByRole('button', { name: 'Revoke viewer carol on shop' }).click();
    await row.getByRole('group', { name: 'Confirm revoking viewer carol on shop' })
      .getByRole('button', { name: 'Yes, revoke' }).click();
    await row.getByRole('list', { name: 'viewers of shop' }).getByText('carol').waitFor({ state: 'detached' });
    const users = (await admin('GET', '/v1/users')).body.users;
    const roles = Object.fromEntries(users.map((u) => [u.name, u.roles]));
    assert.deepEqual(roles, { admin: {}, alice: { shop: 'owner' }, bob: { shop: 'viewer' }, carol: {} });
    await screenshot(page, 'apps-1280');
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test('an owner creates a policy through the form, fixing the field the server refused', async () => {
    const page = await alicePage();
    await page.getByRole('link', { name: 'shop' }).click();
    await page.getByRole('link', { name: 'New policy' }).click();
    await page.getByLabel('Name', { exact: true }).fill('orders.create');
    await page.getByLabel('Description', { exact: true }).fill('checkout writes');
    await page.getByLabel('capacity', { exact: true }).fill('0');
    await page.getByRole('button', { name: 'Create policy' }).click();
    const capacity = page.locator('.field.invalid', { hasText: 'capacity' });
    await capacity.getByRole('alert').waitFor();
    const message = await capacity.getByRole('alert').innerText();
    assert.match(message, /at least 1|greater than 0/);
    await screenshot(page, 'editor-error-1280');
    await page.getByLabel('capacity', { exact: true }).fill('5');
    await page.getByLabel('refill', { exact: true }).fill('2');
    await page.getByRole('button', { name: 'Create policy' }).click();
    await page.getByRole('heading', { name: 'Policy orders.create' }).waitFor();
    await page.getByText('Version 1, changed by alice').waitFor();
    await page.getByRole('tab', { name: 'YAML' }).click();
    const yaml = await page.getByLabel('YAML', { exact: true }).innerText();
    assert.match(yaml, /capacity: 5\n\s+refill: 2\n\s+period: 1s/);
    await page.getByRole('tab', { name: 'JSON' }).click();
    assert.equal(JSON.parse(await page.getByLabel('JSON document', { exact: true }).inputValue()).apps[0], 'shop');
    const stored = await admin('GET', '/v1/policies/orders.create');
    assert.equal(stored.body.created_by, 'alice');
    assert.equal(stored.body.limits[0].capacity, 5);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('the list shows limits in words; shadow, disable and delete after a confirmation', async () => {
    const created = await admin('POST', '/v1/policies', {
      name: 'tmp.policy', apps: ['shop'], limits: [{ algorithm: 'fixed_window', limit: 100, window: '1h' }] });
    assert.equal(created.status, 201);
    const page = await alicePage();
    await page.goto(server.url + '/#/apps/shop');
    const row = page.getByRole('row', { name: /orders\.create/ });
    await row.getByText('5 at once, 2 per second').waitFor();
    await page.getByRole('row', { name: /tmp\.policy/ }).getByText('100 per hour').waitFor();
    await page.getByLabel('Filter policies', { exact: true }).fill('orders');
    await page.getByRole('row', { name: /tmp\.policy/ }).waitFor({ state: 'detached' });
    await page.getByLabel('Filter policies', { exact: true }).fill('');

    // Each state change asks first, in the row.
    const confirmed = async (action) => {
      await row.getByRole('button', { name: action, exact: true }).click();
      await row.getByRole('group').getByRole('button', { name: `Yes, ${action.toLowerCase()}` }).click();
    };
    await confirmed('Shadow');
    await row.getByRole('button', { name: 'Enforce' }).waitFor();
    assert.equal((await admin('GET', '/v1/policies/orders.create')).body.mode, 'shadow');
    await confirmed('Enforce');
    await row.getByRole('button', { name: 'Shadow' }).waitFor();
    await confirmed('Disable');
    await row.getByText('(disabled)').waitFor();
    assert.equal((await admin('GET', '/v1/policies/orders.create')).body.enabled, false);
    await confirmed('Enable');
    await row.getByRole('button', { name: 'Disable' }).waitFor();
    assert.equal((await admin('GET', '/v1/policies/orders.create')).body.enabled, true);

    const tmp = page.getByRole('row', { name: /tmp\.policy/ });
    await tmp.getByRole('button', { name: 'Delete' }).click();
    await tmp.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await admin('GET', '/v1/policies/tmp.policy')).status, 200);
    await tmp.getByRole('button', { name: 'Delete' }).click();
    await tmp.getByRole('button', { name: 'Yes, delete' }).click();
    await tmp.waitFor({ state: 'detached' });
    assert.equal((await admin('GET', '/v1/policies/tmp.policy')).status, 404);
    await screenshot(page, 'policies-1280');
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('acquiring until denied shows the denials in the live rates and chart', async () => {
    const page = await alicePage();
    await page.goto(server.url + '/#/apps/shop');
    const row = page.getByRole('row', { name: /orders\.create/ });
    await row.waitFor();
    let denied = 0;
    let done = false;
    const load = (async () => {
      while (!done) {
        const r = await fetch(server.url + '/v1/acquire', { method: 'POST', headers: json,
          body: JSON.stringify({ app: 'shop', policy: 'orders.create', key: 'k' }) });
        assert.equal(r.status, 200);
        if (!(await r.json()).allowed) denied++;
      }
    })();
    try {
      await row.locator('.rate .denied').waitFor({ timeout: 20000 });
      assert.match(await row.locator('.rate .denied').innerText(), /[1-9][\d.k]*\/s denied/);
      // The policy's page charts the last 15 minutes, per second, from the server's ring.
      await row.getByRole('link', { name: 'orders.create' }).click();
      const legend = page.locator('.chart .legend.denied');
      await legend.filter({ hasText: /^[1-9]\d* denied$/ }).waitFor({ timeout: 20000 });
      await page.locator('.chart path.series.denied').waitFor();
      await screenshot(page, 'live-chart-1280');
    } finally {
      done = true;
      await load;
    }
    assert.ok(denied > 0);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('a viewer sees a policy but gets no edit controls', async () => {
    const page = await newPage(browser);
    await signIn(page, server.url, 'bob', 'bob-password-1234');
    await page.goto(server.url + '/#/apps/shop');
    const row = page.getByRole('row', { name: /orders\.create/ });
    await row.getByText('5 at once, 2 per second').waitFor();
    assert.equal(await row.getByRole('button').count(), 0);
    assert.equal(await page.getByRole('link', { name: 'New policy' }).count(), 0);
    await row.getByRole('link', { name: 'orders.create' }).click();
    await page.getByText('You can view this policy').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Save' }).count(), 0);
    assert.equal(await page.getByLabel('Description', { exact: true }).getAttribute('readonly'), '');
    // The server refuses the write anyway.
    const refused = await page.evaluate(async () => {
      const session = await (await fetch('/v1/session')).json();
      const r = await fetch('/v1/policies', { method: 'POST',
        headers: { 'X-CSRF-Token': session.csrf_token, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'tmp2', apps: ['shop'], limits: [{ algorithm: 'fixed_window', limit: 1, window: '1s' }] }) });
      return r.status;
    });
    assert.equal(refused, 403);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test('a write the server refuses shows the server\'s message', async () => {
    assert.equal((await admin('POST', '/v1/apps', { name: 'billing' })).status, 201);
    const page = await alicePage();
    await page.goto(server.url + '/#/policies/orders.create');
    // alice owns shop but not billing: listing billing too is not hers to decide.
    await page.getByLabel('Apps', { exact: true }).fill('shop, billing');
    await page.getByRole('button', { name: 'Save' }).click();
    const problem = page.locator('.problem');
    await problem.waitFor();
    assert.match(await problem.innerText(), /alice/);
    assert.match(await problem.innerText(), /billing/);
    assert.deepEqual((await admin('GET', '/v1/policies/orders.create')).body.apps, ['shop']);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('two tabs edit one policy: the second gets the conflict and reloads', async () => {
    const context = await browser.newContext();
    const first = await context.newPage();
    await signIn(first, server.url, 'alice', 'alice-password-1234');
    await first.getByRole('heading', { name: 'Apps' }).waitFor();
    const second = await context.newPage();
    for (const page of [first, second]) {
      await page.goto(server.url + '/#/policies/orders.create');
      await page.getByLabel('Description', { exact: true }).waitFor();
    }
    await first.getByLabel('Description', { exact: true }).fill('changed in the first tab');
    await first.getByRole('button', { name: 'Save' }).click();
    await first.getByRole('status').getByText(/Saved as version \d+/).waitFor();
    await second.getByLabel('Description', { exact: true }).fill('changed in the second tab');
    await second.getByRole('button', { name: 'Save' }).click();
    await second.getByText('Someone else changed this policy').waitFor();
    await screenshot(second, 'conflict-1280');
    assert.equal((await admin('GET', '/v1/policies/orders.create')).body.description,
      'changed in the first tab');
    await second.getByRole('button', { name: 'Reload the current version' }).click();
    await second.getByText('Someone else changed this policy').waitFor({ state: 'detached' });
    assert.equal(await second.getByLabel('Description', { exact: true }).inputValue(), 'changed in the first tab');
    await context.close();
  });

  test('a description holding markup renders as text', async () => {
    const created = await admin('POST', '/v1/policies', {
      name: 'xss.policy', description: XSS, apps: ['shop'],
      limits: [{ algorithm: 'concurrency', limit: 3, lease_ttl: '30s' }] });
    assert.equal(created.status, 201);
    const page = await alicePage();
    await page.goto(server.url + '/#/apps/shop');
    await page.getByText(XSS, { exact: true }).waitFor();
    assert.equal(await page.locator('main img').count(), 0);
    await page.goto(server.url + '/#/policies/xss.policy');
    assert.equal(await page.getByLabel('Description', { exact: true }).inputValue(), XSS);
    await page.getByRole('tab', { name: 'YAML' }).click();
    assert.match(await page.getByLabel('YAML', { exact: true }).innerText(), /onerror=alert/);
    assert.equal(await page.locator('main img').count(), 0);
    assert.deepEqual(page.problems, []); // no alert dialog, no errors
    await page.close();
  });

  test('history: who and when, a diff between versions, and restoring one', async () => {
    const page = await alicePage();
    await page.goto(server.url + '/#/policies/orders.create/history');
    await page.getByRole('heading', { name: 'History of orders.create' }).waitFor();
    const rows = page.locator('table.history tbody tr');
    assert.ok(await rows.count() >= 6);
    assert.match(await rows.last().innerText(), /create\s+alice/);
    const diff = page.getByLabel('Diff', { exact: true });
    assert.match(await diff.innerText(), /^- description: checkout writes$/m);
    assert.match(await diff.innerText(), /^\+ description: changed in the first tab$/m);
    // Compare version 1 with the current one: the mode never changed, the description did.
    await page.getByLabel('Compare from version 1', { exact: true }).check();
    assert.doesNotMatch(await diff.innerText(), /^[-+] mode:/m);
    await screenshot(page, 'history-1280');
    const v1 = page.getByRole('row').filter({ has: page.getByLabel('Compare from version 1', { exact: true }) });
    await v1.getByRole('button', { name: 'Restore this version' }).click();
    await page.getByRole('status').getByText(/Version 1 restored as version \d+/).waitFor();
    const now = (await admin('GET', '/v1/policies/orders.create')).body;
    assert.equal(now.description, 'checkout writes');
    assert.ok(now.version > 1);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('the editor works from the keyboard alone', async () => {
    const page = await alicePage();
    await page.goto(server.url + '/#/policies?app=shop');
    await page.getByRole('heading', { name: 'New policy' }).waitFor();
    const focusOn = async (label) => {
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press('Tab');
        const focused = await page.evaluate(() => document.activeElement?.labels?.[0]?.textContent);
        if (focused === label) return;
      }
      throw new Error(`Tab never reached ${label}`);
    };
    await focusOn('Name');
    await page.keyboard.type('keyboard.policy');
    await focusOn('Algorithm');
    await page.keyboard.press('End'); // the last algorithm: concurrency
    await focusOn('limit');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('7');
    await page.keyboard.press('Enter'); // submits the form
    await page.getByRole('heading', { name: 'Policy keyboard.policy' }).waitFor();
    const stored = (await admin('GET', '/v1/policies/keyboard.policy')).body;
    assert.deepEqual(stored.limits, [{ algorithm: 'concurrency', limit: 7, lease_ttl: '30s' }]);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('the subject inspector peeks at a key and an owner resets it', async () => {
    for (let i = 0; i < 6; i++) {
      await fetch(server.url + '/v1/acquire', { method: 'POST', headers: json,
        body: JSON.stringify({ app: 'shop', policy: 'orders.create', key: 'user-42' }) });
    }
    const page = await alicePage();
    await page.goto(server.url + '/#/policies/orders.create');
    const inspector = page.getByRole('region', { name: 'Subject inspector' });
    await inspector.getByLabel('Key', { exact: true }).fill('user-42');
    await inspector.getByRole('button', { name: 'Peek' }).click();
    const state = inspector.getByRole('table', { name: 'State of user-42' });
    await state.waitFor();
    const remaining = async () => Number(await state.locator('tbody tr td').nth(2).innerText());
    assert.ok(await remaining() < 5);
    await inspector.getByRole('button', { name: 'Reset this key' }).click();
    await inspector.getByRole('button', { name: 'Yes, reset' }).click();
    await inspector.getByText('user-42 was reset').waitFor();
    assert.equal(await remaining(), 5);
    // A dry run of a cost above the bucket's capacity: never, whatever the timing.
    await inspector.getByLabel('Cost', { exact: true }).fill('6');
    await inspector.getByRole('button', { name: 'Peek' }).click();
    await inspector.getByText('A request of cost 6 can never be allowed: limit 1 grants less.').waitFor();
    assert.equal(await state.locator('tbody tr td').nth(5).innerText(), 'never (more than the limit grants)');
    assert.equal(await remaining(), 5, 'the dry run took nothing');
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('the inspector shows when a denied caller may retry, lists leases, and an owner releases one', async () => {
    const created = await admin('POST', '/v1/policies', { name: 'pool.db', apps: ['shop'],
      limits: [{ algorithm: 'concurrency', limit: 2, lease_ttl: '1h' }] });
    assert.equal(created.status, 201);
    const leases = [];
    for (let i = 0; i < 3; i++) {
      const answer = await fetch(server.url + '/v1/acquire', { method: 'POST', headers: json,
        body: JSON.stringify({ app: 'shop', policy: 'pool.db', key: 'worker-1' }) });
      const decision = await answer.json();
      assert.equal(decision.allowed, i < 2);
      if (decision.lease) leases.push(decision.lease);
    }
    const page = await alicePage();
    await page.goto(server.url + '/#/policies/pool.db');
    const inspector = page.getByRole('region', { name: 'Subject inspector' });
    await inspector.getByLabel('Key', { exact: true }).fill('worker-1');
    await inspector.getByRole('button', { name: 'Peek' }).click();
    // Both leases end in an hour: the first of them frees a unit.
    const dryRun = inspector.getByLabel('Dry run');
    await dryRun.waitFor();
    assert.match(await dryRun.innerText(),
      /^A request of cost 1 would be denied; it may retry in (59 min \d+ s|1 h) \(limit 1 decides\)\.$/);
    const state = inspector.getByRole('table', { name: 'State of worker-1' });
    assert.match(await state.locator('tbody tr td').nth(5).innerText(), /^retry in (59 min \d+ s|1 h)$/);
    const held = inspector.getByRole('table', { name: 'Leases of limit 1' });
    assert.equal(await held.locator('tbody tr').count(), 2);
    await inspector.getByText('2 held, 2 of 2 units.').waitFor();
    const first = `${leases[0].slice(0, 8)}…`;
    assert.equal(await held.locator('tbody tr').first().locator('code').innerText(), first);
    await screenshot(page, 'inspector-1280');

    // bob views shop: he sees the leases, by a prefix, and no Release or Reset.
    const viewer = await newPage(browser);
    await signIn(viewer, server.url, 'bob', 'bob-password-1234');
    await viewer.getByRole('heading', { name: 'Apps' }).waitFor();
    await viewer.goto(server.url + '/#/policies/pool.db');
    const bobs = viewer.getByRole('region', { name: 'Subject inspector' });
    await bobs.getByLabel('Key', { exact: true }).fill('worker-1');
    await bobs.getByRole('button', { name: 'Peek' }).click();
    const seen = bobs.getByRole('table', { name: 'Leases of limit 1' });
    await seen.waitFor();
    assert.equal(await seen.locator('tbody tr').count(), 2);
    assert.equal(await seen.locator('tbody tr').first().locator('code').innerText(), first);
    assert.equal(await bobs.getByRole('button', { name: /Release|Reset/ }).count(), 0);
    assert.deepEqual(viewer.problems, []);
    await viewer.context().close();

    await inspector.getByRole('button', { name: `Release lease ${first}` }).click();
    await inspector.getByText(`Lease ${first} released.`).waitFor();
    assert.equal(await held.locator('tbody tr').count(), 1);
    assert.equal(await dryRun.innerText(), 'A request of cost 1 would be allowed now.');
    // The released unit is free for a real caller, and only one.
    for (const expected of [true, false]) {
      const answer = await fetch(server.url + '/v1/acquire', { method: 'POST', headers: json,
        body: JSON.stringify({ app: 'shop', policy: 'pool.db', key: 'worker-1' }) });
      assert.equal((await answer.json()).allowed, expected);
    }
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('admins create users (one-time password shown once) and tokens (secret shown once)', async () => {
    const page = await newPage(browser);
    await signIn(page, server.url, 'admin', ADMIN_PASSWORD);
    await page.getByRole('link', { name: 'Users and tokens' }).click();
    const form = page.getByRole('form', { name: 'Create a user' });
    await form.getByLabel('Name', { exact: true }).fill('dave');
    await form.getByRole('button', { name: 'Create user' }).click();
    const password = await form.locator('code.secret').innerText();
    assert.match(password, /^[A-Za-z0-9]{20}$/);
    await page.getByRole('table', { name: 'Users' }).getByRole('cell', { name: 'dave', exact: true }).waitFor();

    const tokenForm = page.getByRole('form', { name: 'Create a token' });
    await tokenForm.getByLabel('Expires in', { exact: true }).fill('30 days');
    await tokenForm.getByRole('button', { name: 'Create token' }).click();
    await tokenForm.locator('.field.invalid').getByText(/unit/).waitFor();
    await tokenForm.getByLabel('Description', { exact: true }).fill('ci');
    await tokenForm.getByLabel('Expires in', { exact: true }).fill('30d');
    await tokenForm.getByRole('button', { name: 'Create token' }).click();
    const token = await tokenForm.locator('code.secret').innerText();
    const whoami = await fetch(server.url + '/v1/session', { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(whoami.status, 200);
    const row = page.getByRole('table', { name: 'Tokens' }).getByRole('row', { name: /ci/ });
    assert.notEqual(await row.getByRole('cell').nth(4).innerText(), 'never');
    await row.getByRole('button', { name: /Revoke token/ }).click();
    await row.waitFor({ state: 'detached' });
    const revoked = await fetch(server.url + '/v1/session', { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(revoked.status, 401);
    await screenshot(page, 'users-1280');
    assert.deepEqual(page.problems, []);
    await page.context().close();

    // dave's first login asks for a new password.
    const dave = await newPage(browser);
    await signIn(dave, server.url, 'dave', password);
    await dave.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    await dave.context().close();
  });

  test('the Users page lists tokens across pages (issue 32: listings are paged)', async () => {
    for (let i = 0; i < 60; i++) {
      const made = await admin('POST', '/v1/tokens', { description: `bulk-${String(i).padStart(2, '0')}` });
      assert.equal(made.status, 201);
    }
    const first = await admin('GET', '/v1/tokens?limit=50');
    assert.equal(first.body.tokens.length, 50);
    assert.ok(first.body.next_cursor);
    const page = await newPage(browser);
    await signIn(page, server.url, 'admin', ADMIN_PASSWORD);
    await page.getByRole('link', { name: 'Users and tokens' }).click();
    const tokens = page.getByRole('table', { name: 'Tokens' });
    await tokens.getByRole('row', { name: /bulk-59/ }).waitFor();
    await tokens.getByRole('row', { name: /bulk-00/ }).waitFor();
    assert.ok(await tokens.getByRole('row', { name: /bulk-/ }).count() === 60);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test('measures how long a list of 500 policies takes to render (reported, not asserted)', async (t) => {
    assert.equal((await admin('POST', '/v1/apps', { name: 'bulk' })).status, 201);
    for (let i = 0; i < 500; i++) {
      const created = await admin('POST', '/v1/policies', {
        name: `bulk.${String(i).padStart(3, '0')}`, apps: ['bulk'], description: `policy ${i}`,
        limits: [{ algorithm: 'token_bucket', capacity: 10 + i, refill: 5, period: '1s' },
          { algorithm: 'fixed_window', limit: 1000, window: '1h' }] });
      assert.equal(created.status, 201);
    }
    const page = await newPage(browser);
    await signIn(page, server.url, 'admin', ADMIN_PASSWORD);
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    // From the route change to 500 rendered rows, measured in the page.
    await page.evaluate(() => {
      window.listStart = performance.now();
      location.hash = '#/apps/bulk';
    });
    await page.waitForFunction(() => document.querySelectorAll('table.policies tbody tr').length >= 500);
    const ms = await page.evaluate(() => performance.now() - window.listStart);
    t.diagnostic(`500-policy list rendered in ${ms.toFixed(0)} ms`);
    if (process.env.SLUICE_SCREENSHOTS) {
      writeFileSync(join(process.env.SLUICE_SCREENSHOTS, 'list-500-ms.txt'), `${ms.toFixed(0)}\n`);
    }
    await page.getByLabel('Filter policies', { exact: true }).fill('bulk.499');
    await page.waitForFunction(() => document.querySelectorAll('table.policies tbody tr').length === 1);
    await page.context().close();
  });

  test('screens fit a phone (390 px)', async () => {
    const page = await alicePage({ width: 390, height: 844 });
    await page.goto(server.url + '/#/apps/shop');
    await page.getByRole('row', { name: /orders\.create/ }).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
    assert.ok(overflow <= 0, `the list is ${overflow}px wider than the screen`);
    await screenshot(page, 'policies-390');
    await page.goto(server.url + '/#/policies/orders.create');
    await page.getByLabel('Description', { exact: true }).waitFor();
    await screenshot(page, 'editor-390');
    await page.close();
  });
});
