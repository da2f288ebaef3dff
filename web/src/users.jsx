// Users and API tokens. Admins create users (a generated password is shown once and must be
// changed at the first login), set a user's password, and delete users; everyone creates and
// revokes their own tokens (admins anyone's), each secret shown once.
import { useEffect, useState } from 'preact/hooks';
import { api, apiAll, enc } from './api.js';
import { PasswordForm } from './password.jsx';
import { Confirm, Field, formatTime, Problem } from './ui.jsx';

function Secret({ label, value }) {
  if (!value) return null;
  return (
    <div class="notice" role="status">
      <p>{label} (shown only now; store it safely):</p>
      <code class="secret">{value}</code>
    </div>
  );
}

function UserRow({ user, me, onChange, onError, onSession }) {
  const [confirming, setConfirming] = useState(false);
  const [settingPassword, setSettingPassword] = useState(false);
  const [message, setMessage] = useState('');
  const own = user.name === me;
  const act = async (fn) => {
    try {
      await fn();
      onChange();
    } catch (e) {
      onError(e);
    }
  };
  // One's own change ends this session too: sign in again with the new password.
  const passwordSet = async (password) => {
    if (own) onSession(await api('POST', '/v1/session', { user: user.name, password }));
    setSettingPassword(false);
    setMessage(own ? 'Your password was changed; your API tokens were revoked.'
      : `The password of ${user.name} was set; their sessions ended and their API tokens were revoked.`);
    onChange();
  };
  return (
    <tr>
      <td>{user.name}{user.admin ? ' (admin)' : ''}</td>
      <td>{Object.entries(user.roles ?? {}).map(([app, role]) => `${app}: ${role}`).join(', ') || '—'}</td>
      <td>{formatTime(user.created_at)}</td>
      <td><div class="actions">
        {settingPassword ? (
          <PasswordForm name={user.name} own={own} label={`New password for ${user.name}`} autofocus
            onChanged={passwordSet} onCancel={() => setSettingPassword(false)} />
        ) : (
          <button type="button" onClick={() => { setMessage(''); setSettingPassword(true); }}>
            Set password</button>
        )}
        {!own && !confirming && (
          <button type="button" class="danger" onClick={() => setConfirming(true)}>Delete</button>
        )}
        {confirming && (
          <Confirm label={`Confirm deleting ${user.name}`} question={`Delete ${user.name}?`}
            yes="Yes, delete" onYes={() => act(() => api('DELETE', `/v1/users/${enc(user.name)}`))}
            onCancel={() => setConfirming(false)} />
        )}
      </div>
      {message && <p class="ok" role="status">{message}</p>}</td>
    </tr>
  );
}

export function UsersView({ user, onSession }) {
  const [users, setUsers] = useState([]);
  const [tokens, setTokens] = useState([]);
  const [error, setError] = useState(null);
  const [form, setForm] = useState({ name: '', password: '', admin: false });
  const [formError, setFormError] = useState(null);
  const [created, setCreated] = useState(null);
  const [tokenDescription, setTokenDescription] = useState('');
  const [tokenExpiresIn, setTokenExpiresIn] = useState('');
  const [tokenError, setTokenError] = useState(null);
  const [tokenUser, setTokenUser] = useState(user.name);
  const [secret, setSecret] = useState('');

  const load = async () => {
    try {
      if (user.admin) setUsers(await apiAll('/v1/users', 'users'));
      const owners = user.admin ? [user.name, ...new Set(users.map((u) => u.name))] : [user.name];
      const lists = await Promise.all([...new Set(owners)].map((o) =>
        apiAll(`/v1/tokens?user=${enc(o)}`, 'tokens')));
      setTokens(lists.flat());
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => { load(); }, [users.length]);

  const createUser = async (event) => {
    event.preventDefault();
    setFormError(null);
    setCreated(null);
    try {
      const body = { name: form.name, admin: form.admin };
      if (form.password) body.password = form.password;
      const answer = await api('POST', '/v1/users', body);
      setCreated(answer);
      setForm({ name: '', password: '', admin: false });
      setUsers(await apiAll('/v1/users', 'users'));
    } catch (e) {
      setFormError(e);
    }
  };
  const createToken = async (event) => {
    event.preventDefault();
    setTokenError(null);
    try {
      const body = tokenDescription ? { description: tokenDescription } : {};
      if (tokenUser !== user.name) body.user = tokenUser;
      if (tokenExpiresIn) body.expires_in = tokenExpiresIn;
      setSecret((await api('POST', '/v1/tokens', body)).token);
      setTokenDescription('');
      setTokenExpiresIn('');
      await load();
    } catch (e) {
      setTokenError(e);
    }
  };
  const errors = formError?.fieldErrors ?? {};

  return (
    <section>
      <h1>{user.admin ? 'Users and tokens' : 'Your API tokens'}</h1>
      <Problem error={error} />
      {user.admin && (
        <>
          <table class="list" aria-label="Users">
            <thead><tr><th>User</th><th>Roles</th><th>Created</th><th>Actions</th></tr></thead>
            <tbody>
              {users.map((u) => (
                <UserRow key={u.name} user={u} me={user.name} onError={setError}
                  onSession={onSession} onChange={load} />
              ))}
            </tbody>
          </table>
          <form class="card" aria-label="Create a user" onSubmit={createUser}>
            <h2>Create a user</h2>
            <Field label="Name" value={form.name} error={errors.name}
              onInput={(v) => setForm({ ...form, name: v })} />
            <Field label="Password" type="password" value={form.password} error={errors.password}
              hint="leave empty to generate a one-time password" autocomplete="new-password"
              onInput={(v) => setForm({ ...form, password: v })} />
            <div class="field"><label><input type="checkbox" checked={form.admin}
              onChange={(e) => setForm({ ...form, admin: e.currentTarget.checked })} /> Admin</label></div>
            <Problem error={formError} fields={['name', 'password']} />
            <button type="submit">Create user</button>
            {created && <p class="ok" role="status">Created {created.user.name}.</p>}
            <Secret label={`The one-time password of ${created?.user.name}`} value={created?.password} />
          </form>
        </>
      )}
      <h2>API tokens</h2>
      <table class="list" aria-label="Tokens">
        <thead><tr><th>Id</th><th>User</th><th>Description</th><th>Created</th><th>Expires</th><th></th></tr></thead>
        <tbody>
          {tokens.map((t) => (
            <tr>
              <td><code>{t.id}</code></td><td>{t.user}</td><td>{t.description}</td>
              <td>{formatTime(t.created_at)}</td>
              <td>{t.expires_at == null ? 'never' : formatTime(t.expires_at)}</td>
              <td><button type="button" class="danger" aria-label={`Revoke token ${t.id}`}
                onClick={() => api('DELETE', `/v1/tokens/${enc(t.id)}`).then(load, setError)}>Revoke</button></td>
            </tr>
          ))}
          {tokens.length === 0 && <tr><td colspan="6" class="muted">No tokens.</td></tr>}
        </tbody>
      </table>
      <form class="card" aria-label="Create a token" onSubmit={createToken}>
        <h2>Create a token</h2>
        {user.admin && (
          <div class="field">
            <label for="token-user">For user</label>
            <select id="token-user" value={tokenUser} onChange={(e) => setTokenUser(e.currentTarget.value)}>
              {[user.name, ...users.map((u) => u.name).filter((n) => n !== user.name)].map((n) => <option value={n}>{n}</option>)}
            </select>
          </div>
        )}
        <Field label="Description" value={tokenDescription} onInput={setTokenDescription} />
        <Field label="Expires in" value={tokenExpiresIn} onInput={setTokenExpiresIn}
          error={tokenError?.fieldErrors?.expires_in}
          hint="a duration such as 30d or 12h; empty: until revoked" />
        <Problem error={tokenError} fields={['expires_in']} />
        <button type="submit">Create token</button>
        <Secret label="The token" value={secret} />
      </form>
    </section>
  );
}
