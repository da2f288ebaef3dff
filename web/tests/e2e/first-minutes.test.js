// The console bugs a new user hits in the first ten minutes (issue 37, item 0), each as a person
// meets it in Chromium against a real `sluice serve`: changing a password (admin, owner, viewer),
// the editor's state across routes, and feedback beside the Save button.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { apiClient, launchBrowser, newPage, screenshot, signIn, startServer } from './harness.js';

const ADMIN_PASSWORD = 'the-admin-password-1';

// Whether the element is in the viewport now (the user can see it without scrolling).
const inView = (locator) => locator.evaluate((e) => {
  const r = e.getBoundingClientRect();
  return r.bottom > 0 && r.top < innerHeight;
});

// The vertical gap in px between two elements (0 when they overlap).
const gapBetween = async (a, b) => {
  const [x, y] = [await a.boundingBox(), await b.boundingBox()];
  return Math.max(0, y.y - (x.y + x.height), x.y - (y.y + y.height));
};

describe('console: the first ten minutes', () => {
  let server;
  let browser;
  let admin;

  before(async () => {
    server = await startServer();
    browser = await launchBrowser();
    const first = await apiClient(server.url, 'admin', server.password);
    const changed = await first('PUT', '/v1/users/admin/password',
      { password: ADMIN_PASSWORD, current_password: server.password });
    assert.equal(changed.status, 204);
    admin = await apiClient(server.url, 'admin', ADMIN_PASSWORD);
    assert.equal((await admin('POST', '/v1/apps', { name: 'shop' })).status, 201);
    for (const [name, role] of [['olga', 'owner'], ['vic', 'viewer'], ['carl', 'viewer'], ['edna', 'owner']]) {
      assert.equal((await admin('POST', '/v1/users', { name, password: `${name}-password-1234` })).status, 201);
      assert.equal((await admin('PUT', `/v1/users/${name}/roles/shop`, { role })).status, 200);
    }
    assert.equal((await admin('POST', '/v1/policies', { name: 'search', apps: ['shop'],
      limits: [{ algorithm: 'token_bucket', capacity: 10, refill: 1, period: '1s' }] })).status, 201);
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  const loginStatus = async (user, password) => (await fetch(server.url + '/v1/session', {
    method: 'POST', body: JSON.stringify({ user, password }),
    headers: { 'Content-Type': 'application/json' } })).status;

  for (const [user, role] of [['vic', 'a viewer'], ['olga', 'an owner']]) {
    test(`${role} changes their own password; a wrong current one is named beside its field`, async () => {
      const page = await newPage(browser);
      await signIn(page, server.url, user, `${user}-password-1234`);
      await page.getByRole('heading', { name: 'Apps' }).waitFor();
      await page.getByRole('link', { name: 'Change password' }).click();
      const form = page.getByRole('form', { name: 'Change your password' });
      // The server's rules are shown beside the new password before anything is typed.
      await form.locator('.field', { hasText: 'New password' }).getByText(/12 characters/).waitFor();
      await form.getByLabel('Current password', { exact: true }).fill('not-my-password-at-all');
      await form.getByLabel('New password', { exact: true }).fill(`${user}-second-password`);
      await form.getByLabel('Repeat the new password', { exact: true }).fill(`${user}-second-password`);
      await form.getByRole('button', { name: 'Set password' }).click();
      const current = form.locator('.field.invalid', { hasText: 'Current password' });
      await current.getByRole('alert').getByText('is not the current password').waitFor();
      // Nothing typed was lost.
      assert.equal(await form.getByLabel('New password', { exact: true }).inputValue(), `${user}-second-password`);
      await form.getByLabel('Current password', { exact: true }).fill(`${user}-password-1234`);
      await form.getByRole('button', { name: 'Set password' }).click();
      await page.getByRole('status').getByText('Your password was changed').waitFor();
      // The change ended the old session; the console signed in again with the new password.
      await page.reload();
      await page.getByRole('heading', { name: 'Change your password' }).waitFor();
      assert.match(await page.locator('.who').innerText(), new RegExp(`Signed in as ${user}`));
      assert.equal(await loginStatus(user, `${user}-password-1234`), 401);
      assert.equal(await loginStatus(user, `${user}-second-password`), 200);
      assert.deepEqual(page.problems, []);
      await page.context().close();
    });
  }

  test('an admin sets their own password with the current one, and another user\'s without', async () => {
    const page = await newPage(browser);
    await signIn(page, server.url, 'admin', ADMIN_PASSWORD);
    await page.getByRole('link', { name: 'Users and tokens' }).click();
    const users = page.getByRole('table', { name: 'Users' });
    const own = users.getByRole('row', { name: /^admin/ });
    await own.getByRole('button', { name: 'Set password' }).click();
    const form = own.getByRole('form', { name: 'New password for admin' });
    await form.locator('.field', { hasText: 'New password' }).getByText(/12 characters/).waitFor();
    // A rule the server enforces: the error stays beside the field, the form stays open.
    await form.getByLabel('Current password', { exact: true }).fill(ADMIN_PASSWORD);
    await form.getByLabel('New password', { exact: true }).fill('short');
    await form.getByLabel('Repeat the new password', { exact: true }).fill('short');
    await form.getByRole('button', { name: 'Set password' }).click();
    await form.locator('.field.invalid', { hasText: 'New password' }).getByRole('alert')
      .getByText(/at least 12 characters/).waitFor();
    assert.equal(await form.getByLabel('Current password', { exact: true }).inputValue(), ADMIN_PASSWORD);
    await screenshot(page, 'set-password-1280');
    await form.getByLabel('New password', { exact: true }).fill('the-admin-password-2');
    await form.getByLabel('Repeat the new password', { exact: true }).fill('the-admin-password-2');
    await form.getByRole('button', { name: 'Set password' }).click();
    await page.getByRole('status').getByText('Your password was changed').waitFor();
    assert.equal(await loginStatus('admin', 'the-admin-password-2'), 200);
    admin = await apiClient(server.url, 'admin', 'the-admin-password-2'); // the change ended its session

    // Another user's password: no current password asked, a message when it is set.
    const carl = users.getByRole('row', { name: /^carl/ });
    await carl.getByRole('button', { name: 'Set password' }).click();
    const other = carl.getByRole('form', { name: 'New password for carl' });
    assert.equal(await other.getByLabel('Current password', { exact: true }).count(), 0);
    await other.getByLabel('New password', { exact: true }).fill('carl-new-password-1');
    await other.getByLabel('Repeat the new password', { exact: true }).fill('carl-new-password-1');
    await other.getByRole('button', { name: 'Set password' }).click();
    await page.getByRole('status').getByText('The password of carl was set').waitFor();
    assert.equal(await loginStatus('carl', 'carl-new-password-1'), 200);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test('the forced password page has a sign-out', async () => {
    const created = await admin('POST', '/v1/users', { name: 'nina' });
    assert.equal(created.status, 201);
    const page = await newPage(browser);
    await signIn(page, server.url, 'nina', created.body.password);
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    assert.equal((await fetch(server.url + '/v1/session', { headers: { Cookie: cookie } })).status, 401);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test('Back right after creating a policy shows an empty New policy page', async () => {
    const page = await newPage(browser);
    await signIn(page, server.url, 'edna', 'edna-password-1234');
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    await page.goto(server.url + '/#/apps/shop');
    await page.getByRole('link', { name: 'New policy' }).click();
    await page.getByLabel('Name', { exact: true }).fill('checkout');
    await page.getByRole('button', { name: 'Create policy' }).click();
    await page.getByText('Version 1, changed by edna').waitFor();
    await page.goBack();
    await page.getByRole('heading', { name: 'New policy' }).waitFor();
    assert.equal(await page.getByLabel('Name', { exact: true }).inputValue(), '');
    assert.equal(await page.getByText(/^Version \d+, changed by/).count(), 0);
    assert.equal(await page.getByRole('region', { name: 'Subject inspector' }).count(), 0);
    assert.equal(await page.locator('.chart').count(), 0);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test('New policy opened from another policy\'s page starts empty, without its error', async () => {
    const page = await newPage(browser);
    await signIn(page, server.url, 'edna', 'edna-password-1234');
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    await page.goto(server.url + '/#/policies/search');
    await page.getByLabel('capacity', { exact: true }).fill('0');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('.field.invalid', { hasText: 'capacity' }).getByRole('alert').waitFor();
    await page.evaluate(() => { location.hash = '#/policies?app=shop'; });
    await page.getByRole('heading', { name: 'New policy' }).waitFor();
    assert.equal(await page.getByLabel('Name', { exact: true }).inputValue(), '');
    assert.equal(await page.getByLabel('Apps', { exact: true }).inputValue(), 'shop');
    assert.notEqual(await page.getByLabel('capacity', { exact: true }).inputValue(), '0');
    assert.equal(await page.locator('.field.invalid').count(), 0);
    assert.equal(await page.getByRole('alert').count(), 0);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test('a save conflict is announced beside Save, where the user is looking', async () => {
    const page = await newPage(browser);
    await signIn(page, server.url, 'edna', 'edna-password-1234');
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    await page.goto(server.url + '/#/policies/search');
    await page.getByLabel('Description', { exact: true }).fill('changed in the console');
    const stored = (await admin('GET', '/v1/policies/search')).body;
    const { name, apps, limits, version } = stored;
    assert.equal((await admin('PUT', '/v1/policies/search',
      { name, apps, limits, version, description: 'changed by the API' })).status, 200);
    const save = page.getByRole('button', { name: 'Save' });
    await save.click();
    const conflict = page.getByRole('alert').filter({ hasText: 'Someone else changed this policy' });
    await conflict.waitFor();
    assert.ok(await gapBetween(conflict, save) < 100, 'the conflict is announced beside Save');
    assert.ok(await inView(conflict), 'the conflict is on screen');
    assert.ok(await conflict.evaluate((e) => e.contains(document.activeElement)),
      'focus moved to the announcement');
    // A refused save is announced there too, and an accepted one.
    await conflict.getByRole('button', { name: 'Reload the current version' }).click();
    await conflict.waitFor({ state: 'detached' });
    await page.getByLabel('Apps', { exact: true }).fill('shop, billing');
    await save.click();
    const problem = page.locator('.problem');
    await problem.waitFor();
    assert.ok(await gapBetween(problem, save) < 100, 'the refusal is announced beside Save');
    assert.ok(await problem.evaluate((e) => e.contains(document.activeElement)));
    await page.getByLabel('Apps', { exact: true }).fill('shop');
    await save.click();
    const saved = page.getByRole('status').getByText(/Saved as version \d+/);
    await saved.waitFor();
    assert.ok(await gapBetween(saved, save) < 100);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
  test('revoking a role asks first; Grant and Add app say they succeeded', async () => {
    const page = await newPage(browser);
    await signIn(page, server.url, 'admin', 'the-admin-password-2');
    const add = page.getByRole('form', { name: 'Add an app' });
    await add.getByLabel('Name', { exact: true }).fill('billing');
    await add.getByRole('button', { name: 'Add app' }).click();
    await add.getByRole('status').getByText('App billing added.').waitFor();
    const row = page.getByRole('row', { name: /^billing/ });
    const grant = row.getByRole('form', { name: 'Grant a role on billing' });
    await grant.getByLabel('User', { exact: true }).selectOption('vic');
    await grant.getByLabel('Role', { exact: true }).selectOption('viewer');
    await grant.getByRole('button', { name: 'Grant' }).click();
    await row.getByRole('status').getByText('vic is now viewer of billing.').waitFor();
    await row.getByRole('button', { name: 'Revoke viewer vic on billing' }).click();
    const confirm = row.getByRole('group', { name: 'Confirm revoking viewer vic on billing' });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    const vic = (await admin('GET', '/v1/users/vic')).body;
    assert.deepEqual((vic.user ?? vic).roles, { shop: 'viewer', billing: 'viewer' });
    await row.getByRole('button', { name: 'Revoke viewer vic on billing' }).click();
    await confirm.getByRole('button', { name: 'Yes, revoke' }).click();
    await row.getByRole('list', { name: 'viewers of billing' }).waitFor({ state: 'detached' });
    await row.getByRole('status').getByText('vic is no longer viewer of billing.').waitFor();
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test('Disable and Shadow ask first, and say what they did', async () => {
    const page = await newPage(browser);
    await signIn(page, server.url, 'edna', 'edna-password-1234');
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    await page.goto(server.url + '/#/apps/shop');
    const row = page.getByRole('row', { name: /^search/ });
    await row.getByRole('button', { name: 'Disable' }).click();
    const disable = row.getByRole('group', { name: 'Confirm disabling search' });
    await disable.getByText(/allowed/).waitFor(); // says what disabling means
    await disable.getByRole('button', { name: 'Cancel' }).click();
    assert.notEqual((await admin('GET', '/v1/policies/search')).body.enabled, false);
    await row.getByRole('button', { name: 'Disable' }).click();
    await disable.getByRole('button', { name: 'Yes, disable' }).click();
    await row.getByRole('status').getByText('search is disabled.').waitFor();
    assert.equal((await admin('GET', '/v1/policies/search')).body.enabled, false);
    await row.getByRole('button', { name: 'Shadow' }).click();
    const shadow = row.getByRole('group', { name: 'Confirm shadowing search' });
    await shadow.waitFor();
    await screenshot(page, 'confirm-1280');
    await shadow.getByRole('button', { name: 'Yes, shadow' }).click();
    await row.getByRole('status').getByText('search is in shadow mode.').waitFor();
    assert.equal((await admin('GET', '/v1/policies/search')).body.mode, 'shadow');
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test('Reset this key asks first', async () => {
    assert.equal((await admin('POST', '/v1/policies', { name: 'reports', apps: ['shop'],
      limits: [{ algorithm: 'token_bucket', capacity: 10, refill: 1, period: '1h' }] })).status, 201);
    for (let i = 0; i < 3; i++) {
      await fetch(server.url + '/v1/acquire', { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ app: 'shop', policy: 'reports', key: 'user-7' }) });
    }
    const page = await newPage(browser);
    await signIn(page, server.url, 'edna', 'edna-password-1234');
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    await page.goto(server.url + '/#/policies/reports');
    const inspector = page.getByRole('region', { name: 'Subject inspector' });
    await inspector.getByLabel('Key', { exact: true }).fill('user-7');
    await inspector.getByRole('button', { name: 'Peek' }).click();
    const remaining = inspector.getByRole('table', { name: 'State of user-7' }).locator('tbody tr td').nth(2);
    await remaining.waitFor();
    const before = await remaining.innerText();
    assert.equal(before, '7');
    await inspector.getByRole('button', { name: 'Reset this key' }).click();
    const confirm = inspector.getByRole('group', { name: 'Confirm resetting user-7' });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await inspector.getByRole('button', { name: 'Peek' }).click();
    await inspector.getByRole('table', { name: 'State of user-7' }).waitFor();
    assert.equal(await remaining.innerText(), before, 'Cancel reset nothing');
    await inspector.getByRole('button', { name: 'Reset this key' }).click();
    await confirm.getByRole('button', { name: 'Yes, reset' }).click();
    await inspector.getByText('user-7 was reset').waitFor();
    assert.equal(await remaining.innerText(), '10');
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});
