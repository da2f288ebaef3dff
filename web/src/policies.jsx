// The policies of one app: filter, limits in words, mode, failure mode, live allowed/denied
// rates, and the quick actions (enable/disable, shadow/enforce, delete), each after a
// confirmation in the row that says what it will do, and a message there once done.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, enc } from './api.js';
import { editable } from './diff.js';
import { canCreateFor, canEdit } from './perm.js';
import { formatRate, ratesBetween } from './rates.js';
import { Confirm, Problem } from './ui.jsx';
import { policyWords } from './words.js';

export const RATE_POLL_MS = 3000;

// Samples GET /v1/stats/decisions every few seconds; returns per-second rates per policy.
export function useRates(app) {
  const [rates, setRates] = useState({});
  const last = useRef(null);
  useEffect(() => {
    let stopped = false;
    const sample = async () => {
      try {
        const next = await api('GET', '/v1/stats/decisions' + (app ? `?app=${enc(app)}` : ''));
        if (stopped) return;
        if (last.current) setRates(ratesBetween(last.current, next));
        last.current = next;
      } catch {
        // the list shows its own errors; rates simply stay as they were
      }
    };
    sample();
    const timer = setInterval(sample, RATE_POLL_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [app]);
  return rates;
}

function Rate({ rate }) {
  if (!rate) return <span class="muted">–</span>;
  return (
    <span class="rate">
      <span class="allowed">{formatRate(rate.allowed)} allowed</span>
      <span class={rate.denied > 0 ? 'denied' : 'muted'}>{formatRate(rate.denied)} denied</span>
      {rate.shadow_denied > 0 && <span class="shadow">{formatRate(rate.shadow_denied)} shadow</span>}
    </span>
  );
}

// The row's state changes: what each asks before it is made, and what it says once made.
const CHANGES = {
  disable: { verb: 'disable', doing: 'disabling', changes: { enabled: false },
    warning: 'It stops deciding: every request it covers is allowed.', done: 'is disabled.' },
  enable: { verb: 'enable', doing: 'enabling', changes: { enabled: true },
    warning: 'It decides again and may deny requests.', done: 'is enabled.' },
  shadow: { verb: 'shadow', doing: 'shadowing', changes: { mode: 'shadow' },
    warning: 'Its denials are only counted: every request it covers is allowed.',
    done: 'is in shadow mode.' },
  enforce: { verb: 'enforce', doing: 'enforcing', changes: { mode: 'enforce' },
    warning: 'Its denials take effect: callers over the limit are refused.', done: 'is enforced.' },
};

function Row({ policy, user, rate, message, onChange, onError }) {
  const [confirming, setConfirming] = useState(null); // a key of CHANGES, 'delete' or null
  const editableByUser = canEdit(user, policy.apps);
  const update = async (change) => {
    try {
      await api('PUT', `/v1/policies/${enc(policy.name)}`,
        { ...editable(policy), ...change.changes, version: policy.version });
      onChange(`${policy.name} ${change.done}`);
    } catch (e) {
      onError(e.status === 409
        ? new ApiError(409, { detail: `${policy.name} was changed by someone else; the list is reloaded` })
        : e);
      if (e.status === 409) onChange();
      setConfirming(null);
    }
  };
  const remove = async () => {
    try {
      await api('DELETE', `/v1/policies/${enc(policy.name)}?version=${policy.version}`);
      onChange(`${policy.name} was deleted.`);
    } catch (e) {
      onError(e);
      setConfirming(null);
    }
  };
  const toggles = [policy.enabled === false ? 'enable' : 'disable',
    policy.mode === 'shadow' ? 'enforce' : 'shadow'];
  const change = CHANGES[confirming];
  return (
    <tr class={policy.enabled === false ? 'disabled' : ''}>
      <td><a href={`#/policies/${enc(policy.name)}`}>{policy.name}</a>
        {policy.description && <div class="muted small">{policy.description}</div>}</td>
      <td data-label="Algorithm">{[...new Set(policy.limits.map((l) => l.algorithm))].join(', ')}</td>
      <td data-label="Limits">{policyWords(policy)}</td>
      <td data-label="Mode">{policy.mode}{policy.enabled === false ? ' (disabled)' : ''}</td>
      <td data-label="Store failure">{policy.on_store_failure}</td>
      <td data-label="Now"><Rate rate={rate} /></td>
      <td><div class="actions">
        <a href={`#/policies/${enc(policy.name)}/history`}>History</a>
        {editableByUser && !confirming && (
          <>
            {toggles.map((t) => (
              <button type="button" onClick={() => setConfirming(t)}>
                {t[0].toUpperCase() + t.slice(1)}</button>
            ))}
            <button type="button" class="danger" onClick={() => setConfirming('delete')}>Delete</button>
          </>
        )}
        {change && (
          <Confirm label={`Confirm ${change.doing} ${policy.name}`}
            question={`${change.verb[0].toUpperCase() + change.verb.slice(1)} ${policy.name}? ${change.warning}`}
            yes={`Yes, ${change.verb}`} onYes={() => update(change)} onCancel={() => setConfirming(null)} />
        )}
        {confirming === 'delete' && (
          <Confirm label={`Confirm deleting ${policy.name}`} question={`Delete ${policy.name}?`}
            yes="Yes, delete" onYes={remove} onCancel={() => setConfirming(null)} />
        )}
      </div>
      {message && !confirming && <p class="ok" role="status">{message}</p>}</td>
    </tr>
  );
}

export function PoliciesView({ user, app }) {
  const [policies, setPolicies] = useState(null);
  const [filter, setFilter] = useState('');
  const [error, setError] = useState(null);
  const [done, setDone] = useState(null); // what the last row action did: {name, text}
  const rates = useRates(app);

  const load = async () => {
    try {
      setPolicies((await api('GET', `/v1/policies?app=${enc(app)}`)).policies);
    } catch (e) {
      setError(e);
    }
  };
  // After a row's change: the fresh list, then the message in that row (a deleted policy's
  // message goes above the list, its row being gone).
  const changed = (name) => async (text) => {
    setError(null);
    setDone(null);
    await load();
    if (text) setDone({ name, text });
  };
  useEffect(() => { setPolicies(null); load(); }, [app]);

  const needle = filter.trim().toLowerCase();
  const shown = (policies ?? []).filter((p) => !needle ||
    p.name.toLowerCase().includes(needle) ||
    (p.description ?? '').toLowerCase().includes(needle) ||
    p.limits.some((l) => l.algorithm.includes(needle)));

  return (
    <section>
      <p><a href="#/">← Apps</a></p>
      <h1>Policies of {app}</h1>
      <div class="toolbar">
        <label>Filter <input type="search" value={filter} aria-label="Filter policies"
          onInput={(e) => setFilter(e.currentTarget.value)} placeholder="name, description, algorithm" /></label>
        {canCreateFor(user, app) && (
          <a class="button" href={`#/policies?app=${enc(app)}`}>New policy</a>
        )}
      </div>
      <Problem error={error} />
      {done && !(policies ?? []).some((p) => p.name === done.name) && (
        <p class="ok" role="status">{done.text}</p>
      )}
      {policies === null ? <p>Loading…</p> : (
        <table class="list policies">
          <thead>
            <tr><th>Name</th><th>Algorithm</th><th>Limits</th><th>Mode</th><th>Store failure</th>
              <th>Now</th><th>Actions</th></tr>
          </thead>
          <tbody>
            {shown.map((p) => (
              <Row key={p.name + ':' + p.version} policy={p} user={user} rate={rates[p.name]}
                message={done?.name === p.name ? done.text : ''}
                onChange={changed(p.name)} onError={setError} />
            ))}
            {shown.length === 0 && (
              <tr><td colspan="7" class="muted">
                {policies.length === 0 ? 'No policies for this app.' : 'No policy matches the filter.'}
              </td></tr>
            )}
          </tbody>
        </table>
      )}
    </section>
  );
}
