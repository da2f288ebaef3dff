// Small building blocks shared by the views. Everything shown is a text node: Preact escapes
// strings, and nothing here sets HTML (no dangerouslySetInnerHTML anywhere in the console).
import { useId } from 'preact/hooks';

export function Field({ label, value, onInput, error, type = 'text', hint, ...rest }) {
  const id = useId();
  return (
    <div class={'field' + (error ? ' invalid' : '')}>
      <label for={id}>{label}</label>
      <input id={id} type={type} value={value ?? ''} aria-invalid={error ? 'true' : undefined}
        aria-describedby={error ? id + '-error' : undefined}
        onInput={(e) => onInput?.(e.currentTarget.value)} {...rest} />
      {hint && <small class="hint">{hint}</small>}
      {error && <small class="error" id={id + '-error'} role="alert">{error}</small>}
    </div>
  );
}

export function Select({ label, value, options, onChange, error, ...rest }) {
  const id = useId();
  return (
    <div class={'field' + (error ? ' invalid' : '')}>
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value)} {...rest}>
        {options.map((o) => (
          <option value={o}>{o}</option>
        ))}
      </select>
      {error && <small class="error" role="alert">{error}</small>}
    </div>
  );
}

// A question asked in place before a change: what it will do, *yes* and Cancel (focused, so a
// stray Enter changes nothing).
export function Confirm({ label, question, yes, onYes, onCancel }) {
  return (
    <span class="confirm" role="group" aria-label={label}>
      {question}
      <button type="button" class="danger" onClick={onYes}>{yes}</button>
      <button type="button" onClick={onCancel} autofocus>Cancel</button>
    </span>
  );
}

// A failed call: its detail, and the field errors not shown beside a field of the form.
export function Problem({ error, fields = [] }) {
  if (!error) return null;
  const rest = (error.problem?.errors ?? []).filter((e) => !fields.includes(e.field));
  return (
    <div class="problem" role="alert" tabIndex={-1}>
      <p>{error.message}</p>
      {rest.length > 0 && (
        <ul>
          {rest.map((e) => (
            <li>{e.field ? `${e.field}: ${e.message}` : e.message}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function formatTime(micros) {
  if (!micros) return '';
  return new Date(micros / 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}
