// Apps with their owners and viewers. Admins add apps and grant or revoke roles (a revoke asks
// first; each change says what it did); everyone else sees the apps and the people of the apps
// they have a role on.
import { useEffect, useState } from 'preact/hooks';
import { api, apiAll, enc } from './api.js';
import { Confirm, Field, Problem, Select } from './ui.jsx';

// A role's people; an admin's × on a name asks before it revokes.
function RoleList({ app, role, names, admin, onRevoke }) {
  const [revoking, setRevoking] = useState(null);
  if (!names) return <span class="muted">—</span>;
  if (names.length === 0) return <span class="muted">none</span>;
  return (
    <>
      <ul class="chips" aria-label={`${role}s of ${app}`}>
        {names.map((name) => (
          <li>
            {name}
            {admin && (
              <button type="button" class="chip-x" aria-label={`Revoke ${role} ${name} on ${app}`}
                onClick={() => setRevoking(name)}>×</button>
            )}
          </li>
        ))}
      </ul>
      {revoking && (
        <Confirm label={`Confirm revoking ${role} ${revoking} on ${app}`}
          question={`Revoke ${revoking}'s ${role} role on ${app}?`} yes="Yes, revoke"
          onYes={() => { onRevoke(revoking); setRevoking(null); }} onCancel={() => setRevoking(null)} />
      )}
    </>
  );
}

function Grant({ app, users, onGrant }) {
  const [user, setUser] = useState(users[0]?.name ?? '');
  const [role, setRole] = useState('viewer');
  return (
    <form class="inline" aria-label={`Grant a role on ${app}`}
      onSubmit={(e) => { e.preventDefault(); onGrant(user, role); }}>
      <Select label="User" value={user} options={users.map((u) => u.name)} onChange={setUser} />
      <Select label="Role" value={role} options={['viewer', 'owner']} onChange={setRole} />
      <button type="submit">Grant</button>
    </form>
  );
}

export function AppsView({ user }) {
  const [apps, setApps] = useState(null);
  const [users, setUsers] = useState([]);
  const [error, setError] = useState(null);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [createError, setCreateError] = useState(null);
  const [added, setAdded] = useState('');
  // What the last grant or revoke did, told in the row of its app: {app, text}.
  const [done, setDone] = useState(null);

  const load = async () => {
    try {
      setApps((await api('GET', '/v1/apps')).apps);
      if (user.admin) setUsers(await apiAll('/v1/users', 'users'));
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => { load(); }, []);

  const act = async (app, fn, text) => {
    setError(null);
    setDone(null);
    setAdded('');
    try {
      await fn();
      await load();
      setDone({ app, text });
    } catch (e) {
      setError(e);
    }
  };
  const revoke = (app, u, role) => act(app,
    () => api('DELETE', `/v1/users/${enc(u)}/roles/${enc(app)}`), `${u} is no longer ${role} of ${app}.`);
  const create = async (event) => {
    event.preventDefault();
    setCreateError(null);
    setAdded('');
    setDone(null);
    try {
      await api('POST', '/v1/apps', description ? { name, description } : { name });
      setName('');
      setDescription('');
      await load();
      setAdded(`App ${name} added.`);
    } catch (e) {
      setCreateError(e);
    }
  };
  const createErrors = createError?.fieldErrors ?? {};

  return (
    <section>
      <h1>Apps</h1>
      <p class="muted">Policies are managed per app. Open an app to see its policies; <a
        href="#/apps/*">policies for any app (*)</a>.</p>
      <Problem error={error} />
      {apps === null ? <p>Loading…</p> : (
        <table class="list">
          <thead>
            <tr><th>App</th><th>Description</th><th>Owners</th><th>Viewers</th>
              {user.admin && <th>Grant</th>}</tr>
          </thead>
          <tbody>
            {apps.map((app) => (
              <tr>
                <td><a href={`#/apps/${enc(app.name)}`}>{app.name}</a></td>
                <td>{app.description}</td>
                <td><RoleList app={app.name} role="owner" names={app.owners} admin={user.admin}
                  onRevoke={(u) => revoke(app.name, u, 'owner')} /></td>
                <td><RoleList app={app.name} role="viewer" names={app.viewers} admin={user.admin}
                  onRevoke={(u) => revoke(app.name, u, 'viewer')} /></td>
                {user.admin && (
                  <td><Grant app={app.name} users={users}
                    onGrant={(u, role) => act(app.name,
                      () => api('PUT', `/v1/users/${enc(u)}/roles/${enc(app.name)}`, { role }),
                      `${u} is now ${role} of ${app.name}.`)} />
                  {done?.app === app.name && <p class="ok" role="status">{done.text}</p>}</td>
                )}
              </tr>
            ))}
            {apps.length === 0 && <tr><td colspan="5" class="muted">No apps yet.</td></tr>}
          </tbody>
        </table>
      )}
      {user.admin && (
        <form onSubmit={create} aria-label="Add an app" class="card">
          <h2>Add an app</h2>
          <Field label="Name" value={name} onInput={setName} error={createErrors.name} />
          <Field label="Description" value={description} onInput={setDescription}
            error={createErrors.description} />
          <Problem error={createError} fields={['name', 'description']} />
          <button type="submit">Add app</button>
          {added && <p class="ok" role="status">{added}</p>}
        </form>
      )}
    </section>
  );
}
