// The subject inspector of a policy: a key's remaining budget and reset time under each limit
// (a cost-0 peek: nothing changes), and for owners a reset of the key (a fresh budget).
import { useState } from 'preact/hooks';
import { api, enc } from './api.js';
import { Field, Problem } from './ui.jsx';

export function SubjectInspector({ name, mayReset }) {
  const [key, setKey] = useState('');
  const [state, setState] = useState(null);
  const [error, setError] = useState(null);
  const [message, setMessage] = useState('');
  const path = () => `/v1/policies/${enc(name)}/subjects/${enc(key)}`;
  const peek = async (event) => {
    event?.preventDefault();
    setError(null);
    setMessage('');
    try {
      setState(await api('GET', path()));
    } catch (e) {
      setState(null);
      setError(e);
    }
  };
  const reset = async () => {
    setError(null);
    try {
      await api('DELETE', path());
      // The message comes with the fresh state, never before it.
      const fresh = await api('GET', path());
      setState(fresh);
      setMessage(`${key} was reset: a fresh budget under every limit.`);
    } catch (e) {
      setError(e);
    }
  };
  return (
    <section class="card" aria-label="Subject inspector">
      <h2>Inspect a key</h2>
      <form class="inline" onSubmit={peek} aria-label="Peek at a key">
        <Field label="Key" value={key} onInput={setKey} hint="an IP, user id, API key…" />
        <button type="submit" disabled={!key}>Peek</button>
        {mayReset && state && <button type="button" class="danger" onClick={reset}>Reset this key</button>}
      </form>
      <Problem error={error} />
      {message && <p class="ok" role="status">{message}</p>}
      {state && (
        <table class="list" aria-label={`State of ${state.key}`}>
          <thead><tr><th>Limit</th><th>Algorithm</th><th>Remaining</th><th>Of</th><th>Full again in</th></tr></thead>
          <tbody>
            {state.limits.map((l) => (
              <tr><td>{l.index + 1}</td><td>{l.algorithm}</td><td>{l.remaining}</td><td>{l.limit}</td>
                <td>{l.reset_after_ms} ms</td></tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
