// The subject inspector's words (pure, unit-tested): wait times, what a dry run means, lease ids
// as shown.

// 950 -> "950 ms", 1500 -> "1.5 s", 90000 -> "1 min 30 s", 7200000 -> "2 h". Whole
// milliseconds in; rounded up at the shown precision, so a caller who waits it is never early.
export function waitWords(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) {
    const tenths = Math.ceil(ms / 100);
    return `${tenths % 10 === 0 ? tenths / 10 : (tenths / 10).toFixed(1)} s`;
  }
  const seconds = Math.ceil(ms / 1000);
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return [h && `${h} h`, m && `${m} min`, s && `${s} s`].filter(Boolean).join(' ');
}

// One limit's (or the policy's) answer to a dry run: {allowed, retry_after_ms, never}.
export function retryWords(answer) {
  if (answer.allowed) return 'allowed now';
  if (answer.never) return 'never (more than the limit grants)';
  return `retry in ${waitWords(answer.retry_after_ms)}`;
}

// The sentence under the table: what a request of `dry_run.cost` would get now.
export function dryRunSentence(dryRun) {
  const what = `A request of cost ${dryRun.cost}`;
  const decider = `limit ${dryRun.limit_index + 1}`;
  if (dryRun.allowed) return `${what} would be allowed now.`;
  if (dryRun.never) return `${what} can never be allowed: ${decider} grants less.`;
  return `${what} would be denied; it may retry in ${waitWords(dryRun.retry_after_ms)} (${decider} decides).`;
}

// A lease id as listed: its first 8 characters and an ellipsis. `truncated`: the server sent only
// a prefix (to readers, who may not release leases).
export function shortLease(id, truncated = false) {
  return id.length > 8 || truncated ? `${id.slice(0, 8)}…` : id;
}

// The penalty box of a policy that has one (the peek's `penalty`): blocked and for how long, or
// how many strikes toward a block, and how far the escalation has gone.
export function penaltySentence(penalty) {
  const escalation = penalty.blocks > 0
    ? ` ${penalty.blocks === 1 ? '1 block' : `${penalty.blocks} blocks`} so far: the next lasts longer.`
    : '';
  if (penalty.blocked) {
    return `Blocked for ${waitWords(penalty.blocked_for_ms)}: every request is denied, whatever the budget.${escalation}`;
  }
  return `Not blocked; ${penalty.strikes} of ${penalty.after} denials toward a block.${escalation}`;
}
