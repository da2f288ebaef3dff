// Create or edit one policy: a form per algorithm (each field shows the server's validation
// message), a read-only YAML view and an editable JSON view of the same document, and the
// optimistic-concurrency conflict (409) shown with an offer to reload.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, enc } from './api.js';
import { LiveChart } from './chart.jsx';
import { SubjectInspector } from './inspector.jsx';
import { documentYaml, editable } from './diff.js';
import { canEdit } from './perm.js';
import { Field, Problem, Select } from './ui.jsx';
import { policyWords } from './words.js';
import { algorithmNames, fieldsOf, newLimit, parameterOf, parametersOf } from './catalogue.js';

function newPolicy(app) {
  return {
    name: '', description: '', apps: [app || '*'], mode: 'enforce',
    on_store_failure: 'fail_open', enabled: true,
    limits: [newLimit('token_bucket')],
  };
}

// A typed value into the document: counts become numbers, durations and choices stay strings
// (the server names whatever is wrong), an empty optional field is left out.
function typed(parameter, text) {
  if (text === '') return undefined;
  if (parameter?.type === 'duration' || parameter?.type === 'choice') return text;
  return /^-?\d+$/.test(text) ? Number(text) : text;
}

function LimitForm({ limit, index, errors, onChange, onRemove, readOnly }) {
  const prefix = `limits[${index}]`;
  const fields = fieldsOf(limit.algorithm);
  const set = (field, text) => {
    const next = { ...limit };
    const value = typed(parameterOf(limit.algorithm, field), text);
    if (value === undefined) delete next[field];
    else next[field] = value;
    onChange(next);
  };
  return (
    <fieldset class="limit" aria-label={`Limit ${index + 1}`}>
      <legend>Limit {index + 1}</legend>
      <Select label="Algorithm" value={limit.algorithm} options={algorithmNames()} disabled={readOnly}
        error={errors[`${prefix}.algorithm`]}
        onChange={(algorithm) => onChange(newLimit(algorithm))} />
      {parametersOf(limit.algorithm).map((p) =>
        p.type === 'choice' ? (
          // The default choice is left out of the document, as the server writes it.
          <Select label={p.name} value={limit[p.name] ?? p.default} disabled={readOnly}
            options={p.choices} error={errors[`${prefix}.${p.name}`]}
            onChange={(v) => set(p.name, v === p.default ? '' : v)} />
        ) : (
          <Field label={p.name} value={limit[p.name] === undefined ? '' : String(limit[p.name])}
            hint={p.hint} error={errors[`${prefix}.${p.name}`]} readOnly={readOnly}
            inputMode={p.type === 'duration' ? 'text' : 'numeric'}
            onInput={(text) => set(p.name, text)} />
        ),
      )}
      {Object.entries(errors).filter(([f]) => f.startsWith(prefix + '.') &&
        !fields.concat('algorithm').includes(f.slice(prefix.length + 1)))
        .map(([f, m]) => <p class="error" role="alert">{f.slice(prefix.length + 1)}: {m}</p>)}
      {!readOnly && onRemove && (
        <button type="button" class="link" onClick={onRemove}>Remove this limit</button>
      )}
    </fieldset>
  );
}

export function EditorView({ user, name, query }) {
  const creating = name === undefined;
  const app = new URLSearchParams(query ?? '').get('app') ?? '';
  const [stored, setStored] = useState(null); // the version being edited (null when creating)
  const [doc, setDoc] = useState(creating ? newPolicy(app) : null);
  const [view, setView] = useState('form');
  const [jsonText, setJsonText] = useState('');
  const [error, setError] = useState(null);
  const [conflict, setConflict] = useState(null);
  const [saved, setSaved] = useState('');
  // Where a save's outcome is told: beside the Save button, where the user clicked. Each refused
  // save moves the focus there (which scrolls it into view), counted so a repeat moves it again.
  const feedback = useRef(null);
  const [refusals, setRefusals] = useState(0);
  useEffect(() => {
    const box = feedback.current;
    if (refusals > 0) (box?.querySelector('.conflict button') ?? box?.querySelector('.problem'))?.focus();
  }, [refusals]);

  const load = async () => {
    try {
      const policy = await api('GET', `/v1/policies/${enc(name)}`);
      setStored(policy);
      setDoc(editable(policy));
      setJsonText(JSON.stringify(editable(policy), null, 2));
      setConflict(null);
      setError(null);
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => { if (!creating) load(); }, [name]);

  if (!doc) return <section><Problem error={error} />{!error && <p>Loading…</p>}</section>;
  const readOnly = creating ? false : !canEdit(user, stored?.apps);
  const errors = error?.fieldErrors ?? {};
  const set = (field, value) => setDoc({ ...doc, [field]: value });
  const setLimit = (i, limit) => set('limits', doc.limits.map((l, j) => (i === j ? limit : l)));

  const switchView = (next) => {
    if (view === 'json' && next !== 'json') {
      try {
        setDoc(JSON.parse(jsonText));
      } catch (e) {
        setError(new ApiError(400, { detail: 'The JSON does not parse: ' + e.message }));
        return;
      }
    }
    if (next === 'json') setJsonText(JSON.stringify(doc, null, 2));
    setView(next);
  };

  const save = async (event) => {
    event.preventDefault();
    setSaved('');
    let body = doc;
    if (view === 'json') {
      try {
        body = JSON.parse(jsonText);
      } catch (e) {
        setError(new ApiError(400, { detail: 'The JSON does not parse: ' + e.message }));
        setRefusals((n) => n + 1);
        return;
      }
    }
    try {
      const answer = creating
        ? await api('POST', '/v1/policies', body)
        : await api('PUT', `/v1/policies/${enc(name)}`, { ...body, version: stored.version });
      setError(null);
      if (creating) {
        location.hash = `#/policies/${enc(answer.name)}`;
        return;
      }
      setStored(answer);
      setDoc(editable(answer));
      setJsonText(JSON.stringify(editable(answer), null, 2));
      setSaved(`Saved as version ${answer.version}.`);
    } catch (e) {
      if (e.status === 409 && !creating) {
        const latest = await api('GET', `/v1/policies/${enc(name)}`).catch(() => null);
        setConflict(latest ?? {});
        setError(null);
      } else {
        setError(e);
      }
      setRefusals((n) => n + 1);
    }
  };

  const shownFields = ['name', 'description', 'apps', 'mode', 'on_store_failure', 'enabled'];
  const limitFields = Object.keys(errors).filter((f) => f.startsWith('limits['));
  return (
    <section>
      <p><a href={`#/apps/${enc(app || doc.apps?.[0] || '*')}`}>← Policies</a>
        {!creating && <> · <a href={`#/policies/${enc(name)}/history`}>History</a></>}</p>
      <h1>{creating ? 'New policy' : `Policy ${name}`}</h1>
      {stored && (
        <p class="muted">Version {stored.version}, changed by {stored.updated_by || stored.created_by}.
          {' '}{policyWords(stored)}</p>
      )}
      {stored && <LiveChart name={name} />}
      {readOnly && (
        <p class="notice">You can view this policy; changing it needs the owner role on every app
          it lists.</p>
      )}
      <div class="tabs" role="tablist" aria-label="Document view">
        {['form', 'yaml', 'json'].map((v) => (
          <button type="button" role="tab" aria-selected={view === v ? 'true' : 'false'}
            onClick={() => switchView(v)}>{{ form: 'Form', yaml: 'YAML', json: 'JSON' }[v]}</button>
        ))}
      </div>
      <form onSubmit={save} aria-label="Policy">
        {view === 'form' && (
          <>
            <Field label="Name" value={doc.name} onInput={(v) => set('name', v)} error={errors.name}
              readOnly={!creating} hint={creating ? 'letters, digits, . _ -' : 'names cannot change'} />
            <Field label="Description" value={doc.description} readOnly={readOnly}
              onInput={(v) => set('description', v)} error={errors.description} />
            <Field label="Apps" value={(doc.apps ?? []).join(', ')} readOnly={readOnly}
              hint="comma-separated; * means any app (admins only)" error={errors.apps}
              onInput={(v) => set('apps', v.split(',').map((s) => s.trim()).filter(Boolean))} />
            <Select label="Mode" value={doc.mode ?? 'enforce'} options={['enforce', 'shadow']}
              disabled={readOnly} error={errors.mode} onChange={(v) => set('mode', v)} />
            <Select label="On store failure" value={doc.on_store_failure ?? 'fail_open'}
              options={['fail_open', 'fail_closed', 'local', 'split']} disabled={readOnly}
              error={errors.on_store_failure} onChange={(v) => set('on_store_failure', v)} />
            <div class="field">
              <label>
                <input type="checkbox" checked={doc.enabled !== false} disabled={readOnly}
                  onChange={(e) => set('enabled', e.currentTarget.checked)} /> Enabled
              </label>
            </div>
            {(doc.limits ?? []).map((limit, i) => (
              <LimitForm limit={limit} index={i} errors={errors} readOnly={readOnly}
                onChange={(l) => setLimit(i, l)}
                onRemove={doc.limits.length > 1 ? () => set('limits', doc.limits.filter((_, j) => j !== i)) : null} />
            ))}
            {!readOnly && (
              <button type="button" onClick={() => set('limits', [...(doc.limits ?? []),
                newLimit('fixed_window')])}>Add a limit</button>
            )}
          </>
        )}
        {view === 'yaml' && <pre class="document" aria-label="YAML">{documentYaml(doc)}</pre>}
        {view === 'json' && (
          <div class="field">
            <label for="json-doc">JSON document</label>
            <textarea id="json-doc" rows="20" value={jsonText} readOnly={readOnly} spellcheck={false}
              onInput={(e) => setJsonText(e.currentTarget.value)} />
          </div>
        )}
        <div class="save-feedback" ref={feedback}>
          {conflict && (
            <div class="problem conflict" role="alert">
              <p>Someone else changed this policy while you were editing it
                {conflict.version ? ` (now version ${conflict.version} by ${conflict.updated_by})` : ''}.
                Your changes were not saved.</p>
              <button type="button" onClick={load}>Reload the current version</button>
            </div>
          )}
          <Problem error={error} fields={view === 'form' ? [...shownFields, ...limitFields] : []} />
          {saved && <p class="ok" role="status">{saved}</p>}
        </div>
        {!readOnly && <button type="submit">{creating ? 'Create policy' : 'Save'}</button>}
      </form>
      {stored && <SubjectInspector name={name} mayReset={!readOnly} />}
    </section>
  );
}
