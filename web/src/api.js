// Calls to the admin API (docs/admin-api.md) from the console: JSON in and out, the session
// cookie sent by the browser, and the session's CSRF token echoed in X-CSRF-Token on writes.
// Failures become ApiError carrying the problem+json body (detail and per-field errors).

let csrfToken = '';

export function setCsrfToken(token) {
  csrfToken = token ?? '';
}

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem ?? {};
  }

  // {field: message} of a validation problem ("limits[0].capacity" -> "must be at least 1").
  get fieldErrors() {
    const out = {};
    for (const e of this.problem.errors ?? []) {
      out[e.field] = out[e.field] ? out[e.field] + '; ' + e.message : e.message;
    }
    return out;
  }
}

// Called with every 401, so the app can show the login again.
let onUnauthenticated = () => {};
export function whenUnauthenticated(fn) {
  onUnauthenticated = fn;
}

export async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
    cache: 'no-store',
  });
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { detail: text };
  }
  if (!response.ok) {
    if (response.status === 401 && path !== '/v1/session') onUnauthenticated();
    throw new ApiError(response.status, data);
  }
  return data;
}

export const enc = encodeURIComponent;

// Every entry of a paginated listing (GET /v1/users, GET /v1/tokens: {[key]: [...], next_cursor}),
// following next_cursor page by page, PAGE_SIZE at a time so no one answer grows large.
const PAGE_SIZE = 50;
export async function apiAll(path, key) {
  const out = [];
  let cursor = '';
  const base = `${path}${path.includes('?') ? '&' : '?'}limit=${PAGE_SIZE}`;
  for (;;) {
    const page = await api('GET', cursor ? `${base}&cursor=${enc(cursor)}` : base);
    out.push(...(page[key] ?? []));
    if (!page.next_cursor) return out;
    cursor = page.next_cursor;
  }
}
