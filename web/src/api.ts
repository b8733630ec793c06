// Every call goes to /json/<path> with the session cookie; writes carry the
// csrftoken cookie's value in X-CSRFToken. The client never holds an API key.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown>,
  ) {
    super(message);
  }
}

export type Params = Record<string, string | number | boolean | object | undefined>;

export function csrfToken(cookie: string = document.cookie): string | undefined {
  for (const part of cookie.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === 'csrftoken') return decodeURIComponent(v.join('='));
  }
  return undefined;
}

export function encodeParams(params: Params): URLSearchParams {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    body.set(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
  return body;
}

let onUnauthorized = (): void => {
  const next = location.pathname + location.search + location.hash;
  location.assign(`/login/?next=${encodeURIComponent(next)}`);
};
let onCsrfFailed = (): void => {
  // A page without the csrftoken cookie has no session either; a reload that just
  // happened and failed again will not help: both go to the login page.
  const last = Number(sessionStorage.getItem('hearth-csrf-reload') ?? 0);
  if (csrfToken() === undefined || Date.now() - last < 30_000) {
    onUnauthorized();
    return;
  }
  sessionStorage.setItem('hearth-csrf-reload', String(Date.now()));
  location.reload();
};

export function setAuthHandlers(unauthorized: () => void, csrf: () => void): void {
  onUnauthorized = unauthorized;
  onCsrfFailed = csrf;
}

async function handle<T>(res: Response): Promise<T> {
  let body: Record<string, unknown>;
  try {
    body = (await res.json()) as Record<string, unknown>;
  } catch {
    body = { result: 'error', msg: `HTTP ${res.status}` };
  }
  if (res.ok && body.result !== 'error') return body as T;
  const code = typeof body.code === 'string' ? body.code : 'BAD_REQUEST';
  if (res.status === 401) onUnauthorized();
  if (res.status === 403 && code === 'CSRF_FAILED') onCsrfFailed();
  throw new ApiError(res.status, code, typeof body.msg === 'string' ? body.msg : `HTTP ${res.status}`, body);
}

export async function call<T = Record<string, unknown>>(
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT',
  path: string,
  params: Params = {},
  signal?: AbortSignal,
): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  let url = `/json/${path}`;
  let body: URLSearchParams | undefined;
  if (method === 'GET') {
    const q = encodeParams(params).toString();
    if (q) url += `?${q}`;
  } else {
    body = encodeParams(params);
    const token = csrfToken();
    if (token !== undefined) headers['X-CSRFToken'] = token;
  }
  const res = await fetch(url, { method, headers, body, credentials: 'same-origin', signal: signal ?? null });
  return handle<T>(res);
}

export async function upload<T = Record<string, unknown>>(path: string, form: FormData, method: 'POST' = 'POST'): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  const token = csrfToken();
  if (token !== undefined) headers['X-CSRFToken'] = token;
  const res = await fetch(`/json/${path}`, { method, headers, body: form, credentials: 'same-origin' });
  return handle<T>(res);
}

export const get = <T = Record<string, unknown>>(path: string, params?: Params, signal?: AbortSignal) =>
  call<T>('GET', path, params, signal);
export const post = <T = Record<string, unknown>>(path: string, params?: Params) => call<T>('POST', path, params);
export const patch = <T = Record<string, unknown>>(path: string, params?: Params) => call<T>('PATCH', path, params);
export const del = <T = Record<string, unknown>>(path: string, params?: Params) => call<T>('DELETE', path, params);

/** Ends the session: a form POST, as the server answers with a redirect to /login/. */
export function logout(): void {
  const form = document.createElement('form');
  form.method = 'POST';
  form.action = '/accounts/logout/';
  const input = document.createElement('input');
  input.type = 'hidden';
  input.name = 'csrfmiddlewaretoken';
  input.value = csrfToken() ?? '';
  form.append(input);
  document.body.append(form);
  form.submit();
}
