// Whether to show edit controls: the same rule as the server's auth::authorize_policy (owner of
// every app the policy lists; "*" is admins only). The server still decides every write.
export function canEdit(user, apps) {
  if (user?.admin) return true;
  if (!apps || apps.length === 0 || apps.includes('*')) return false;
  return apps.every((app) => user?.roles?.[app] === 'owner');
}

// Whether the user may create policies for `app` at all.
export function canCreateFor(user, app) {
  return canEdit(user, [app]);
}
