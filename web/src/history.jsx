// The versions of a policy: who changed it and when, a diff between any two versions, and
// "restore this version", which saves that version's document as a new version.
import { useEffect, useState } from 'preact/hooks';
import { api, enc } from './api.js';
import { diffLines, documentYaml, editable } from './diff.js';
import { canEdit } from './perm.js';
import { formatTime, Problem } from './ui.jsx';

export function HistoryView({ user, name }) {
  const [changes, setChanges] = useState(null);
  const [current, setCurrent] = useState(null);
  const [from, setFrom] = useState(null);
  const [to, setTo] = useState(null);
  const [error, setError] = useState(null);
  const [message, setMessage] = useState('');

  const load = async () => {
    try {
      const history = (await api('GET', `/v1/policies/${enc(name)}/history`)).changes;
      setChanges(history);
      setCurrent(await api('GET', `/v1/policies/${enc(name)}`).catch(() => null));
      const versions = history.filter((c) => c.new).map((c) => c.id);
      setTo(versions[versions.length - 1] ?? null);
      setFrom(versions[versions.length - 2] ?? versions[versions.length - 1] ?? null);
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => { load(); }, [name]);

  const restore = async (change) => {
    setError(null);
    setMessage('');
    try {
      const answer = await api('PUT', `/v1/policies/${enc(name)}`,
        { ...editable(change.new), version: current.version });
      setMessage(`Version ${change.version} restored as version ${answer.version}.`);
      await load();
    } catch (e) {
      setError(e);
    }
  };

  if (!changes) return <section><Problem error={error} />{!error && <p>Loading…</p>}</section>;
  const byId = Object.fromEntries(changes.map((c) => [c.id, c]));
  const text = (id) => (byId[id]?.new ? documentYaml(byId[id].new) : '');
  const lines = from !== null && to !== null ? diffLines(text(from), text(to)) : [];
  const mayRestore = current && canEdit(user, current.apps);

  return (
    <section>
      <p><a href={`#/policies/${enc(name)}`}>← Policy {name}</a></p>
      <h1>History of {name}</h1>
      <Problem error={error} />
      {message && <p class="ok" role="status">{message}</p>}
      <table class="list history">
        <thead>
          <tr><th>Version</th><th>Change</th><th>By</th><th>When</th><th>Compare</th><th></th></tr>
        </thead>
        <tbody>
          {[...changes].reverse().map((c) => (
            <tr>
              <td>{c.new ? c.version : '—'}</td>
              <td>{c.action}</td>
              <td>{c.actor}</td>
              <td>{formatTime(c.at)}</td>
              <td>
                {c.new && (
                  <>
                    <label class="radio"><input type="radio" name="from" checked={from === c.id}
                      onChange={() => setFrom(c.id)} aria-label={`Compare from version ${c.version}`} /> from</label>
                    <label class="radio"><input type="radio" name="to" checked={to === c.id}
                      onChange={() => setTo(c.id)} aria-label={`Compare to version ${c.version}`} /> to</label>
                  </>
                )}
              </td>
              <td>
                {mayRestore && c.new && c.version !== current.version && (
                  <button type="button" onClick={() => restore(c)}>Restore this version</button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {from !== null && to !== null && (
        <>
          <h2>Changes from version {byId[from]?.version} to version {byId[to]?.version}</h2>
          <pre class="diff" aria-label="Diff">
            {lines.map((l) => (
              <div class={{ '+': 'add', '-': 'del', ' ': 'same' }[l.op]}>{l.op + ' ' + l.text}</div>
            ))}
          </pre>
        </>
      )}
    </section>
  );
}
