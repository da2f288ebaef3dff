// Test fixtures for the console's browser tests: a real `sluice serve` (the built binary, from
// SLUICE_BINARY) on a free loopback port with a fresh SQLite directory, stopped by its PID; an
// admin API client for setting the scene; and Debian's chromium driven by playwright-core.
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
  '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync'];

const binary = process.env.SLUICE_BINARY ?? '../build/release/src/sluice/cli/sluice';

// Starts `sluice serve` on 127.0.0.1:0 and resolves once it logged the port it listens on,
// with the one-time password of the first admin it created.
export async function startServer() {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-console-'));
  const child = spawn(binary, ['serve', '--listen', '127.0.0.1:0',
    '--policies', `sqlite://${join(dir, 'policies.db')}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  const log = [];
  const ready = new Promise((resolve, reject) => {
    let password = null;
    let buffer = '';
    child.stderr.on('data', (chunk) => {
      buffer += chunk;
      let newline;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        log.push(line);
        let entry;
        try { entry = JSON.parse(line); } catch { continue; }
        if (entry.password) password = entry.password;
        if (entry.msg === 'listening') resolve({ port: entry.port, password });
      }
    });
    child.on('exit', (code) => reject(new Error(`sluice serve exited with ${code}:\n${log.join('\n')}`)));
  });
  const { port, password } = await ready;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    password,
    log,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// A client of the admin API with a session of its own (cookie + CSRF token), for setting up
// users, apps and policies the way another person or program would.
export async function apiClient(base, user, password) {
  const login = await fetch(base + '/v1/session', {
    method: 'POST', body: JSON.stringify({ user, password }),
    headers: { 'Content-Type': 'application/json' },
  });
  if (!login.ok) throw new Error(`login ${user}: ${login.status} ${await login.text()}`);
  const cookie = login.headers.get('set-cookie').split(';')[0];
  const { csrf_token: csrf } = await login.json();
  const call = async (method, path, body) => {
    const response = await fetch(base + path, {
      method,
      headers: { Cookie: cookie, 'X-CSRF-Token': csrf, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  };
  return call;
}

export async function launchBrowser() {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}

// A page in a new context (its own cookies) that records every console error, CSP violation or
// dialog in page.problems, which the tests expect to stay empty.
export async function newPage(browser, { width = 1280, height = 860 } = {}) {
  const context = await browser.newContext({ viewport: { width, height } });
  context.setDefaultTimeout(20000); // generous: ctest runs other servers beside it
  return newPageIn(context, { width, height });
}

// The same in an existing context (sharing its session).
export async function newPageIn(context, { width = 1280, height = 860 } = {}) {
  const page = await context.newPage();
  await page.setViewportSize({ width, height });
  page.problems = [];
  // Errors the page logs (CSP violations among them: "Refused to ..."); an API answer of 4xx is
  // logged by the browser as a failed resource, which the tests provoke on purpose.
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) {
      page.problems.push(m.text());
    }
  });
  page.on('pageerror', (e) => page.problems.push(String(e)));
  page.on('dialog', (d) => { page.problems.push('dialog: ' + d.message()); d.dismiss(); });
  return page;
}

export async function screenshot(page, name) {
  const dir = process.env.SLUICE_SCREENSHOTS;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, name + '.png'), fullPage: true });
}

export async function signIn(page, url, user, password) {
  await page.goto(url + '/');
  await page.getByLabel('User').fill(user);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}
