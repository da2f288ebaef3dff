// The console's shell: who is signed in, the forced password change after a one-time password,
// and hash routes (#/apps/<app>, #/policies/<name>, ...) so the server serves one page at "/".
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, setCsrfToken, whenUnauthenticated } from './api.js';
import { AppsView } from './apps.jsx';
import { PoliciesView } from './policies.jsx';
import { EditorView } from './editor.jsx';
import { HistoryView } from './history.jsx';
import { UsersView } from './users.jsx';
import { PasswordForm, PasswordView } from './password.jsx';
import { Field, Problem } from './ui.jsx';
import { loadCatalogue } from './catalogue.js';
import './style.css';

function currentRoute() {
  const [path, query = ''] = location.hash.replace(/^#/, '').split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query };
}

function useRoute() {
  const [route, setRoute] = useState(currentRoute());
  useEffect(() => {
    const update = () => setRoute(currentRoute());
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}

function Login({ onLogin }) {
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState(null);
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    try {
      const answer = await api('POST', '/v1/session', { user, password });
      onLogin(answer, password);
    } catch (e) {
      setError(e);
    }
  };
  return (
    <main class="narrow">
      <h1>Sluice</h1>
      <form onSubmit={submit} aria-label="Sign in">
        <Field label="User" value={user} onInput={setUser} autocomplete="username" autofocus />
        <Field label="Password" type="password" value={password} onInput={setPassword}
          autocomplete="current-password" />
        <Problem error={error} />
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}

// After a one-time password: a new one, then a new session with it (a password change ends
// every session of the user, this one included). Signing out is the other way off this page.
function ChangePassword({ session, current, onDone, onSignOut }) {
  const name = session.user.name;
  return (
    <main class="narrow">
      <h1>Choose a new password</h1>
      <p>You signed in as <b>{name}</b> with a one-time password. Choose your own to continue.</p>
      <PasswordForm name={name} own current={current} label="Password change" autofocus
        onChanged={async (password) => onDone(await api('POST', '/v1/session', { user: name, password }))} />
      <p><button type="button" class="link" onClick={onSignOut}>Sign out</button></p>
    </main>
  );
}

function App() {
  const [session, setSession] = useState(undefined); // undefined: not known yet; null: signed out
  const [oneTime, setOneTime] = useState('');
  // The algorithm catalogue (catalogue.js), asked once signed in; the views wait for it.
  // undefined: not asked yet; null: asked; true: loaded; else the error.
  const [catalogue, setCatalogue] = useState(undefined);
  const route = useRoute();
  const signedIn = Boolean(session && !session.password_change_required);
  useEffect(() => {
    if (!signedIn) return;
    setCatalogue(null);
    loadCatalogue().then(() => setCatalogue(true), (e) => setCatalogue(e));
  }, [signedIn]);

  const accept = (answer) => {
    setCsrfToken(answer.csrf_token);
    setSession(answer);
  };
  useEffect(() => {
    whenUnauthenticated(() => setSession(null));
    api('GET', '/v1/session').then(accept, () => setSession(null));
  }, []);

  const logout = async () => {
    await api('DELETE', '/v1/session').catch(() => {});
    setCsrfToken('');
    setSession(null);
  };

  if (session === undefined) return <p class="loading">Loading…</p>;
  if (session === null) {
    return <Login onLogin={(answer, password) => {
      setOneTime(answer.password_change_required ? password : '');
      accept(answer);
    }} />;
  }
  if (session.password_change_required) {
    return <ChangePassword session={session} current={oneTime} onSignOut={logout}
      onDone={(answer) => {
        setOneTime('');
        accept(answer);
      }} />;
  }
  if (catalogue === undefined || catalogue === null) return <p class="loading">Loading…</p>;
  if (catalogue !== true) return <main><Problem error={catalogue} /></main>;
  const user = session.user;
  const [first, second, third] = route.parts;
  // The editor is keyed by what it edits, so another route starts it afresh: nothing of the
  // policy (or the error) shown before carries over to a new one.
  let view;
  if (first === 'apps' && second) view = <PoliciesView user={user} app={second} />;
  else if (first === 'policies' && second === undefined) {
    view = <EditorView key={'new?' + route.query} user={user} query={route.query} />;
  } else if (first === 'policies' && third === 'history') view = <HistoryView user={user} name={second} />;
  else if (first === 'policies') view = <EditorView key={'policy/' + second} user={user} name={second} />;
  else if (first === 'users') view = <UsersView user={user} onSession={accept} />;
  else if (first === 'password') view = <PasswordView user={user} onSession={accept} />;
  else view = <AppsView user={user} />;
  return (
    <>
      <header class="top">
        <nav class="nav">
          <a href="#/" class="brand">Sluice console</a>
          <a href="#/">Apps</a>
          <a href="#/users">{user.admin ? 'Users and tokens' : 'API tokens'}</a>
        </nav>
        <span class="who">
          Signed in as <b>{user.name}</b>{user.admin ? ' (admin)' : ''}
          {' '}<a href="#/password">Change password</a>
          <button type="button" class="link" onClick={logout}>Sign out</button>
        </span>
      </header>
      <main>{view}</main>
    </>
  );
}

render(<App />, document.getElementById('app'));
