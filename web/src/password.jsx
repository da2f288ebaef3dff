// Setting a password: one's own (with the current one, as the server requires) or, for admins,
// another user's. The server's rules are shown beside the new password, each error the server
// names is shown beside its field, and nothing typed is lost when the server refuses.
import { useState } from 'preact/hooks';
import { api, ApiError, enc } from './api.js';
import { Field, Problem } from './ui.jsx';

// The server's rules (auth::check_password_strength; docs/admin-api.md, "Users").
export const PASSWORD_RULES = '12 characters or more, not the user name';

// Sends PUT /v1/users/{name}/password and calls onChanged(password) once the server took it.
// `current` is the current password when the caller already knows it (the one-time password
// just typed at the login); otherwise a field asks for it when the password is one's own.
export function PasswordForm({ name, own, current, label, onChanged, onCancel, autofocus }) {
  const [typed, setTyped] = useState('');
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const asksCurrent = own && !current;
  const submit = async (event) => {
    event.preventDefault();
    if (password !== repeat) {
      setError(new ApiError(400, { detail: 'The new password was not saved.',
        errors: [{ field: 'repeat', message: 'does not match the new password' }] }));
      return;
    }
    setError(null);
    setBusy(true);
    const body = own ? { password, current_password: current || typed } : { password };
    try {
      await api('PUT', `/v1/users/${enc(name)}/password`, body);
    } catch (e) {
      setError(e);
      setBusy(false);
      return;
    }
    try {
      await onChanged(password);
    } catch (e) {
      // The password did change; what failed is what came after (signing in again).
      setError(new ApiError(e.status, { detail: `The password was changed, but then: ${e.message}. ` +
        'Sign in with the new password.' }));
    } finally {
      setBusy(false);
    }
  };
  const errors = error?.fieldErrors ?? {};
  return (
    <form class="password" aria-label={label} onSubmit={submit}>
      {asksCurrent && (
        <Field label="Current password" type="password" value={typed} onInput={setTyped}
          error={errors.current_password} autocomplete="current-password" autofocus={autofocus} />
      )}
      <Field label="New password" type="password" value={password} onInput={setPassword}
        error={errors.password} hint={PASSWORD_RULES} autocomplete="new-password"
        autofocus={autofocus && !asksCurrent} />
      <Field label="Repeat the new password" type="password" value={repeat} onInput={setRepeat}
        error={errors.repeat} autocomplete="new-password" />
      <Problem error={error} fields={['password', 'repeat', 'current_password']} />
      <div class="actions">
        <button type="submit" disabled={busy}>Set password</button>
        {onCancel && <button type="button" onClick={onCancel}>Cancel</button>}
      </div>
    </form>
  );
}

// The page where every signed-in user changes their own password. The change ends every session
// of the user (this one too), so the console signs in again with the new password.
export function PasswordView({ user, onSession }) {
  const [done, setDone] = useState(0); // how many changes were made here: a new form after each
  return (
    <section>
      <h1>Change your password</h1>
      <p class="muted">Changing it signs you out everywhere else and revokes your API tokens (the
        old password may have leaked).</p>
      <div class="card">
        <PasswordForm key={done} name={user.name} own label="Change your password" autofocus
          onChanged={async (password) => {
            onSession(await api('POST', '/v1/session', { user: user.name, password }));
            setDone(done + 1);
          }} />
        {done > 0 && <p class="ok" role="status">Your password was changed.</p>}
      </div>
    </section>
  );
}
