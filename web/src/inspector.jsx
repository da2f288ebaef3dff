// The subject inspector of a policy: a key's remaining budget and reset time under each limit,
// when a request of a chosen cost would be allowed (a dry run the server decides as an acquire
// would, recording nothing), and a concurrency limit's leases. Owners reset the key (a fresh
// budget, after a confirmation), release one lease, or lift the key's penalty box (policies that have one).
import { useState } from 'preact/hooks';
import { api, enc } from './api.js';
import { dryRunSentence, penaltySentence, retryWords, shortLease, waitWords } from './subject.js';
import { Confirm, Field, Problem } from './ui.jsx';

export function SubjectInspector({ name, mayReset }) {
  const [key, setKey] = useState('');
  const [cost, setCost] = useState('1');
  const [state, setState] = useState(null);
  const [error, setError] = useState(null);
  const [message, setMessage] = useState('');
  const [confirmingReset, setConfirmingReset] = useState(false);
  const path = () => `/v1/policies/${enc(name)}/subjects/${enc(key)}`;
  const fetchState = () => api('GET', `${path()}?cost=${enc(cost.trim() || '1')}`);
  const peek = async (event) => {
    event?.preventDefault();
    setConfirmingReset(false);
    setError(null);
    setMessage('');
    try {
      setState(await fetchState());
    } catch (e) {
      setState(null);
      setError(e);
    }
  };
  // The message comes with the fresh state, never before it.
  const change = async (call, done) => {
    setError(null);
    try {
      const answer = await call();
      setState(await fetchState());
      setMessage(done(answer));
    } catch (e) {
      setError(e);
    }
  };
  const reset = () => change(() => api('DELETE', path()),
    () => `${key} was reset: a fresh budget under every limit.`);
  const release = (lease) => change(
    () => api('POST', `${path()}/leases/${enc(lease)}/release`),
    (answer) => answer.released ? `Lease ${shortLease(lease)} released.`
      : `Lease ${shortLease(lease)} had already ended.`);
  const lift = () => change(() => api('POST', `${path()}/penalty/lift`),
    (answer) => answer.lifted ? `${key}'s penalty box was lifted: no block, no strikes.`
      : `${key} had nothing to lift.`);
  return (
    <section class="card" aria-label="Subject inspector">
      <h2>Inspect a key</h2>
      <form class="inline" onSubmit={peek} aria-label="Peek at a key">
        <Field label="Key" value={key}
          onInput={(v) => { setKey(v); setConfirmingReset(false); }} hint="an IP, user id, API key…" />
        <Field label="Cost" type="number" min="0" value={cost} onInput={setCost}
          hint="of the request to try (nothing is taken)" error={error?.fieldErrors?.cost} />
        <button type="submit" disabled={!key}>Peek</button>
        {mayReset && state && !confirmingReset && (
          <button type="button" class="danger" onClick={() => setConfirmingReset(true)}>Reset this key</button>
        )}
      </form>
      {confirmingReset && (
        <Confirm label={`Confirm resetting ${key}`}
          question={`Reset ${key}? Its budget under every limit starts full again.`} yes="Yes, reset"
          onYes={() => { setConfirmingReset(false); reset(); }}
          onCancel={() => setConfirmingReset(false)} />
      )}
      <Problem error={error} fields={['cost']} />
      {message && <p class="ok" role="status">{message}</p>}
      {state && (
        <>
          <table class="list" aria-label={`State of ${state.key}`}>
            <thead><tr><th>Limit</th><th>Algorithm</th><th>Remaining</th><th>Of</th><th>Full again in</th>
              <th>Cost {state.dry_run.cost}</th></tr></thead>
            <tbody>
              {state.limits.map((l) => (
                <tr><td>{l.index + 1}</td><td>{l.algorithm}</td><td>{l.remaining}</td><td>{l.limit}</td>
                  <td>{waitWords(l.reset_after_ms)}</td>
                  <td data-label={`Cost ${state.dry_run.cost}`}>{retryWords(l)}</td></tr>
              ))}
            </tbody>
          </table>
          <p aria-label="Dry run" class={state.dry_run.allowed ? 'ok' : 'bad'}>{dryRunSentence(state.dry_run)}</p>
          {state.penalty && (
            <p aria-label="Penalty box" class={state.penalty.blocked ? 'bad' : ''}>
              {penaltySentence(state.penalty)}
              {mayReset && state.penalty.may_lift && (state.penalty.blocked || state.penalty.strikes > 0 || state.penalty.blocks > 0) && (
                <> <button type="button" class="danger" onClick={lift}>Lift the penalty</button></>
              )}
            </p>
          )}
          {state.limits.filter((l) => l.leases).map((l) => (
            <Leases limit={l} fullIds={state.leases_full_ids} mayRelease={mayReset && state.leases_full_ids}
              onRelease={release} />
          ))}
        </>
      )}
    </section>
  );
}

function Leases({ limit, fullIds, mayRelease, onRelease }) {
  const label = `Leases of limit ${limit.index + 1}`;
  return (
    <div>
      <h3>{label}</h3>
      <p>
        {limit.lease_count === 0 ? 'No lease is held.'
          : `${limit.lease_count} held, ${limit.leased_units} of ${limit.limit} units.`}
        {limit.lease_count > limit.leases.length && ` The ${limit.leases.length} that end soonest:`}
      </p>
      {limit.leases.length > 0 && (
        <table class="list" aria-label={label}>
          <thead><tr><th>Lease</th><th>Units</th><th>Expires in</th>{mayRelease && <th />}</tr></thead>
          <tbody>
            {limit.leases.map((lease) => (
              <tr>
                <td><code title={fullIds ? lease.id : undefined}>{shortLease(lease.id, !fullIds)}</code></td>
                <td>{lease.cost}</td>
                <td>{waitWords(lease.expires_after_ms)}</td>
                {mayRelease && (
                  <td><button type="button" class="danger" onClick={() => onRelease(lease.id)}
                    aria-label={`Release lease ${shortLease(lease.id)}`}>Release</button></td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
